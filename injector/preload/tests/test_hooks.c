// SPDX-License-Identifier: Apache-2.0
/* The device hooks of libtrainscope.so against the CUDA/NCCL/cuBLAS test doubles (no GPU
 * here): each test runs one scenario of the hookdrive program with the library preloaded
 * and checks what it printed. The doubles' device is a virtual clock (1 ms a kernel), so
 * device times are exact. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ident.h"
#include "common/tests/testutil.h"

#define MS 1000000ull

struct out {
	char text[65536];
};

/* Runs PROG SCENARIO (hookdrive: CUDA, npudrive: the NPU) under the preload with extra
 * "NAME=value" settings, no launcher's rank variable inherited (a make test run under
 * srun or mpirun sees its own); fails the test unless it exits 0. */
static void run_prog(const char *prog, const char *scenario, char *const *extra, struct out *o)
{
	char drv[4096], dir[] = "/tmp/ts-hooks-XXXXXX", preload[4200], ring[64], unset[24][48];
	char *env[48] = { preload, ring, "TRAINSCOPE_RING_SLOTS=65536", "TRAINSCOPE_POLL_MS=1" };
	int n = 4, u = 0, status;

	assert_int_equal(ts_test_double_path(prog, drv, sizeof(drv)), 0);
	assert_non_null(mkdtemp(dir));
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", ts_test_lib_path());
	snprintf(ring, sizeof(ring), "TRAINSCOPE_RING_DIR=%s", dir);
	for (const struct ts_rank_source *s = ts_rank_sources; s->rank && u + 3 <= 24; s++) {
		const char *names[] = { s->rank, s->world, s->local };

		for (int i = 0; i < 3; i++) { /* NAME=: unset in the child */
			snprintf(unset[u], sizeof(unset[u]), "%s=", names[i]);
			env[n++] = unset[u++];
		}
	}
	bool every_set = false;
	for (; extra && *extra && n < 46; extra++) {
		every_set |= !strncmp(*extra, "TRAINSCOPE_DEVICE_EVERY=", 24);
		env[n++] = *extra;
	}
	/* these tests count the device's events step by step: every step timed, unless a
	 * test says otherwise (the default, every other step: test_device_every) */
	if (!every_set)
		env[n++] = "TRAINSCOPE_DEVICE_EVERY=1";
	status = ts_test_spawn((char *[]){ drv, (char *)scenario, NULL }, env, o->text,
			       sizeof(o->text));
	assert_int_equal(ts_test_rmdir(dir), 0);
	if (status != 0)
		fail_msg("%s %s failed (status %d); it printed:\n%s", prog, scenario, status,
			 o->text);
}

static void run(const char *scenario, char *const *extra, struct out *o)
{
	run_prog("hookdrive", scenario, extra, o);
}

static uint64_t val(const struct out *o, const char *key)
{
	size_t k = strlen(key);

	for (const char *p = o->text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, k) && p[k] == ' ')
			return strtoull(p + k + 1, NULL, 10);
	fail_msg("the driver printed no %s:\n%s", key, o->text);
	return 0;
}

static uint64_t vali(const struct out *o, const char *what, int i, const char *field)
{
	char key[128];

	snprintf(key, sizeof(key), "%s.%d.%s", what, i, field);
	return val(o, key);
}

static struct out o;

/* __cudaLaunchKernel(_ptsz), cudaLaunchKernel, and the driver's cuLaunchKernel(Ex) from
 * dlsym and cuGetProcAddress: each launch counted once, device time per step exact. */
static void test_dispatch(void **state)
{
	(void)state;
	run("dispatch", NULL, &o);
	assert_int_equal(val(&o, "dbl.launches"), 100);
	assert_int_equal(val(&o, "ts.launches"), 100);
	assert_int_equal(val(&o, "ring.step_ctr_launches"), 100);
	/* 10 launches a step, far under TS_TICK_MANY: each clocked, no step without host time
	 * (one in 8 would leave about a quarter of them with none) */
	assert_int_equal(val(&o, "ring.step_ctr_unclocked"), 0);
	assert_int_equal(val(&o, "per_thread_stream_launches"), 20);
	assert_int_equal(val(&o, "ring.gpu_steps"), 10);
	/* stream A 6 kernels, the per-thread stream 2, stream B 2: 10 ms a step */
	for (int i = 0; i < 10; i++) {
		assert_int_equal(vali(&o, "gpu_step", i, "compute_ns"), 10 * MS);
		assert_int_equal(vali(&o, "gpu_step", i, "comm_ns"), 0);
	}
	assert_int_equal(val(&o, "ts.segments"), 30);
}

/* TRAINSCOPE_DEVICE_EVERY=2 (the default): the same launches, each counted, but the
 * device timed on one step of each pair only; another step's GPU_STEP says it was not
 * timed (its 0 is no measure). */
static void test_device_every(void **state)
{
	char *env[] = { "TRAINSCOPE_DEVICE_EVERY=2", NULL };

	(void)state;
	run("dispatch", env, &o);
	assert_int_equal(val(&o, "ts.launches"), 100);
	assert_int_equal(val(&o, "ring.step_ctr_launches"), 100);
	assert_int_equal(val(&o, "ring.gpu_steps"), 10);
	for (int i = 0; i < 10; i++) {
		/* one of each pair, hashed: steps 0, 3, 4, 6 and 9 (rec_gemms.py timed_step) */
		bool timed = i == 0 || i == 3 || i == 4 || i == 6 || i == 9;
		assert_int_equal(vali(&o, "gpu_step", i, "untimed"), !timed);
		assert_int_equal(vali(&o, "gpu_step", i, "compute_ns"), timed ? 10 * MS : 0);
	}
	assert_int_equal(val(&o, "ts.segments"), 5 * 3);
	assert_int_equal(val(&o, "ts.seg_untimed"), 0);
	/* the default (the variable unset or empty) is 2; 1 times every step */
	env[0] = "TRAINSCOPE_DEVICE_EVERY=";
	run("dispatch", env, &o);
	for (int i = 0; i < 10; i++)
		assert_int_equal(vali(&o, "gpu_step", i, "untimed"),
				 !(i == 0 || i == 3 || i == 4 || i == 6 || i == 9));
	env[0] = "TRAINSCOPE_DEVICE_EVERY=1";
	run("dispatch", env, &o);
	for (int i = 0; i < 10; i++)
		assert_int_equal(vali(&o, "gpu_step", i, "untimed"), 0);
}

/* A wait on another stream's work ends the stream's segment (counted), a second wait
 * with none open ends nothing, the next launch opens another (timed as the step's head,
 * the next one untimed or sampled: either way opened). */
static void test_segment_waits(void **state)
{
	(void)state;
	run("segwait", NULL, &o);
	assert_int_equal(val(&o, "ts.segments") + val(&o, "ts.seg_untimed"), 10);
	assert_true(val(&o, "ts.segments") >= 5);
	assert_int_equal(val(&o, "ts.seg_waits"), 5);
	assert_int_equal(val(&o, "ts.seg_switches"), 0);
}

/* segtail's run under env: its event pairs, untimed segments, unsampled kernels, and
 * each step's (from step `from`, every `by`) compute of ms. */
static void check_segtail(char *const *env, uint64_t pairs, uint64_t untimed, uint64_t unsampled,
			  int from, int by, uint64_t ms)
{
	run("segtail", env, &o);
	assert_int_equal(val(&o, "ts.segments"), pairs);
	assert_int_equal(val(&o, "ts.seg_untimed"), untimed);
	assert_int_equal(val(&o, "ts.tail_unsampled"), unsampled);
	for (int i = from; i < 5; i += by)
		assert_int_equal(vali(&o, "gpu_step", i, "compute_ns"), ms * MS);
}

/* 20 segments a step on one stream. With a head of 4 and one in 8 of the tail: the
 * head in step 0 alone (from step 1 on, the step before opened 20 segments, at least 8:
 * each step has samples of its own), 16 event pairs in 5 steps (places 8 and 16 of step
 * 0, then 2, 2, 3 and 3) and B's 5, 21 ms a step all the same (stream B's one kernel
 * too); with TRAINSCOPE_SEGMENT_EVERY=1, every segment timed. With the defaults (a head
 * of 1, one in 64; 20 is under 64, so each step keeps its head), step 0 takes no tail
 * sample (its 19 kernels are counted as unsampled, not as time) and steps 1-3 one each
 * (the hashed turn puts places 7, 14 and 20 there). With 100 segments a step, over 64:
 * a head in step 0 alone, 2 samples a step (places 64; 7 and 71; 14 and 78...), 10 pairs
 * and B's 5 (a head each step would make 19), and every kernel's time in each step.
 * The same with the in-run A/B pausing every other step: steps 2 and 4 follow a paused
 * one, and still take no head (the stream's last step with work made 100): A's 6 pairs
 * and B's 3 (a head after each paused step would make 11). */
static void test_segment_tail(void **state)
{
	char *every8[] = { "TRAINSCOPE_SEGMENT_HEAD=4", "TRAINSCOPE_SEGMENT_EVERY=8", NULL };
	char *every1[] = { "TRAINSCOPE_SEGMENT_EVERY=1", NULL };
	char *many[] = { "HOOKDRIVE_SEGMENTS=100", NULL };
	char *many_ab[] = { "HOOKDRIVE_SEGMENTS=100", "TRAINSCOPE_AB_STEPS=1", NULL };

	(void)state;
	check_segtail(every8, 5 + 16, 5 * 20 - 16, 0, 0, 1, 21);
	assert_int_equal(val(&o, "ts.seg_waits"), 5 * 20);
	check_segtail(every1, 5 * 21, 0, 0, 0, 1, 21);
	check_segtail(NULL, 5 * (1 + 1) + 3, 5 * 19 - 3, 19, 1, 1, 21);
	assert_int_equal(vali(&o, "gpu_step", 0, "compute_ns"), 2 * MS);
	check_segtail(many, 5 + 10, 5 * 100 - 10, 0, 0, 1, 101);
	assert_int_equal(val(&o, "ts.seg_waits"), 5 * 100);
	/* recorded steps 0, 2 and 4 */
	check_segtail(many_ab, 3 + 6, 3 * 100 - 6, 0, 0, 2, 101);
}

/* A stream that works only on even steps: its one small segment a step (past a head of
 * 2, set here: with the default 1 the old rule's places would reach the second) is
 * sampled at step 20 (the hashed turn), so only steps 0-18's are unsampled, and from then
 * on each even step's busy time holds it (B's 1 ms, A's 3). A turn that grew by one a
 * step reached that place only on odd steps: never. */
static void test_segment_parity(void **state)
{
	char *head2[] = { "TRAINSCOPE_SEGMENT_HEAD=2", NULL };

	(void)state;
	run("segparity", head2, &o);
	assert_int_equal(val(&o, "ts.seg_untimed"), 32 - 1);
	assert_int_equal(val(&o, "ts.tail_unsampled"), 10);
	assert_int_equal(vali(&o, "gpu_step", 18, "compute_ns"), 3 * MS);
	for (int i = 20; i < 64; i += 2)
		assert_int_equal(vali(&o, "gpu_step", i, "compute_ns"), 4 * MS);
	assert_int_equal(vali(&o, "gpu_step", 21, "compute_ns"), 1 * MS);
}

/* The trampoline keeps RTLD_NEXT relative to the caller; only the wanted names and
 * ABI versions are wrapped. */
static void test_rtld_and_getproc(void **state)
{
	(void)state;
	run("rtld", NULL, &o);
	assert_int_equal(val(&o, "exe_next_in_lib"), 1);
	assert_int_equal(val(&o, "cudart_next_probe"), 2);
	assert_int_equal(val(&o, "default_probe"), 1);
	assert_int_equal(val(&o, "getproc_in_lib"), 1);
	assert_int_equal(val(&o, "default_launch_in_lib"), 1);
	assert_int_equal(val(&o, "unhooked_in_double"), 1);
	assert_int_equal(val(&o, "missing_is_null"), 1);
	assert_int_equal(val(&o, "memalloc_v2_in_lib"), 1);
	assert_int_equal(val(&o, "memalloc_old_in_double"), 1);
	assert_int_equal(val(&o, "getproc_unhooked_in_double"), 1);
	assert_int_equal(val(&o, "nested_getproc_in_lib"), 1);
	assert_int_equal(val(&o, "launch_from_nested_in_lib"), 1);
	assert_int_equal(val(&o, "ptsz_is_own_wrapper"), 1);
	assert_int_equal(val(&o, "getproc_v1_launch_in_lib"), 1);
	assert_int_equal(val(&o, "calls_reach_double"), 2);
	assert_int_equal(val(&o, "ts.launches"), 2);
	/* the per-thread wrapper times the caller's NULL on the per-thread stream */
	assert_true(val(&o, "ptsz_records") >= 1);
}

static void test_memory(void **state)
{
	(void)state;
	run("memory", NULL, &o);
	assert_int_equal(val(&o, "oom_result"), 2);
	/* 3 MiB allocated, 1 freed; 8 MiB created, 4 released; 2 MiB async, freed */
	assert_int_equal(val(&o, "ts.mem_live"), 6u << 20);
	assert_int_equal(val(&o, "ts.alloc_failures"), 1);
}

/* 6,000 timed event pairs from at most 2 × 1,024 events; a stalled stream empties the
 * pool and the launches go on, untimed and counted. */
static void test_event_pool(void **state)
{
	char *env[] = { "TRAINSCOPE_SAMPLE_N=1", "TRAINSCOPE_SAMPLE_BUDGET=1", NULL };

	(void)state;
	run("pool", env, &o);
	assert_int_equal(val(&o, "before_stall.skipped"), 0);
	assert_true(val(&o, "ts.segments") >= 3000);
	assert_true(val(&o, "ts.samples") >= 3000);
	assert_true(val(&o, "dbl.events_created") <= 2 * 1024);
	assert_int_equal(val(&o, "stalled_launches"), 1100);
	assert_true(val(&o, "stalled.skipped") >= 1100 - 1024);
	assert_int_equal(val(&o, "ts.launches"), 3000 + 1100);
	assert_int_equal(val(&o, "ts.completed"), val(&o, "ts.segments") + val(&o, "ts.samples"));
}

static void test_capture_gets_no_event(void **state)
{
	char *env[] = { "TRAINSCOPE_SAMPLE_N=1", "TRAINSCOPE_SAMPLE_BUDGET=1", NULL };

	(void)state;
	run("capture", env, &o);
	assert_int_equal(val(&o, "captured_launches"), 60);
	assert_int_equal(val(&o, "captured_records"), 0);
	assert_int_equal(val(&o, "dbl.records_while_capturing"), 0);
	assert_int_equal(val(&o, "ts.capture_skips"), 10); /* the GEMMs' samples */
	assert_int_equal(val(&o, "ts.launches"), 50);
	assert_int_equal(val(&o, "ts.captured"), 60);
	assert_int_equal(val(&o, "ts.gemms"), 10);
	assert_int_equal(val(&o, "ring.gemms"), 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(vali(&o, "gpu_step", i, "compute_ns"), 5 * MS);
}

/* A graph replay counts its kernels (child graphs included, copies not) and its time
 * shows in the step's compute; what was launched while capturing is not a launch; the
 * other launch paths count once; host functions are no kernels. */
static void test_graphs_and_launch_paths(void **state)
{
	(void)state;
	run("graphs", NULL, &o);
	assert_int_equal(val(&o, "ts.graphs"), 2);
	assert_int_equal(val(&o, "ts.graphs_uncounted"), 0);
	assert_int_equal(val(&o, "ts.graph_launches"), 20);
	assert_int_equal(val(&o, "ts.captured"), 5);
	assert_int_equal(val(&o, "dbl.launches"), 150);
	assert_int_equal(val(&o, "ts.launches"), 150);
	assert_int_equal(val(&o, "ring.step_ctr_launches"), 150);
	/* each step's replays and host functions are clocked, whatever the kernels' sample:
	 * one in 8 of a step's 7 launches would leave some 4 steps in 10 with no host time */
	assert_int_equal(val(&o, "ring.step_ctrs"), 10);
	assert_int_equal(val(&o, "ring.step_ctr_unclocked"), 0);
	assert_int_equal(val(&o, "ts.host_funcs"), 20);
	assert_int_equal(val(&o, "dbl.host_funcs"), 20);
	assert_int_equal(val(&o, "host_calls"), 20);
	assert_int_equal(val(&o, "dbl.records_while_capturing"), 0);
	assert_int_equal(val(&o, "ring.gpu_steps"), 10);
	/* C 5 ms, A 7 ms, B 3 ms a step */
	for (int i = 0; i < 10; i++)
		assert_int_equal(vali(&o, "gpu_step", i, "compute_ns"), 15 * MS);
	assert_int_equal(val(&o, "ts.segments"), 30);
}

static void test_sampling(void **state)
{
	char *fixed[] = { "TRAINSCOPE_SAMPLE_N=4", "TRAINSCOPE_SAMPLE_BUDGET=1", NULL };
	char *tiny[] = { "TRAINSCOPE_SAMPLE_N=4", "TRAINSCOPE_SAMPLE_BUDGET=1e-9", NULL };

	(void)state;
	run("sampling", fixed, &o);
	assert_int_equal(val(&o, "ts.samples"), 100);
	assert_int_equal(val(&o, "ts.sample_n"), 4);
	for (int i = 0; i < 10; i++) {
		assert_int_equal(vali(&o, "gpu_step", i, "ksamples"), 10);
		assert_int_equal(vali(&o, "gpu_step", i, "ksample_ns"), 10 * MS);
	}
	/* a budget no sample fits in: N doubles after every step that sampled */
	run("sampling", tiny, &o);
	assert_true(val(&o, "max_sample_n") >= 16);
	assert_true(val(&o, "ts.samples") < 100);
}

/* N starts at 2^20 and halves each step that costs nothing, to 8 by step 17: a thread
 * that kept counting to the N it read first (2^20) would sample none of its 6,000
 * launches; one that reads N again every 4,096 launches samples from step 20 on. */
static void test_sampling_falls(void **state)
{
	char *env[] = { "TRAINSCOPE_SAMPLE_N=1048576", "TRAINSCOPE_SAMPLE_BUDGET=1", NULL };

	(void)state;
	run("samplefall", env, &o);
	assert_int_equal(val(&o, "ts.sample_n"), 8);
	assert_true(val(&o, "ts.samples") >= 100);
}

static void test_hang(void **state)
{
	char *env[] = { "TRAINSCOPE_HANG_TIMEOUT_MS=300", NULL };

	(void)state;
	run("hang", env, &o);
	assert_int_equal(val(&o, "ring.hangs"), 1);
	assert_int_equal(vali(&o, "hang", 0, "op"), 1); /* AllReduce */
	assert_int_equal(vali(&o, "hang", 0, "has_comm"), 1);
	assert_int_equal(vali(&o, "hang", 0, "seq"), 1);
	assert_true(vali(&o, "hang", 0, "pending_ms") >= 300);
	assert_true(val(&o, "hang_after_ms") >= 300);
	assert_int_equal(val(&o, "dumps"), 1);
}

/* NCCL in a local scope (found with RTLD_NOLOAD); a group is timed as one operation;
 * ncclBcast's inner ncclBroadcast does not count again; bytes by nccl-tests. */
static void test_nccl(void **state)
{
	(void)state;
	run("nccl", NULL, &o);
	assert_int_equal(val(&o, "ts.colls"), 5);
	assert_int_equal(val(&o, "dbl.launches"), 5);
	assert_int_equal(val(&o, "ts.launches"), 5);
	assert_int_equal(val(&o, "ring.colls"), 3);
	assert_int_equal(vali(&o, "coll", 0, "op"), 1);
	assert_int_equal(vali(&o, "coll", 0, "bytes"), 3 * 256 * 4);
	assert_int_equal(vali(&o, "coll", 0, "ranks"), 4);
	assert_int_equal(vali(&o, "coll", 0, "dur_ns"), 3 * MS);
	assert_int_equal(vali(&o, "coll", 0, "has_comm"), 1);
	assert_int_equal(vali(&o, "coll", 1, "op"), 4); /* Broadcast */
	assert_int_equal(vali(&o, "coll", 1, "bytes"), 100);
	assert_int_equal(vali(&o, "coll", 1, "seq"), 4);
	assert_int_equal(vali(&o, "coll", 2, "op"), 2); /* AllGather: the whole output */
	assert_int_equal(vali(&o, "coll", 2, "bytes"), 10 * 4 * 4);
	assert_int_equal(vali(&o, "gpu_step", 0, "comm_ns"), 5 * MS);
	assert_int_equal(vali(&o, "gpu_step", 0, "compute_ns"), 0);
}

/* A synchronous collective on the compute stream splits the stream's busy time: 5 ms
 * of kernels are compute, the collective's 1 ms communication, every step (a stream
 * once used by NCCL used to count as communication for good). The step's third segment
 * follows NCCL's one kernel, past the head: it is timed because the kind changed, not
 * sampled as a small segment's successor. */
static void test_sync_coll(void **state)
{
	(void)state;
	run("sync_coll", NULL, &o);
	assert_int_equal(val(&o, "ring.gpu_steps"), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(vali(&o, "gpu_step", i, "compute_ns"), 5 * MS);
		assert_int_equal(vali(&o, "gpu_step", i, "comm_ns"), 1 * MS);
	}
}

/* Collectives called into a capture run with each replay of the graph: counted then,
 * one record per kind and replay, sized per call, tagged with the replay's step; the
 * capture itself counts none. The graph's kernels (2 + 3 + 1 from NCCL, 1 more) count
 * per replay too. */
static void test_graph_colls(void **state)
{
	(void)state;
	run("graph_colls", NULL, &o);
	assert_int_equal(val(&o, "ts.graph_colls"), 4 * 6);
	assert_int_equal(val(&o, "ts.graph_colls_uncounted"), 0);
	assert_int_equal(val(&o, "ts.colls"), 4 * 6 + 1);
	assert_int_equal(val(&o, "ts.launches"), 4 * 7 + 1);
	assert_int_equal(val(&o, "ring.colls"), 1); /* the eager one, timed */
	assert_int_equal(val(&o, "ring.graph_colls"), 4 * 2);
	for (int i = 0; i < 8; i++) {
		int ar = vali(&o, "gcoll", i, "op") == 1;
		assert_int_equal(vali(&o, "gcoll", i, "step"), i / 2);
		assert_int_equal(vali(&o, "gcoll", i, "ranks"), 4);
		assert_int_equal(vali(&o, "gcoll", i, "count"), ar ? 5 : 1);
		assert_int_equal(vali(&o, "gcoll", i, "bytes"), ar ? 5 * 256 * 4 : 10 * 4 * 4);
		assert_true(ar || vali(&o, "gcoll", i, "op") == 2);
	}
}

/* Two processes' view in one: the same unique id names the same communicator; a split
 * gets a name of its own; each communicator numbers its collectives from 1. */
static void test_comms(void **state)
{
	char *unranked[] = { "RANK=", "WORLD_SIZE=", NULL }, *ranked[] = { "RANK=1", "WORLD_SIZE=4",
									   NULL };

	(void)state;
	/* a launcher set a rank: the communicators' ranks leave it be */
	run("comms", ranked, &o);
	assert_int_equal(val(&o, "ring.rank"), 1);
	assert_int_equal(val(&o, "ring.idents"), 0);
	/* none set: the first communicator made from unique ids gives rank and world, once */
	run("comms", unranked, &o);
	assert_int_equal(val(&o, "ring.rank"), 2);
	assert_int_equal(val(&o, "ring.world"), 4);
	assert_int_equal(val(&o, "ring.idents"), 1);
	assert_int_equal(val(&o, "ring.comms"), 5); /* 3, then 2 made by InitRankScalable */
	assert_int_equal(vali(&o, "comm", 0, "nranks"), 4);
	assert_int_equal(vali(&o, "comm", 0, "rank"), 2);
	assert_int_equal(vali(&o, "comm", 1, "rank"), 3);
	assert_int_equal(vali(&o, "comm", 2, "nranks"), 2);
	assert_int_equal(vali(&o, "comm", 2, "rank"), 1);
	assert_int_equal(val(&o, "comm_ids_agree"), 1);
	assert_int_equal(val(&o, "split_id_differs"), 1);
	/* made by ncclCommInitRankScalable, non-blocking (ncclInProgress): still announced */
	assert_int_equal(val(&o, "scalable_comms"), 2);
	assert_int_equal(vali(&o, "scalable", 0, "nranks"), 8);
	assert_int_equal(vali(&o, "scalable", 0, "rank"), 5);
	assert_int_equal(val(&o, "scalable_ids_agree"), 1);
	assert_int_equal(val(&o, "ring.colls"), 4);
	assert_int_equal(vali(&o, "coll", 0, "seq"), 1);
	assert_int_equal(vali(&o, "coll", 1, "seq"), 2);
	assert_int_equal(vali(&o, "coll", 2, "seq"), 1); /* the split's first */
	assert_int_equal(vali(&o, "coll", 3, "seq"), 1); /* the same id, another pointer */
	assert_int_equal(vali(&o, "coll", 0, "comm_is"), 0);
	assert_int_equal(vali(&o, "coll", 2, "comm_is"), 2);
	assert_int_equal(vali(&o, "coll", 3, "comm_is"), 0);
}

/* The in-run A/B (TRAINSCOPE_AB_STEPS=2): steps 2-3 and 6-7 launch through the hooks and
 * are noted nowhere (no launch counted, no sample, no event); the others as always. */
static void test_ab_pause(void **state)
{
	char *env[] = { "TRAINSCOPE_SAMPLE_N=4", "TRAINSCOPE_SAMPLE_BUDGET=1", NULL, NULL };
	static const int recorded[] = { 0, 1, 4, 5, 8, 9 };

	(void)state;
	run("sampling", env + 2, &o); /* no A/B: every step's launches */
	uint64_t all = val(&o, "ts.launches");
	env[2] = "TRAINSCOPE_AB_STEPS=2";
	run("sampling", env, &o);
	assert_int_equal(val(&o, "ts.samples"), 60);
	assert_int_equal(val(&o, "ts.launches"), all * 6 / 10);
	for (size_t i = 0; i < sizeof(recorded) / sizeof(*recorded); i++) {
		assert_int_equal(vali(&o, "gpu_step", recorded[i], "ksamples"), 10);
		assert_int_equal(vali(&o, "gpu_step", recorded[i], "ksample_ns"), 10 * MS);
	}
	/* N halves after each step far under its budget (a budget no host is too slow for:
	 * under qemu a step's samples took over a quarter of a tighter one), down to 8, but
	 * not after a paused step (it sampled nothing by design): 1024 halves 6 times in 10
	 * steps, not 7 */
	char *adapt[] = { "TRAINSCOPE_SAMPLE_N=1024", "TRAINSCOPE_SAMPLE_BUDGET=1e6", NULL, NULL };
	run("sampling", adapt, &o);
	assert_int_equal(val(&o, "ts.sample_n"), 8);
	adapt[2] = "TRAINSCOPE_AB_STEPS=2";
	run("sampling", adapt, &o);
	assert_int_equal(val(&o, "ts.sample_n"), 16);
}

static void test_cublas(void **state)
{
	char *env[] = { "TRAINSCOPE_SAMPLE_N=1", "TRAINSCOPE_SAMPLE_BUDGET=1", NULL };

	(void)state;
	run("cublas", env, &o);
	assert_int_equal(val(&o, "ts.gemms"), 1);
	assert_int_equal(val(&o, "ts.launches"), 1);
	assert_int_equal(val(&o, "ring.gemms"), 1);
	assert_int_equal(vali(&o, "gemm", 0, "flops"), 2 * 64 * 32 * 16);
	assert_int_equal(vali(&o, "gemm", 0, "dur_ns"), 1 * MS);
	/* the library's own kernel is counted, never sampled on its own */
	assert_int_equal(val(&o, "ts.samples"), 1);
	/* N too large to sample: the step's first GEMM is timed as such, unless none is */
	char *always[] = { "TRAINSCOPE_SAMPLE_N=1000000", NULL, NULL };
	run("cublas", always, &o);
	assert_int_equal(val(&o, "ring.gemms"), 1);
	always[1] = "TRAINSCOPE_GEMMS_PER_STEP=0";
	run("cublas", always, &o);
	assert_int_equal(val(&o, "ts.gemms"), 1);
	assert_int_equal(val(&o, "ring.gemms"), 0);
	assert_int_equal(val(&o, "ts.samples"), 0);
}

/* Launches and GEMMs from many threads: 80 one after another, two at a time (slots
 * taken again), then 70 at once (past the 64 slots): each counted once, in its step's
 * counters; the process's first 2 GEMMs of each step timed, whichever thread made them,
 * and no other (N too large to sample); with TRAINSCOPE_GEMMS_PER_STEP, that many. A
 * budget no cost is under keeps N where it is: at the default, a slow host's longer steps
 * put one timed GEMM far under budget, and N halved to 15 in 41 steps (CI: 317 samples). */
static void test_threads(void **state)
{
	char *env[] = { "TRAINSCOPE_SAMPLE_N=1000000", "TRAINSCOPE_SAMPLE_BUDGET=1e-12", NULL,
			NULL };
	const uint64_t threads = 40 * 2 + 70;

	(void)state;
	run("threads", env, &o);
	assert_int_equal(val(&o, "ts.launches"), threads * (100 + 3));
	assert_int_equal(val(&o, "ring.step_ctr_launches"), threads * (100 + 3));
	assert_int_equal(val(&o, "ts.gemms"), threads * 3);
	assert_int_equal(val(&o, "ts.samples"), 41 * 2); /* at most 2 a step: 2 in each */
	env[2] = "TRAINSCOPE_GEMMS_PER_STEP=1";
	run("threads", env, &o);
	assert_int_equal(val(&o, "ts.gemms"), threads * 3);
	assert_int_equal(val(&o, "ts.samples"), 41 * 1);
	env[2] = "TRAINSCOPE_DEVICE_EVERY=2"; /* GEMMs timed on 21 of steps 0-40 only */
	run("threads", env, &o);
	assert_int_equal(val(&o, "ts.gemms"), threads * 3);
	assert_int_equal(val(&o, "ts.samples"), 21 * 2);
}

/* The profiler plugin: v5 and v4 give device time from the channels' GPU timers (first
 * start to last stop), op, bytes, algorithm, communicator and sequence; v3 declines. */
static void test_profiler_plugin(void **state)
{
	(void)state;
	run("plugin", NULL, &o);
	assert_int_equal(val(&o, "mask_v5"), (1 << 1) | (1 << 2) | (1 << 3) | (1 << 4) | (1 << 6));
	assert_int_equal(val(&o, "mask_v4"), val(&o, "mask_v5"));
	assert_int_equal(val(&o, "mask_v3"), 0);
	assert_int_equal(val(&o, "ring.colls"), 2);
	assert_int_equal(vali(&o, "coll", 0, "op"), 2);             /* AllGather */
	assert_int_equal(vali(&o, "coll", 0, "bytes"), 256 * 4 * 4); /* ranks x count x 4 */
	assert_int_equal(vali(&o, "coll", 0, "dur_ns"), 4000);
	assert_int_equal(vali(&o, "coll", 0, "seq"), 7);
	assert_int_equal(vali(&o, "coll", 0, "algo"), 2); /* Ring */
	assert_int_equal(vali(&o, "coll", 0, "comm"), 0xabc);
	assert_int_equal(vali(&o, "coll", 0, "ranks"), 4);
	assert_int_equal(vali(&o, "coll", 1, "op"), 1); /* AllReduce */
	assert_int_equal(vali(&o, "coll", 1, "bytes"), 2000);
	assert_int_equal(vali(&o, "coll", 1, "dur_ns"), 2500);
	assert_int_equal(vali(&o, "coll", 1, "seq"), 3);
	assert_int_equal(vali(&o, "coll", 1, "algo"), 1); /* Tree */
	assert_int_equal(vali(&o, "coll", 1, "comm"), 0xdef);
	/* network sends per communicator and peer, once a step; receives not */
	assert_int_equal(val(&o, "ring.peers"), 2);
	assert_int_equal(vali(&o, "peer", 0, "peer"), 1);
	assert_int_equal(vali(&o, "peer", 0, "bytes"), 2 << 20);
	assert_int_equal(vali(&o, "peer", 0, "sends"), 2);
	assert_true(vali(&o, "peer", 0, "ms") >= 4 && vali(&o, "peer", 0, "ms") < 1000);
	assert_int_equal(vali(&o, "peer", 1, "peer"), 0);
	assert_int_equal(vali(&o, "peer", 1, "bytes"), 4096);
	assert_int_equal(vali(&o, "peer", 1, "sends"), 1);
}

/* The NPU: ACL launches through each of the four launch paths and an aclnn operator
 * found with dlsym counted once; device
 * time per step from ACL event pairs (4 ms of kernels on the compute stream, the
 * collectives on the communication stream); HCCL collectives numbered per communicator
 * with nccl-tests' sizes from HCCL's types; a group timed as one; a sub-communicator
 * named alike on every member; memory live and failures; a capture's launch counted as
 * captured, with no event recorded into it. */
static void test_npu(void **state)
{
	uint64_t world, sub;

	(void)state;
	run_prog("npudrive", "unit", NULL, &o);
	/* the operator's run entry is wrapped, its workspace query is not; its inner
	 * aclrtLaunchKernel does not count again */
	assert_int_equal(val(&o, "aclnn.run_wrapped"), 1);
	assert_int_equal(val(&o, "aclnn.ws_wrapped"), 0);
	assert_int_equal(val(&o, "ts.launches"), 20);
	assert_int_equal(val(&o, "ring.step_ctr_launches"), 20);
	assert_int_equal(val(&o, "dbl.launches"), 21);
	assert_int_equal(val(&o, "ts.captured"), 1);
	assert_int_equal(val(&o, "dbl.records_while_capturing"), 0);
	assert_int_equal(val(&o, "ts.colls"), 20);
	assert_int_equal(val(&o, "ring.gpu_steps"), 4);
	for (int i = 0; i < 4; i++) {
		/* real time on the double: the kernels' 5 ms and the host's gaps. The upper
		 * bound catches a unit mistaken (x1000), not a slow host: 60 ms failed when
		 * the process was stopped 80 ms in every 100, as a busy CI host may stall it */
		assert_in_range(vali(&o, "gpu_step", i, "compute_ns"), 5 * MS, 1000 * MS);
		assert_in_range(vali(&o, "gpu_step", i, "comm_ns"), 400000, 1000 * MS);
	}
	assert_int_equal(val(&o, "ring.comms"), 2);
	world = vali(&o, "comm", 0, "id");
	sub = vali(&o, "comm", 1, "id");
	assert_int_equal(vali(&o, "comm", 0, "ranks"), 4);
	assert_int_equal(vali(&o, "comm", 1, "ranks"), 2);
	assert_true(world != sub && world && sub);
	/* per step: all-reduce, all-gather, the group as one, the batch on the sub-comm */
	assert_int_equal(val(&o, "ring.colls"), 16);
	assert_int_equal(vali(&o, "coll", 0, "op"), 1);
	assert_int_equal(vali(&o, "coll", 0, "bytes"), 256 * 4);
	assert_int_equal(vali(&o, "coll", 0, "ranks"), 4);
	assert_int_equal(vali(&o, "coll", 0, "comm"), world);
	assert_in_range(vali(&o, "coll", 0, "dur_us"), 100, 1000000);
	assert_int_equal(vali(&o, "coll", 1, "op"), 2); /* all-gather of 10 BF16 a rank */
	assert_int_equal(vali(&o, "coll", 1, "bytes"), 10 * 2 * 4);
	assert_int_equal(vali(&o, "coll", 2, "op"), 3); /* two reduce-scatters, one group */
	assert_int_equal(vali(&o, "coll", 2, "bytes"), 2 * 8 * 2 * 4);
	assert_in_range(vali(&o, "coll", 2, "dur_us"), 100, 1000000);
	assert_int_equal(vali(&o, "coll", 3, "op"), 7); /* 10 FP32 sent, 30 FP16 received */
	assert_int_equal(vali(&o, "coll", 3, "bytes"), 40 + 60);
	assert_int_equal(vali(&o, "coll", 3, "comm"), sub);
	assert_int_equal(vali(&o, "coll", 3, "seq"), 1);
	assert_int_equal(vali(&o, "coll", 4, "seq"), 5); /* the group took 3 and 4 */
	assert_int_equal(vali(&o, "coll", 7, "seq"), 2);
	assert_int_equal(val(&o, "ts.mem_live"), 6u << 20);
	assert_int_equal(val(&o, "ts.alloc_failures"), 1);
}

/* An HCCL all-reduce that never finishes: the hang names the op, its communicator and
 * its number. */
static void test_npu_hang(void **state)
{
	char *env[] = { "TRAINSCOPE_HANG_TIMEOUT_MS=300", NULL };

	(void)state;
	run_prog("npudrive", "hang", env, &o);
	assert_int_equal(val(&o, "ring.hangs"), 1);
	assert_int_equal(vali(&o, "hang", 0, "op"), 1);
	assert_true(vali(&o, "hang", 0, "comm") != 0);
	assert_int_equal(vali(&o, "hang", 0, "seq"), 1);
	assert_true(vali(&o, "hang", 0, "pending_ms") >= 300);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dispatch),
		cmocka_unit_test(test_segment_waits),
		cmocka_unit_test(test_segment_tail),
		cmocka_unit_test(test_segment_parity),
		cmocka_unit_test(test_rtld_and_getproc),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_event_pool),
		cmocka_unit_test(test_capture_gets_no_event),
		cmocka_unit_test(test_graphs_and_launch_paths),
		cmocka_unit_test(test_sampling),
		cmocka_unit_test(test_sampling_falls),
		cmocka_unit_test(test_ab_pause),
		cmocka_unit_test(test_hang),
		cmocka_unit_test(test_nccl),
		cmocka_unit_test(test_sync_coll),
		cmocka_unit_test(test_comms),
		cmocka_unit_test(test_graph_colls),
		cmocka_unit_test(test_cublas),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_device_every),
		cmocka_unit_test(test_profiler_plugin),
		cmocka_unit_test(test_npu),
		cmocka_unit_test(test_npu_hang),
	};
	return cmocka_run_group_tests_name("device hooks (test doubles)", tests, NULL, NULL);
}
