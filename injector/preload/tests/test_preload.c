// SPDX-License-Identifier: Apache-2.0
/* The real libtrainscope.so, loaded as a program would get it: records land in a ring
 * file of the ring folder; without a folder or with a full ring every call is counted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ring.h"
#include "trainscope.h"
#include "common/tests/testutil.h"

struct api {
	void *h;
	void (*step_begin)(uint64_t);
	void (*step_end)(uint64_t);
	void (*region_begin)(enum trainscope_region);
	void (*region_end)(enum trainscope_region);
	int (*get_counters)(struct trainscope_counters *, size_t);
};

static void load(struct api *a)
{
	a->h = dlopen(ts_test_lib_path(), RTLD_NOW | RTLD_LOCAL);
	if (!a->h)
		fail_msg("dlopen %s: %s", ts_test_lib_path(), dlerror());
	*(void **)&a->step_begin = dlsym(a->h, "trainscope_step_begin");
	*(void **)&a->step_end = dlsym(a->h, "trainscope_step_end");
	*(void **)&a->region_begin = dlsym(a->h, "trainscope_region_begin");
	*(void **)&a->region_end = dlsym(a->h, "trainscope_region_end");
	*(void **)&a->get_counters = dlsym(a->h, "trainscope_get_counters_sized");
	assert_non_null(a->get_counters);
	assert_non_null(a->region_end);
}

/* Runs in a child: the library keeps one state per process. */
static void child_records(const char *dir)
{
	struct trainscope_counters c;
	struct api a;

	setenv("TRAINSCOPE_RING_DIR", dir, 1);
	setenv("TRAINSCOPE_RING_SLOTS", "64", 1);
	setenv("RANK", "2", 1);
	setenv("WORLD_SIZE", "4", 1);
	setenv("TRAINSCOPE_JOB", "unit", 1);
	umask(077); /* a strict umask: the ring's mode must not depend on it */
	load(&a);
	for (uint64_t s = 0; s < 100; s++) {
		a.step_begin(s);
		a.region_begin(TRAINSCOPE_REGION_COMPUTE);
		a.region_end(TRAINSCOPE_REGION_COMPUTE);
		a.step_end(s);
	}
	a.region_end(TRAINSCOPE_REGION_DATALOADER); /* end without begin: ignored */
	a.get_counters(&c, sizeof(c));
	/* nobody drains: 64 records fit, the other 236 are counted */
	if (c.written != 64 || c.dropped != 236)
		_exit(10);
	exit(0); /* runs the library's destructor, which marks the ring closed */
}

/* A process that records into a ring in dir and exits; its pid. */
static pid_t record_in(const char *dir)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		child_records(dir);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	return pid;
}

static unsigned file_mode(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_mode & 07777;
}

static void test_records_reach_ring(void **state)
{
	char dir[] = "/tmp/ts-preload-XXXXXX", path[4096];
	struct ts_ring *r;
	struct ts_rec rec;
	pid_t pid;

	(void)state;
	assert_non_null(mkdtemp(dir));
	pid = record_in(dir);
	assert_int_equal(ts_test_find(dir, TS_RING_SUFFIX, path, sizeof(path)), 1);
	assert_int_equal(file_mode(path), 0600); /* a plain folder: the producer's uid only */
	assert_int_equal(ts_ring_open(path, &r), 0);
	assert_int_equal(r->id.rank, 2);
	assert_int_equal(r->id.world_size, 4);
	assert_string_equal(r->id.job, "unit");
	assert_int_equal(r->id.pid, pid);
	/* the library's stat is glibc's old __xstat (glibc_compat.h): same answer */
	assert_int_equal(r->id.cgroup_id, ts_cgroup_id());
	assert_int_equal(atomic_load(&r->closed), 1);
	assert_int_equal(atomic_load(&r->dropped), 236);
	assert_int_equal(ts_ring_pop(r, &rec), 1);
	assert_int_equal(rec.type, TS_REC_STEP_BEGIN);
	assert_int_equal(ts_ring_pop(r, &rec), 1);
	assert_int_equal(rec.type, TS_REC_REGION);
	assert_int_equal(rec.kind, TRAINSCOPE_REGION_COMPUTE);
	assert_int_equal(ts_ring_producer_alive(path), 0);
	ts_ring_unmap(r);
	unlink(path);
	rmdir(dir);
}

/* The Kubernetes ring folder: setgid, sticky, world-writable, the relay's group. Whatever
 * the trainer's uid, the folder's group reads and writes its ring. */
static void test_ring_group_rw_in_setgid_folder(void **state)
{
	char dir[] = "/tmp/ts-preload-XXXXXX", path[4096];

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 03777), 0);
	record_in(dir);
	assert_int_equal(ts_test_find(dir, TS_RING_SUFFIX, path, sizeof(path)), 1);
	assert_int_equal(file_mode(path), 0660);
	assert_int_equal(ts_test_rmdir(dir), 0);
}

static void test_no_ring_folder_counts(void **state)
{
	int status;
	pid_t pid = fork();

	(void)state;
	if (pid == 0) {
		struct trainscope_counters c;
		struct api a;
		unsetenv("TRAINSCOPE_RING_DIR");
		load(&a);
		for (int i = 0; i < 10; i++)
			a.step_end((uint64_t)i);
		a.get_counters(&c, sizeof(c));
		_exit(c.written == 0 && c.dropped == 10 ? 0 : 11);
	}
	waitpid(pid, &status, 0);
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* <folder of the library>/$PLATFORM/libtrainscope.so, the literal token the webhook sets */
static const char *platform_preload(void)
{
	static char env[4200];
	const char *lib = ts_test_lib_path(), *slash = strrchr(lib, '/');

	snprintf(env, sizeof(env), "LD_PRELOAD=%.*s/$PLATFORM/libtrainscope.so", (int)(slash - lib),
		 lib);
	return env;
}

/* build/test/plat/hello-<libc>, beside this test; NULL when it was not built. */
static const char *hello(const char *libc)
{
	static char path[4200];
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return NULL;
	self[n] = 0;
	*strrchr(self, '/') = 0;
	snprintf(path, sizeof(path), "%s/plat/hello-%s", self, libc);
	return access(path, X_OK) == 0 ? path : NULL;
}

static void test_platform_token_glibc(void **state)
{
	char out[256], *env[] = { (char *)platform_preload(), NULL };
	const char *prog = hello("glibc");

	(void)state;
	assert_non_null(prog);
	assert_int_equal(ts_test_spawn((char *[]){ (char *)prog, NULL }, NULL, out, sizeof(out)), 0);
	assert_string_equal(out, "hello preloaded=no\n");
	/* glibc expands $PLATFORM and finds the link to the library */
	assert_int_equal(ts_test_spawn((char *[]){ (char *)prog, NULL }, env, out, sizeof(out)), 0);
	assert_string_equal(out, "hello preloaded=yes\n");
}

static void test_platform_token_musl(void **state)
{
	char out[1024], direct[4200], *env[] = { (char *)platform_preload(), NULL };
	char *denv[] = { direct, NULL };
	const char *prog = hello("musl");

	(void)state;
	if (!prog) {
		print_message("musl-gcc not installed (Debian package musl-tools): musl test "
			      "skipped\n");
		skip();
	}
	assert_int_equal(ts_test_spawn((char *[]){ (char *)prog, NULL }, env, out, sizeof(out)), 0);
	assert_string_equal(out, "hello preloaded=no\n");
	/* what the token avoids: musl loads the glibc library and cannot start the program */
	snprintf(direct, sizeof(direct), "LD_PRELOAD=%s", ts_test_lib_path());
	assert_int_equal(ts_test_spawn((char *[]){ "sh", "-c", "exec \"$0\" 2>&1", (char *)prog,
						   NULL }, denv, out, sizeof(out)), 127);
	assert_non_null(strstr(out, "Error relocating"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records_reach_ring),
		cmocka_unit_test(test_ring_group_rw_in_setgid_folder),
		cmocka_unit_test(test_no_ring_folder_counts),
		cmocka_unit_test(test_platform_token_glibc),
		cmocka_unit_test(test_platform_token_musl),
	};
	return cmocka_run_group_tests_name("preload library", tests, NULL, NULL);
}
