// SPDX-License-Identifier: Apache-2.0
/* What libtrainscope.so offers its callers across header versions (trainscope.h's ABI
 * rule): a program built against the v1 header (tests/abi/v1/caller.c) gets its 20 and 2
 * fields, in place, and nothing written past them; one built against the current header
 * with a smaller size, or a bigger (newer) struct, gets what its size holds. Each test
 * runs in a child: the library keeps one state per process. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi/abi_caller.h"
#include "cudefs.h"
#include "trainscope.h"
#include "common/tests/testutil.h"

/* What the device child does, chosen so that a field read at the wrong place shows. */
#define LAUNCHES 7
#define SAMPLE_N 5
#define DEVICE_NS_CALLS 3
#define STR(x) #x
#define XSTR(x) STR(x)

/* v1's field numbers of the two device counters the device child sets. */
#define V1_LAUNCHES 0
#define V1_SAMPLE_N 8

/* In a child: a failed check says which and ends the child with 1. */
#define CHECK(c)                                                                            \
	do {                                                                                \
		if (!(c)) {                                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
			_exit(1);                                                           \
		}                                                                           \
	} while (0)

typedef cudaError_t (*launch_fn)(const void *, ts_dim3, ts_dim3, void **, size_t, CUstream);

struct lib {
	void *h;
	int (*dev_sized)(struct trainscope_device_counters *, size_t);
	int (*ctr_sized)(struct trainscope_counters *, size_t);
	void (*device_ns)(uint64_t);
};

/* Opens a test double by name from build/test/double/, into the global scope where the
 * library's hooks look for the vendor's libraries. */
static void open_double(const char *name)
{
	char path[4200];

	CHECK(ts_test_double_path(name, path, sizeof(path)) == 0);
	if (!dlopen(path, RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		_exit(1);
	}
}

/* In a child: the library as a program gets it, with no ring folder (every record is
 * dropped and counted). With device, the CUDA doubles are loaded first and the hooked
 * runtime launches LAUNCHES kernels with sampling at 1 in SAMPLE_N; no step ends, so
 * sampling does not adapt and SAMPLE_N stays. */
static void load(struct lib *l, int device)
{
	const char *path = ts_test_lib();

	CHECK(path != NULL);
	unsetenv("TRAINSCOPE_RING_DIR");
	setenv("TRAINSCOPE_SAMPLE_N", XSTR(SAMPLE_N), 1);
	if (device) {
		open_double("libcuda.so.1");
		open_double("libcudart.so.13");
	}
	if (!(l->h = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		_exit(1);
	}
	*(void **)&l->dev_sized = dlsym(l->h, "trainscope_get_device_counters_sized");
	*(void **)&l->ctr_sized = dlsym(l->h, "trainscope_get_counters_sized");
	*(void **)&l->device_ns = dlsym(l->h, "trainscope_compute_device_ns");
	CHECK(l->dev_sized && l->ctr_sized && l->device_ns);
	for (int i = 0; i < DEVICE_NS_CALLS; i++)
		l->device_ns(1000);
	if (device) {
		launch_fn launch;
		ts_dim3 one = { 1, 1, 1 };

		*(void **)&launch = dlsym(l->h, "cudaLaunchKernel");
		CHECK(launch != NULL);
		for (int i = 0; i < LAUNCHES; i++)
			CHECK(launch(NULL, one, one, NULL, 0, NULL) == 0);
	}
}

/* Runs fn in a child and fails unless it exits 0. */
static void in_child(void (*fn)(void))
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* No field of v1's struct left as poison: the library wrote every one. */
static int all_written(const uint64_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (w[i] == ABI_POISON)
			return 0;
	return 1;
}

static void v1_counters(void)
{
	struct abi_v1_read r;
	struct lib l;

	load(&l, 0);
	CHECK(abi_v1_read(l.h, &r) == 0);
	CHECK(!r.ctr_overrun && !r.dev_overrun);
	CHECK(r.ctr[0] == 0 && r.ctr[1] == DEVICE_NS_CALLS); /* written, dropped: no ring */
	CHECK(all_written(r.dev, 20));
	for (int i = 0; i < 20; i++) /* no device was ever used */
		CHECK(r.dev[i] == 0);
}

/* A v1 program against this library: the calls it knows, nothing written past its
 * 2-field struct, the values where v1 has them. */
static void test_v1_caller_counters(void **state)
{
	(void)state;
	in_child(v1_counters);
}

static void v1_device_counters(void)
{
	struct trainscope_device_counters now;
	struct abi_v1_read r;
	struct lib l;

	load(&l, 1);
	CHECK(abi_v1_read(l.h, &r) == 0);
	CHECK(!r.dev_overrun && !r.ctr_overrun);
	CHECK(all_written(r.dev, 20));
	CHECK(r.dev[V1_LAUNCHES] == LAUNCHES);
	CHECK(r.dev[V1_SAMPLE_N] == SAMPLE_N);
	/* the current struct read in full: v1's fields are the same fields */
	CHECK(l.dev_sized(&now, sizeof(now)) == (int)sizeof(now));
	CHECK(now.launches == r.dev[V1_LAUNCHES] && now.sample_n == r.dev[V1_SAMPLE_N]);
	CHECK(now.api_calls == r.dev[1] && now.mem_live == r.dev[9] && now.gemms == r.dev[11]);
	CHECK(now.api_calls == 0 && now.mem_live == 0 && now.hangs == 0);
}

/* The same with a device: the launches and the sampling rate, each in its v1 place. */
static void test_v1_caller_device_counters(void **state)
{
	(void)state;
	in_child(v1_device_counters);
}

/* The current struct, a tail behind it, seen as words and as bytes. */
union dev_buf {
	struct {
		struct trainscope_device_counters c;
		uint64_t tail[8];
	} s;
	uint64_t w[sizeof(struct trainscope_device_counters) / 8 + 8];
	unsigned char b[sizeof(struct trainscope_device_counters) + 64];
};

static void sized_smaller(void)
{
	const size_t v0 = 13 * sizeof(uint64_t); /* the first header's 13-field struct */
	const int known = (int)sizeof(struct trainscope_device_counters);
	union dev_buf u;
	struct lib l;

	load(&l, 1);
	memset(&u, (unsigned char)ABI_POISON, sizeof(u));
	CHECK(l.dev_sized(&u.s.c, v0) == known);
	CHECK(all_written(u.w, 13));
	CHECK(u.w[0] == LAUNCHES && u.w[8] == SAMPLE_N);
	for (size_t i = v0; i < sizeof(u.b); i++)
		CHECK(u.b[i] == (unsigned char)ABI_POISON);
	/* a size that ends inside a field: the bytes below it, none at or past it */
	memset(&u, (unsigned char)ABI_POISON, sizeof(u));
	CHECK(l.dev_sized(&u.s.c, v0 + 3) == known);
	CHECK(u.b[v0] == 0 && u.b[v0 + 2] == 0); /* graphs: 0 */
	for (size_t i = v0 + 3; i < sizeof(u.b); i++)
		CHECK(u.b[i] == (unsigned char)ABI_POISON);
	/* size 0 writes nothing; NULL tells the library's size, or fails with a size */
	memset(&u, (unsigned char)ABI_POISON, sizeof(u));
	CHECK(l.dev_sized(&u.s.c, 0) == known);
	for (size_t i = 0; i < sizeof(u.b); i++)
		CHECK(u.b[i] == (unsigned char)ABI_POISON);
	CHECK(l.dev_sized(NULL, 0) == known);
	CHECK(l.dev_sized(NULL, 8) == -EINVAL);

	struct {
		struct trainscope_counters c;
		uint64_t tail[2];
	} ctr;
	memset(&ctr, (unsigned char)ABI_POISON, sizeof(ctr));
	CHECK(l.ctr_sized(&ctr.c, sizeof(uint64_t)) == (int)sizeof(ctr.c));
	CHECK(ctr.c.written == 0 && ctr.c.dropped == ABI_POISON);
	CHECK(ctr.tail[0] == ABI_POISON && ctr.tail[1] == ABI_POISON);
	CHECK(l.ctr_sized(NULL, 0) == (int)sizeof(ctr.c));
	CHECK(l.ctr_sized(NULL, 1) == -EINVAL);
}

/* A caller of the current header that passes less than its struct (an older struct, or
 * a ctypes buffer of fewer slots): the fields that fit, no byte at or past the size. */
static void test_sized_smaller(void **state)
{
	(void)state;
	in_child(sized_smaller);
}

static void sized_bigger(void)
{
	const size_t known = sizeof(struct trainscope_device_counters);
	union dev_buf u;
	struct lib l;

	load(&l, 1);
	memset(&u, (unsigned char)ABI_POISON, sizeof(u));
	/* a newer caller's struct, 4 fields longer than this library's */
	CHECK(l.dev_sized(&u.s.c, known + 32) == (int)known);
	CHECK(u.s.c.launches == LAUNCHES && u.s.c.sample_n == SAMPLE_N);
	CHECK(all_written(u.w, known / 8));
	for (size_t i = 0; i < 4; i++) /* the fields this library does not know: zeroed */
		CHECK(u.s.tail[i] == 0);
	for (size_t i = 4; i < 8; i++) /* past the caller's size: untouched */
		CHECK(u.s.tail[i] == ABI_POISON);

	struct {
		struct trainscope_counters c;
		uint64_t tail[2];
	} ctr;
	memset(&ctr, (unsigned char)ABI_POISON, sizeof(ctr));
	CHECK(l.ctr_sized(&ctr.c, sizeof(ctr.c) + 8) == (int)sizeof(ctr.c));
	/* at least: the poller may have dropped a sample's record too */
	CHECK(ctr.c.written == 0 && ctr.c.dropped >= DEVICE_NS_CALLS);
	CHECK(ctr.c.dropped != ABI_POISON && ctr.tail[0] == 0 && ctr.tail[1] == ABI_POISON);
}

/* A caller with a newer, bigger struct than the library's: what the library knows, zeroes
 * for the rest of its size, nothing past it. */
static void test_sized_bigger(void **state)
{
	(void)state;
	in_child(sized_bigger);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v1_caller_counters),
		cmocka_unit_test(test_v1_caller_device_counters),
		cmocka_unit_test(test_sized_smaller),
		cmocka_unit_test(test_sized_bigger),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
