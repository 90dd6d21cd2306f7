// SPDX-License-Identifier: Apache-2.0
/* The Python shim (injector/preload/python) in real python3 processes under the preload:
 * a program that never imports torch runs exactly as without it and leaves no ring; a
 * loop over the test double of torch (tests/shim/torch), and of torch_npu beside it,
 * gives steps, data loading, GC, process groups, a stack dump and the uncaught
 * exception; TRAINSCOPE_STEP_FUNC gives steps without torch. Run from the repository root (make unit does). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ring.h"
#include "trainscope.h"
#include "common/tests/testutil.h"

#define SHIM "injector/preload/python"
#define FAKES "injector/preload/tests/shim"

static char out[65536];

struct ring_seen {
	int step_end, dataloader, gc, groups, exceptions;
};

/* Runs python3 script under the preload and the shim; ring files go to dir. */
static int python(const char *script, const char *dir, char *const *extra)
{
	static char preload[4200], ring[4200], dump[64];
	char *env[16] = { preload, ring, dump, "PYTHONPATH=" SHIM ":" FAKES, "RANK=0",
			  "WORLD_SIZE=4", "TRAINSCOPE_JOB=shim" };
	int n = 7;

	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", ts_test_lib_path());
	snprintf(ring, sizeof(ring), "TRAINSCOPE_RING_DIR=%s", dir);
	snprintf(dump, sizeof(dump), "TRAINSCOPE_DUMP_SIGNAL=%d", SIGRTMIN + 5);
	for (; extra && *extra && n < 15; extra++)
		env[n++] = *extra;
	return ts_test_spawn((char *[]){ "python3", (char *)script, NULL }, env, out, sizeof(out));
}

static struct ring_seen read_ring(const char *dir, char *path, size_t n)
{
	struct ring_seen s = { 0 };
	struct ts_ring *r;
	struct ts_rec rec;

	assert_int_equal(ts_test_find(dir, TS_RING_SUFFIX, path, n), 1);
	assert_int_equal(ts_ring_open(path, &r), 0);
	assert_int_equal(r->id.rank, 0);
	while (ts_ring_pop(r, &rec)) {
		s.step_end += rec.type == TS_REC_STEP_END;
		s.groups += rec.type == TS_REC_GROUPS;
		s.exceptions += rec.type == TS_REC_EXCEPTION;
		s.dataloader += rec.type == TS_REC_REGION && rec.kind == TRAINSCOPE_REGION_DATALOADER;
		s.gc += rec.type == TS_REC_REGION && rec.kind == TRAINSCOPE_REGION_GC;
	}
	ts_ring_unmap(r);
	return s;
}

/* The text of the file beside the ring with this suffix. */
static const char *side(const char *ring_path, const char *suffix)
{
	static char text[16384];
	char path[4200];
	size_t len = strlen(ring_path) - strlen(TS_RING_SUFFIX), got;
	FILE *f;

	snprintf(path, sizeof(path), "%.*s%s", (int)len, ring_path, suffix);
	f = fopen(path, "r");
	if (!f)
		fail_msg("no %s file beside the ring", suffix);
	got = fread(text, 1, sizeof(text) - 1, f);
	text[got] = 0;
	fclose(f);
	return text;
}

/* The permission bits of the file beside the ring with this suffix. */
static unsigned side_mode(const char *ring_path, const char *suffix)
{
	char path[4200];
	size_t len = strlen(ring_path) - strlen(TS_RING_SUFFIX);
	struct stat st;

	snprintf(path, sizeof(path), "%.*s%s", (int)len, ring_path, suffix);
	if (stat(path, &st))
		fail_msg("no %s file beside the ring", suffix);
	return st.st_mode & 07777;
}

static void test_plain_program_unchanged(void **state)
{
	char dir[] = "/tmp/ts-shim-XXXXXX", path[4200], without[sizeof(out)];
	char *bare[] = { "LD_PRELOAD=", "PYTHONPATH=", NULL }, *launcher[] = { "RANK=", NULL };
	int rc;

	(void)state;
	assert_non_null(mkdtemp(dir));
	rc = ts_test_spawn((char *[]){ "python3", FAKES "/plain.py", NULL }, bare, out, sizeof(out));
	assert_int_equal(rc, 1);
	memcpy(without, out, sizeof(out));
	assert_non_null(strstr(without, "\"torch\": false"));
	/* without RANK, like torchrun's own process */
	assert_int_equal(python(FAKES "/plain.py", dir, launcher), 1);
	assert_string_equal(out, without);
	/* the shim never called the library, not even for the uncaught exception: no ring
	 * for a process that is not a rank */
	assert_int_equal(ts_test_find(dir, TS_RING_SUFFIX, path, sizeof(path)), 0);
	assert_int_equal(ts_test_rmdir(dir), 0);
}

/* A loop over the fake torch (script): steps, data loading, GC, process groups (group,
 * the second one's members), a stack dump and the uncaught exception (exc). */
static void fake_loop(const char *script, const char *group, const char *exc)
{
	char dir[] = "/tmp/ts-shim-XXXXXX", path[4200];
	struct ring_seen s;

	assert_non_null(mkdtemp(dir));
	/* the uncaught exception still ends the program as Python would: status 1 */
	assert_int_equal(python(script, dir, NULL), 1);
	assert_non_null(strstr(out, "trained"));
	s = read_ring(dir, path, sizeof(path));
	assert_int_equal(s.step_end, 5);
	assert_int_equal(s.dataloader, 6); /* 5 batches and the StopIteration */
	assert_true(s.gc >= 4);            /* gc.collect() in steps 1..4 */
	assert_true(s.groups >= 1);
	assert_int_equal(s.exceptions, 1);
	assert_non_null(strstr(side(path, TS_SIDE_GROUPS), "world:0,1,2,3"));
	assert_non_null(strstr(side(path, TS_SIDE_GROUPS), group));
	assert_non_null(strstr(side(path, TS_SIDE_EXC), exc));
	assert_non_null(strstr(side(path, TS_SIDE_STACKS), strrchr(script, '/') + 1));
	/* a plain folder: the ring and its side files are the process's uid's alone */
	assert_int_equal(side_mode(path, TS_RING_SUFFIX), 0600);
	assert_int_equal(side_mode(path, TS_SIDE_STACKS), 0600);
	assert_int_equal(side_mode(path, TS_SIDE_EXC), 0600);
	assert_int_equal(side_mode(path, TS_SIDE_GROUPS), 0600);
	assert_int_equal(ts_test_rmdir(dir), 0);
}

static void test_fake_torch_loop(void **state)
{
	(void)state;
	fake_loop(FAKES "/train_fake.py", "group1:0,1", "the fake model diverged");
}

/* A launcher that sets no rank (mp.spawn, Lightning's): the ring is made unranked by a
 * record before init_process_group, which then tells the rank (header and an IDENT
 * record); steps through AMP's GradScaler and DeepSpeed's engine count once each,
 * skipped ones too. */
static void test_late_rank_framework_steps(void **state)
{
	char dir[] = "/tmp/ts-shim-XXXXXX", path[4200];
	char *unranked[] = { "RANK=", "WORLD_SIZE=", "LOCAL_RANK=", NULL };
	int steps = 0, idents = 0, first_ident = -1, first_step = -1, i = 0;
	struct ts_ring *r;
	struct ts_rec rec;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(python(FAKES "/amp_train.py", dir, unranked), 0);
	assert_non_null(strstr(out, "trained"));
	assert_int_equal(ts_test_find(dir, TS_RING_SUFFIX, path, sizeof(path)), 1);
	assert_int_equal(ts_ring_open(path, &r), 0);
	assert_int_equal(r->id.rank, 2);
	assert_int_equal(r->id.world_size, 3);
	for (; ts_ring_pop(r, &rec); i++) {
		if (rec.type == TS_REC_STEP_END && first_step < 0)
			first_step = i;
		steps += rec.type == TS_REC_STEP_END;
		if (rec.type == TS_REC_IDENT) {
			idents++;
			first_ident = i;
			assert_int_equal(rec.kind, TS_IDENT_PROGRAM);
			assert_int_equal(rec.ident.rank, 2);
			assert_int_equal(rec.ident.world, 3);
		}
	}
	ts_ring_unmap(r);
	assert_int_equal(idents, 1);
	assert_true(first_ident >= 0 && first_ident < first_step);
	assert_int_equal(steps, 4 + 6 + 3);
	assert_int_equal(ts_test_rmdir(dir), 0);
}

/* torch_npu (its stand-in patches torch as the real one does; groups on HCCL): the same
 * steps, data loading, GC, groups, stacks and exception as a CUDA program. */
static void test_fake_torch_npu_loop(void **state)
{
	(void)state;
	fake_loop(FAKES "/train_npu.py", "group1:0,2", "the fake NPU model diverged");
}

/* The Kubernetes ring folder (setgid, sticky, world-writable, the relay's group): the
 * relay reads the side files whatever the trainer's uid and umask. */
static void test_side_files_group_rw(void **state)
{
	char dir[] = "/tmp/ts-shim-XXXXXX", path[4200];
	mode_t old;
	int rc;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 03777), 0);
	old = umask(077);
	rc = python(FAKES "/train_fake.py", dir, NULL);
	umask(old);
	assert_int_equal(rc, 1);
	assert_int_equal(read_ring(dir, path, sizeof(path)).step_end, 5);
	assert_int_equal(side_mode(path, TS_RING_SUFFIX), 0660);
	assert_int_equal(side_mode(path, TS_SIDE_STACKS), 0660);
	assert_int_equal(side_mode(path, TS_SIDE_EXC), 0660);
	assert_int_equal(side_mode(path, TS_SIDE_GROUPS), 0660);
	assert_int_equal(ts_test_rmdir(dir), 0);
}

/* The shim without the library in the process (not preloaded: a musl Python skips the
 * glibc preload; or a Python without ctypes): it loads, does nothing, says nothing on
 * stdout or stderr, and leaves no ring. */
static void test_no_library_silent(void **state)
{
	char dir[] = "/tmp/ts-shim-XXXXXX", ring[4200], path[4200];
	char *nolib[] = { "LD_PRELOAD=", "PYTHONPATH=" SHIM ":" FAKES, ring, "RANK=0", NULL };
	char *noctypes[] = { "LD_PRELOAD=", "PYTHONPATH=" FAKES "/noctypes:" SHIM ":" FAKES, ring,
			     "RANK=0", NULL };
	char *argv[] = { "sh", "-c", "exec python3 \"$0\" 2>&1", FAKES "/nolib.py", NULL };

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(ring, sizeof(ring), "TRAINSCOPE_RING_DIR=%s", dir);
	assert_int_equal(ts_test_spawn(argv, nolib, out, sizeof(out)), 0);
	assert_string_equal(out, "shim loaded=True hooks=0\n");
	assert_int_equal(ts_test_spawn(argv, noctypes, out, sizeof(out)), 0);
	assert_string_equal(out, "shim loaded=True hooks=0\n");
	assert_int_equal(ts_test_find(dir, TS_RING_SUFFIX, path, sizeof(path)), 0);
	assert_int_equal(ts_test_rmdir(dir), 0);
}

static void test_step_func(void **state)
{
	char dir[] = "/tmp/ts-shim-XXXXXX", path[4200];
	char *env[] = { "TRAINSCOPE_STEP_FUNC=workmod@@train_step", NULL };

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(python(FAKES "/stepfunc.py", dir, env), 0);
	assert_string_equal(out, "3\n");
	assert_int_equal(read_ring(dir, path, sizeof(path)).step_end, 3);
	assert_int_equal(ts_test_rmdir(dir), 0);
	/* with torch's optimizer and GradScaler in the same loop: still the function's 3 */
	assert_non_null(mkdtemp(strcpy(dir, "/tmp/ts-shim-XXXXXX")));
	assert_int_equal(python(FAKES "/stepfunc_amp.py", dir, env), 0);
	assert_string_equal(out, "3\n");
	assert_int_equal(read_ring(dir, path, sizeof(path)).step_end, 3);
	assert_int_equal(ts_test_rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_program_unchanged),
		cmocka_unit_test(test_fake_torch_loop),
		cmocka_unit_test(test_fake_torch_npu_loop),
		cmocka_unit_test(test_late_rank_framework_steps),
		cmocka_unit_test(test_side_files_group_rw),
		cmocka_unit_test(test_step_func),
		cmocka_unit_test(test_no_library_silent),
	};
	return cmocka_run_group_tests_name("python shim", tests, NULL, NULL);
}
