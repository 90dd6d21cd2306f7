// SPDX-License-Identifier: Apache-2.0
/* Job-level localization on synthetic ranks: the slow rank and its cause, nobody in a
 * healthy job, hang, late data. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/detect/job.h"
#include "analysis/detect/traceid.h"
#include "analysis/detect/peers.h"

/* The defaults with the real-job floors off (verdict.wait_floor 0): these tests feed
 * synthetic steps to the statistics themselves; bench/data's recordings of real programs
 * (make real-bench) judge the floors. */
static void synthetic_defaults(struct ts_params *p)
{
	ts_params_defaults(p);
	p->verdict.wait_floor = 0;
}

#define MS 1000000ull

struct sim {
	int world, slow_rank, from_step;
	enum ts_metric metric;
	double factor;
	unsigned seed;
	double launch_factor; /* >0: the slow rank's launches also take this much longer */
};

static double jitter(unsigned *seed, double v, double rel)
{
	return v * (1 + rel * ((rand_r(seed) % 2001) / 1000.0 - 1.0));
}

/* A synchronous step: the slow rank's extra time shows up as the others' collective. */
static void feed_step(struct ts_job *j, struct sim *s, uint64_t step)
{
	double base[TS_M_COUNT] = { 30, 5, 0.5, 20, 0 }, extra = 0;
	uint64_t t0 = 1000000 * MS + step * 100 * MS;

	if (s->slow_rank >= 0 && step >= (uint64_t)s->from_step)
		extra = base[s->metric] * (s->factor - 1);
	for (int r = 0; r < s->world; r++) {
		struct ts_rank_step rs = { .step = step, .start_ns = t0 };
		for (int m = 0; m < TS_M_COUNT; m++)
			rs.m[m] = jitter(&s->seed, base[m], 0.03);
		if (r == s->slow_rank && extra > 0 && s->launch_factor > 0)
			rs.m[TS_M_LAUNCH] *= s->launch_factor;
		if (r == s->slow_rank && extra > 0)
			rs.m[s->metric] += extra;
		else
			rs.m[TS_M_COLLECTIVE] += extra;
		rs.end_ns = t0 + (uint64_t)((56 + extra) * MS);
		assert_int_equal(ts_job_add_step(j, r, s->world, &rs), 0);
	}
}

static const struct ts_job_result *run(struct sim *s, int steps, uint64_t *first_named)
{
	static struct ts_job *j;
	struct ts_params p;

	synthetic_defaults(&p);
	char err[128];
	assert_int_equal(ts_params_load(&p, NULL, NULL, err, sizeof(err)), 0);
	if (j)
		ts_job_free(j);
	assert_int_equal(ts_job_new(&j, "ns", "job", s->world, &p), 0);
	*first_named = 0;
	for (int st = 0; st < steps; st++) {
		feed_step(j, s, (uint64_t)st);
		ts_job_tick(j, 1000000 * MS + (uint64_t)st * 100 * MS);
		if (!*first_named && ts_job_result(j)->nslow)
			*first_named = (uint64_t)st;
	}
	return ts_job_result(j);
}

static void expect_slow(enum ts_metric metric, double factor, const char *cause, int world,
			int latency)
{
	struct sim s = { world, 5, 40, metric, factor, 7 };
	uint64_t first;
	const struct ts_job_result *r = run(&s, 120, &first);

	assert_int_equal(r->state, TS_STATE_FAILSLOW);
	assert_int_equal(r->nslow, 1);
	assert_int_equal(r->slow[0].rank, 5);
	assert_string_equal(r->slow[0].cause, cause);
	assert_string_equal(r->slow[0].metric, ts_metric_names[metric]);
	assert_true(fabs(r->slow[0].degradation - (factor - 1)) < 0.06);
	assert_non_null(strstr(r->slow[0].evidence, "the others wait for it"));
	/* named by the change points a few steps after the onset, which they date */
	print_message("world %d %s x%.1f: named at step %llu, onset %llu, confirmed %llu\n",
		      world, ts_metric_names[metric], factor, (unsigned long long)first,
		      (unsigned long long)r->slow[0].onset_step,
		      (unsigned long long)r->slow[0].confirmed_step);
	assert_true(first >= 40 && first <= 40 + (uint64_t)latency);
	assert_true(r->slow[0].onset_step >= 38 && r->slow[0].onset_step <= 41);
	assert_int_equal(r->slow[0].confirmed_step, first);
}

/* A world grown past its arrays' room starts its ranks' history over: the ranks named
 * before are not named from arrays made anew (a report built then read a NULL cause and
 * crashed the analyzer). */
static void test_world_regrown_forgets_named(void **state)
{
	struct sim s = { 8, 5, 40, TS_M_COMPUTE, 1.3, 7 };
	struct ts_params p;
	struct ts_job *j;

	(void)state;
	synthetic_defaults(&p);
	assert_int_equal(ts_job_new(&j, "ns", "job", s.world, &p), 0);
	for (int st = 0; st < 120; st++) {
		feed_step(j, &s, (uint64_t)st);
		ts_job_tick(j, 1000000 * MS + (uint64_t)st * 100 * MS);
	}
	assert_int_equal(ts_job_result(j)->nslow, 1);
	struct ts_rank_step rs = { .step = 120, .start_ns = 1000000 * MS + 120 * 100 * MS };
	rs.end_ns = rs.start_ns + 56 * MS;
	assert_int_equal(ts_job_add_step(j, 63, 64, &rs), 0); /* past the arrays' room */
	assert_int_equal(ts_job_result(j)->nslow, 0);
	assert_string_equal(ts_job_result(j)->summary, "");
	ts_job_free(j);
}

/* The report's trace is the window of the step to come when the verdict changed: the
 * named rank's steps are kept from then on, so the window of the newest step received
 * (here each step is a window) may already hold all it will get of them. */
static void test_report_trace_ahead(void **state)
{
	struct sim s = { 8, 5, 40, TS_M_COMPUTE, 1.3, 7 };
	uint8_t got[16], want[16];
	struct ts_params p;
	struct ts_job *j;
	int st;

	(void)state;
	synthetic_defaults(&p);
	p.traces.window_steps = 1;
	assert_int_equal(ts_job_new(&j, "ns", "job", s.world, &p), 0);
	for (st = 0; st < 120 && !ts_job_result(j)->nslow; st++) {
		feed_step(j, &s, (uint64_t)st);
		ts_job_tick(j, 1000000 * MS + (uint64_t)st * 100 * MS);
	}
	assert_int_equal(ts_job_result(j)->nslow, 1);
	assert_true(ts_job_report_trace(j, got));
	ts_window_trace(ts_job_trace_id(j), (uint64_t)st, want); /* the last fed: st - 1 */
	assert_memory_equal(got, want, 16);
	ts_job_free(j);
}

static void test_compute(void **state)
{
	(void)state;
	expect_slow(TS_M_COMPUTE, 1.3, "Compute", 8, 8);
	expect_slow(TS_M_COMPUTE, 1.3, "Compute", 16, 8);
}

/* A GPU shared with another process from step 40: its GEMMs take twice the time per
 * flop while its busy time, which host gaps fill, stays; the others wait for it. Named
 * Compute on the GEMM metric; before it every rank's GEMM values were alike: none named,
 * and a job with no GEMM samples has none to judge. */
static void test_gemm_throughput(void **state)
{
	struct ts_params p;
	struct ts_job *j;
	unsigned seed = 11;
	uint64_t first = 0;
	char err[128];

	(void)state;
	synthetic_defaults(&p);
	assert_int_equal(ts_params_load(&p, NULL, NULL, err, sizeof(err)), 0);
	assert_int_equal(ts_job_new(&j, "ns", "gemm", 4, &p), 0);
	for (uint64_t st = 0; st < 120; st++) {
		uint64_t t0 = 1000000 * MS + st * 100 * MS;
		double wait = st >= 40 ? 15 : 0;
		for (int r = 0; r < 4; r++) {
			struct ts_rank_step rs = { .step = st, .start_ns = t0 };
			rs.m[TS_M_COMPUTE] = jitter(&seed, 40, 0.03);
			rs.m[TS_M_COLLECTIVE] = jitter(&seed, 5, 0.03) + (r == 1 ? 0 : wait);
			rs.m[TS_M_LAUNCH] = jitter(&seed, 7, 0.03);
			rs.m[TS_M_GEMM] = jitter(&seed, 0.002, 0.03) * (r == 1 && st >= 40 ? 2 : 1);
			rs.end_ns = t0 + (uint64_t)((50 + wait) * MS);
			assert_int_equal(ts_job_add_step(j, r, 4, &rs), 0);
		}
		ts_job_tick(j, t0 + 60 * MS);
		if (!first && ts_job_result(j)->nslow)
			first = st;
	}
	const struct ts_job_result *res = ts_job_result(j);
	assert_int_equal(res->nslow, 1);
	assert_int_equal(res->slow[0].rank, 1);
	assert_string_equal(res->slow[0].metric, "gemm");
	assert_string_equal(res->slow[0].cause, "Compute");
	assert_true(fabs(res->slow[0].degradation - 1.0) < 0.1);
	assert_non_null(strstr(res->slow[0].evidence, "run at 50% of its peers' throughput"));
	print_message("gemm x2 on rank 1 from step 40: named at step %llu\n",
		      (unsigned long long)first);
	assert_true(first >= 40 && first <= 52);
	ts_job_free(j);
}

/* DDP on 2 GPUs, a GEMM neighbour on rank 1's from step 40 (the device runs of
 * bench/results/gpu.md): rank 1's GEMMs take 4x the time; rank 0 waits 24 ms a step in
 * its all-reduce and, from step 70, its busy time grows 25 -> 35 ms, past rank 1's 30
 * (NCCL's kernels spin beside its work while it waits: Lightning's rank 0 did so); rank
 * 1's GPU clock falls from 1980 to 1545 MHz (the neighbour heats it). One verdict: rank
 * 1, Compute (the clock accounts for little of a 4x slowdown); rank 0 never named. */
static void test_waiting_rank_not_named(void **state)
{
	struct ts_params p;
	struct ts_job *j;
	unsigned seed = 5;
	bool rank0_named = false;
	char err[128];

	(void)state;
	synthetic_defaults(&p);
	assert_int_equal(ts_params_load(&p, NULL, NULL, err, sizeof(err)), 0);
	assert_int_equal(ts_job_new(&j, "ns", "lit", 2, &p), 0);
	for (uint64_t st = 0; st < 160; st++) {
		uint64_t t0 = 1000000 * MS + st * 100 * MS;
		double wait = st >= 40 ? 24 : 0;
		for (int r = 0; r < 2; r++) {
			struct ts_rank_step rs = { .step = st, .start_ns = t0 };
			snprintf(ts_job_rank(j, r)->node, 64, "n0");
			ts_job_rank(j, r)->device_index = r;
			rs.m[TS_M_COMPUTE] = jitter(&seed, r || st >= 70 ? 30 : 25, 0.03) +
					     (!r && st >= 70 ? 5 : 0);
			rs.m[TS_M_COLLECTIVE] = jitter(&seed, 3, 0.03) + (r == 1 ? 0 : wait);
			rs.m[TS_M_LAUNCH] = jitter(&seed, 5, 0.03);
			rs.m[TS_M_GEMM] = jitter(&seed, 0.002, 0.03) * (r == 1 && st >= 40 ? 4 : 1);
			rs.end_ns = t0 + (uint64_t)((40 + wait) * MS);
			assert_int_equal(ts_job_add_step(j, r, 2, &rs), 0);
			struct ts_device_view v = { .valid = true,
						    .sm_clock_mhz = r == 1 && st >= 40 ? 1545 : 1980 };
			ts_job_device_view(j, "n0", r, &v);
		}
		ts_job_tick(j, t0 + 60 * MS);
		for (int i = 0; i < ts_job_result(j)->nslow; i++)
			rank0_named |= ts_job_result(j)->slow[i].rank == 0;
	}
	const struct ts_job_result *res = ts_job_result(j);
	assert_true(res->ever_alarmed[0]); /* its compute rose: an alarm, not a verdict */
	assert_false(rank0_named);
	assert_int_equal(res->nslow, 1);
	assert_int_equal(res->slow[0].rank, 1);
	assert_string_equal(res->slow[0].cause, "Compute");
	assert_non_null(strstr(res->slow[0].evidence, "SM clock 1545 MHz"));
	ts_job_free(j);
}

static void test_storage(void **state)
{
	(void)state;
	expect_slow(TS_M_DATALOADER, 1.5, "Storage", 8, 8);
	expect_slow(TS_M_DATALOADER, 1.5, "Storage", 16, 8);
}

static void test_launch_is_host_cpu(void **state)
{
	(void)state;
	expect_slow(TS_M_LAUNCH, 3.0, "HostCPU", 8, 16); /* 1 ms of a 56 ms step */
}

/* A GPU shared with another process: the rank's launches wait on a full queue and
 * stand out more than its device time, yet the cause is the device side. */
static void test_busy_gpu_blocks_launches(void **state)
{
	struct sim s = { 4, 1, 40, TS_M_COMPUTE, 2.0, 3, 3.0 };
	uint64_t first;
	const struct ts_job_result *r;

	(void)state;
	s.slow_rank = 1;
	r = run(&s, 120, &first);
	assert_int_equal(r->nslow, 1);
	assert_int_equal(r->slow[0].rank, 1);
	assert_string_equal(r->slow[0].cause, "Compute");
	assert_string_equal(r->slow[0].metric, "compute");
	assert_non_null(strstr(r->slow[0].evidence, "launches wait for the busy GPU"));
}

/* A compute outlier on a GPU that says it throttles is the device's doing. */
static void test_throttled_gpu_is_device(void **state)
{
	struct sim s = { 8, 5, 40, TS_M_COMPUTE, 1.3, 11 };
	struct ts_params p;
	struct ts_job *j;

	(void)state;
	synthetic_defaults(&p);
	assert_int_equal(ts_job_new(&j, "ns", "gpu", 8, &p), 0);
	for (int st = 0; st < 120; st++) {
		feed_step(j, &s, (uint64_t)st);
		for (int r = 0; r < 8; r++) {
			snprintf(ts_job_rank(j, r)->node, 64, "n0");
			ts_job_rank(j, r)->device_index = r;
			struct ts_device_view v = { .valid = true, .sm_clock_mhz = 1980 };
			if (r == 5 && st >= 40)
				v = (struct ts_device_view){ .valid = true, .sm_clock_mhz = 1410,
							     .throttle_reasons = 0x40 /* HW thermal */ };
			ts_job_device_view(j, "n0", r, &v);
		}
		ts_job_tick(j, 1000000 * MS + (uint64_t)st * 100 * MS);
	}
	const struct ts_job_result *r = ts_job_result(j);
	assert_int_equal(r->nslow, 1);
	assert_int_equal(r->slow[0].rank, 5);
	assert_string_equal(r->slow[0].cause, "Device");
	assert_non_null(strstr(r->slow[0].evidence, "SM clock 1410 MHz vs median 1980 MHz"));
	assert_non_null(strstr(r->slow[0].evidence, "throttle 0x40"));
	ts_job_free(j);
}

/* The node agent's run-queue view makes a host-bound rank HostCPU, naming who ran; a
 * sample whose top preemptor hardly ran (a kworker at 0.01 ms/s) does not replace it. */
static void test_runq_names_preemptor(void **state)
{
	struct sim s = { 8, -1, 0, TS_M_COMPUTE, 1, 13 };
	struct ts_params p;
	struct ts_job *j;
	uint64_t t0 = 1000000 * MS;

	(void)state;
	synthetic_defaults(&p);
	assert_int_equal(ts_job_new(&j, "ns", "host", 8, &p), 0);
	for (int st = 0; st < 400; st++) {
		uint64_t now = t0 + (uint64_t)st * 100 * MS;
		if (st % 10 == 0) /* one host sample a second, steps of 100 ms */
			for (int r = 0; r < 8; r++) {
				struct ts_host_view v = { .valid = true, .time_ns = now,
							  .runq_ms_per_s = 20 + r % 3 };
				if (r == 5 && st >= 100) {
					v.runq_ms_per_s = 300;
					snprintf(v.top_comm, sizeof(v.top_comm), "stress");
					v.top_pid = 4242;
					v.top_ms_per_s = 250;
				}
				if (r == 5 && st >= 380) { /* a kworker tops a quiet sample */
					snprintf(v.top_comm, sizeof(v.top_comm), "kworker/7:1");
					v.top_pid = 258;
					v.top_ms_per_s = 0.01;
				}
				ts_job_host_view(j, r, &v);
			}
		feed_step(j, &s, (uint64_t)st);
		ts_job_tick(j, now);
	}
	const struct ts_job_result *r = ts_job_result(j);
	assert_int_equal(r->nslow, 1);
	assert_int_equal(r->slow[0].rank, 5);
	assert_string_equal(r->slow[0].cause, "HostCPU");
	assert_string_equal(r->slow[0].metric, "runq");
	assert_non_null(strstr(r->slow[0].evidence, "preempted by stress (pid 4242"));
	ts_job_free(j);
}

/* A hog on rank 2's core from step 100, its run queue 60 ms/s against the others' 20,
 * while rank 2 waits 7 ms a step longer than the others in its collective (its place in
 * the ring): the run-queue excess is the host's, whatever the wait. Named HostCPU. */
static void test_runq_named_whatever_the_wait(void **state)
{
	struct ts_params p;
	struct ts_job *j;
	unsigned seed = 17;

	(void)state;
	synthetic_defaults(&p);
	assert_int_equal(ts_job_new(&j, "ns", "runq", 4, &p), 0);
	for (uint64_t st = 0; st < 200; st++) {
		uint64_t t0 = 1000000 * MS + st * 100 * MS;
		for (int r = 0; r < 4 && st % 10 == 0; r++) {
			struct ts_host_view v = { .valid = true, .time_ns = t0, .runq_ms_per_s = 20 };
			if (r == 2 && st >= 100) {
				v.runq_ms_per_s = 60, v.top_pid = 4242, v.top_ms_per_s = 40;
				snprintf(v.top_comm, sizeof(v.top_comm), "stress");
			}
			ts_job_host_view(j, r, &v);
		}
		for (int r = 0; r < 4; r++) {
			struct ts_rank_step rs = { .step = st, .start_ns = t0 };
			rs.m[TS_M_COMPUTE] = jitter(&seed, 30, 0.02);
			rs.m[TS_M_COLLECTIVE] = jitter(&seed, 5, 0.02) + (r == 2 ? 7 : 0);
			rs.m[TS_M_LAUNCH] = jitter(&seed, 3, 0.02);
			rs.end_ns = t0 + 40 * MS;
			assert_int_equal(ts_job_add_step(j, r, 4, &rs), 0);
		}
		ts_job_tick(j, t0 + 50 * MS);
	}
	const struct ts_job_result *r = ts_job_result(j);
	assert_int_equal(r->nslow, 1);
	assert_int_equal(r->slow[0].rank, 2);
	assert_string_equal(r->slow[0].cause, "HostCPU");
	assert_non_null(strstr(r->slow[0].evidence, "preempted by stress"));
	ts_job_free(j);
}

/* One step of two synchronous ranks: rank 1 gets extra ms in metric m (and launch),
 * rank 0 waits for it in the collective. */
static void two_ranks_step(struct ts_job *j, uint64_t st, unsigned *seed, enum ts_metric m,
			   double extra, double launch_extra)
{
	double base[TS_M_COUNT] = { 30, 5, 0.5, 20, 0 };
	uint64_t t0 = 1000000 * MS + st * 100 * MS;

	for (int r = 0; r < 2; r++) {
		struct ts_rank_step rs = { .step = st, .start_ns = t0 };
		for (int k = 0; k < TS_M_COUNT; k++)
			rs.m[k] = jitter(seed, base[k], 0.03);
		if (r == 1)
			rs.m[m] += extra, rs.m[TS_M_LAUNCH] += launch_extra;
		else
			rs.m[TS_M_COLLECTIVE] += extra + launch_extra;
		rs.end_ns = t0 + (uint64_t)((56 + extra + launch_extra) * MS);
		assert_int_equal(ts_job_add_step(j, r, 2, &rs), 0);
	}
}

/* Two ranks, rank 1's host starved from step 100 (8 busy loops on its cores): its GPU
 * waits for launches, so its compute (device-busy estimate) and launch times grow, and
 * its run-queue delay with them. The agent's samples come a second apart and tell of the
 * second before them: the steps' run-queue delay lags theirs. Named HostCPU with the
 * preemptor from the start, never Compute, and within 10 steps of the compute alarm. */
static void test_starved_host_two_ranks(void **state)
{
	struct ts_params p;
	struct ts_job *j;
	unsigned seed = 5;
	uint64_t first = 0;
	bool other_cause = false;

	(void)state;
	synthetic_defaults(&p);
	assert_int_equal(ts_job_new(&j, "ns", "starved", 2, &p), 0);
	for (uint64_t st = 0; st < 200; st++) {
		uint64_t now = 1000000 * MS + st * 100 * MS;
		bool on = st >= 100;
		/* the steps of (st - 10, st] that were starved */
		double share = st < 100 ? 0 : st >= 110 ? 1 : (double)(st - 100 + 1) / 10;
		for (int r = 0; r < 2 && st % 10 == 0; r++) {
			struct ts_host_view v = { .valid = true, .time_ns = now, .runq_ms_per_s = 2 };
			if (r == 1 && share > 0) {
				v.runq_ms_per_s = 2 + 1098 * share, v.top_pid = 4242;
				v.top_ms_per_s = 900 * share;
				snprintf(v.top_comm, sizeof(v.top_comm), "stress");
			}
			ts_job_host_view(j, r, &v);
		}
		two_ranks_step(j, st, &seed, TS_M_COMPUTE, on ? 28 : 0, on ? 12 : 0);
		ts_job_tick(j, now);
		const struct ts_job_result *r = ts_job_result(j);
		for (int i = 0; i < r->nslow; i++) {
			other_cause |= strcmp(r->slow[i].cause, "HostCPU") != 0;
			if (!first)
				first = st;
		}
	}
	print_message("starved from step 100: first named at step %llu\n",
		      (unsigned long long)first);
	assert_false(other_cause);
	assert_true(first >= 100 && first <= 115);
	const struct ts_job_result *r = ts_job_result(j);
	assert_int_equal(r->nslow, 1);
	assert_int_equal(r->slow[0].rank, 1);
	assert_string_equal(r->slow[0].cause, "HostCPU");
	assert_non_null(strstr(r->slow[0].evidence, "the host starves it"));
	assert_non_null(strstr(r->slow[0].evidence, "preempted by stress (pid 4242"));
	assert_null(strstr(r->slow[0].evidence, "launches wait for the busy GPU"));
	ts_job_free(j);
}

/* Two ranks, rank 1's data loader waits 170 ms every other step from step 100 (two
 * workers that take turns): the median step is the short one, the job runs at half its
 * speed. Named Storage; the job is fail-slow; lost time gives rank 1 most of it. */
static void test_every_other_step_waits(void **state)
{
	struct ts_params p;
	struct ts_job *j;
	unsigned seed = 9;

	(void)state;
	synthetic_defaults(&p);
	assert_int_equal(ts_job_new(&j, "ns", "loader", 2, &p), 0);
	for (uint64_t st = 0; st < 200; st++) {
		two_ranks_step(j, st, &seed, TS_M_DATALOADER, st >= 100 && st % 2 ? 170 : 0, 0);
		ts_job_tick(j, 1000000 * MS + st * 100 * MS);
	}
	const struct ts_job_result *r = ts_job_result(j);
	assert_int_equal(r->state, TS_STATE_FAILSLOW);
	assert_true(r->degradation > 0.5);
	assert_int_equal(r->nslow, 1);
	assert_int_equal(r->slow[0].rank, 1);
	assert_string_equal(r->slow[0].cause, "Storage");
	assert_true(r->lost.valid);
	assert_true(r->lost.nranks >= 1);
	assert_int_equal(r->lost.rank[0].rank, 1);
	assert_int_equal(r->lost.rank[0].cause, TS_CAUSE_STORAGE);
	/* 85 ms of a 141 ms mean step: 60 % */
	assert_true(r->lost.rank[0].share > 0.5 && r->lost.rank[0].share < 0.7);
	assert_true(r->lost.cause[TS_CAUSE_STORAGE] > 0.5);
	ts_job_free(j);
}

/* GPU time lost against the truth: 8 ranks, rank 5's compute +15 ms a step from step 40
 * of 200, every step then 15 ms longer on 8 GPUs: 160 x 15 ms x 8 = 19.2 GPU-seconds,
 * nearly all of it Compute and rank 5's; the steps before cost nothing. */
static void test_gpu_time_lost(void **state)
{
	struct sim s = { 8, 5, 40, TS_M_COMPUTE, 1.5, 7 };
	uint64_t first;
	const struct ts_job_result *r = run(&s, 200, &first);
	double truth = 160 * 0.015 * 8;

	(void)state;
	print_message("GPU time lost %.3f s (Compute %.3f, data %.3f, stages %.3f) through step "
		      "%llu; truth %.3f s\n", r->gpu_lost.total_s, r->gpu_lost.cause_s[TS_CAUSE_COMPUTE],
		      r->gpu_lost.data_s, r->gpu_lost.stages_s,
		      (unsigned long long)r->gpu_lost.through_step, truth);
	assert_true(fabs(r->gpu_lost.total_s - truth) < 0.05 * truth);
	assert_true(r->gpu_lost.cause_s[TS_CAUSE_COMPUTE] > 0.9 * r->gpu_lost.total_s);
}

/* A one-node job of two ranks whose host is starved as a whole from step 100: both
 * ranks slow alike, none stands out; the job is fail-slow and its reason says what grew
 * against the job's own start: run-queue delay, HostCPU. */
static void test_whole_node_starved(void **state)
{
	struct ts_params p;
	struct ts_job *j;
	unsigned seed = 3;

	(void)state;
	synthetic_defaults(&p);
	assert_int_equal(ts_job_new(&j, "ns", "node", 2, &p), 0);
	for (uint64_t st = 0; st < 200; st++) {
		uint64_t t0 = 1000000 * MS + st * 100 * MS;
		bool on = st >= 100;
		for (int r = 0; r < 2 && st % 10 == 0; r++) {
			struct ts_host_view v = { .valid = true, .time_ns = t0,
						  .runq_ms_per_s = on ? 600 : 2 };
			ts_job_host_view(j, r, &v);
		}
		for (int r = 0; r < 2; r++) {
			struct ts_rank_step rs = { .step = st, .start_ns = t0,
						   .end_ns = t0 + (uint64_t)((on ? 90 : 56) * MS) };
			rs.m[TS_M_COMPUTE] = jitter(&seed, on ? 50 : 30, 0.03);
			rs.m[TS_M_COLLECTIVE] = jitter(&seed, 5, 0.03);
			rs.m[TS_M_LAUNCH] = jitter(&seed, on ? 12 : 0.5, 0.03);
			rs.m[TS_M_DATALOADER] = jitter(&seed, 20, 0.03);
			assert_int_equal(ts_job_add_step(j, r, 2, &rs), 0);
		}
		ts_job_tick(j, t0 + 90 * MS);
	}
	const struct ts_job_result *r = ts_job_result(j);
	assert_int_equal(r->state, TS_STATE_FAILSLOW);
	assert_int_equal(r->nslow, 0);
	assert_non_null(strstr(r->reason, "the whole job: runq"));
	assert_non_null(strstr(r->reason, "HostCPU"));
	ts_job_free(j);
}

static void test_healthy_names_nobody(void **state)
{
	struct sim s = { 8, -1, 0, TS_M_COMPUTE, 1, 3 };
	uint64_t first;
	const struct ts_job_result *r;

	(void)state;
	r = run(&s, 300, &first);
	assert_int_equal(r->state, TS_STATE_HEALTHY);
	assert_int_equal(r->alarms_raised, 0);
	assert_int_equal(first, 0);
	assert_int_equal(r->steps_evaluated, 300);
}

static void test_hang_and_finish(void **state)
{
	struct ts_params p;
	struct ts_job *j;
	struct sim s = { 4, -1, 0, TS_M_COMPUTE, 1, 1 };
	uint64_t t = 1000000 * MS;

	(void)state;
	synthetic_defaults(&p);
	p.hang_timeout_s = 5;
	p.traces.window_steps = 1;
	assert_int_equal(ts_job_new(&j, "ns", "hang", 4, &p), 0);
	for (int st = 0; st < 20; st++) {
		feed_step(j, &s, (uint64_t)st);
		ts_job_tick(j, t + (uint64_t)st * 100 * MS);
	}
	assert_int_equal(ts_job_result(j)->state, TS_STATE_HEALTHY);
	/* ranks 0-2 report step 20, rank 3 never does */
	struct ts_rank_step rs = { .step = 20, .start_ns = t, .end_ns = t + 50 * MS };
	for (int r = 0; r < 3; r++)
		ts_job_add_step(j, r, 4, &rs);
	ts_job_tick(j, t + 3000 * MS);
	assert_int_equal(ts_job_result(j)->state, TS_STATE_HEALTHY);
	assert_true(ts_job_tick(j, t + 9000 * MS));
	assert_int_equal(ts_job_result(j)->state, TS_STATE_HANG);
	assert_non_null(strstr(ts_job_result(j)->reason, "no step completed"));
	/* a hung job has no step to come: its report's trace is the newest step's window */
	uint8_t got[16], want[16];
	assert_true(ts_job_report_trace(j, got));
	ts_window_trace(ts_job_trace_id(j), 20, want);
	assert_memory_equal(got, want, 16);
	/* once every rank has exited, a quiet job is finished, not hung */
	for (int r = 0; r < 4; r++)
		ts_job_rank_final(j, r);
	ts_job_tick(j, t + 20000 * MS);
	assert_int_not_equal(ts_job_result(j)->state, TS_STATE_HANG);
	/* data for an analysed step is late: counted, not used */
	rs.step = 3;
	assert_int_equal(ts_job_add_step(j, 1, 4, &rs), 0);
	assert_int_equal(ts_job_late_steps(j), 1);
	assert_int_equal(ts_job_add_step(j, p.limits.max_world, 4, &rs), -ERANGE);
	ts_job_free(j);
}

static void test_missing_rank_does_not_stall(void **state)
{
	struct ts_params p;
	struct ts_job *j;
	uint64_t t = 1000000 * MS;

	(void)state;
	synthetic_defaults(&p);
	assert_int_equal(ts_job_new(&j, "ns", "gap", 4, &p), 0);
	/* rank 2 lost its data: steps are still analysed once lag_steps behind and
	 * lateness_s after they came */
	for (int st = 0; st < 60; st++) {
		struct ts_rank_step rs = { .step = (uint64_t)st, .start_ns = t, .end_ns = t + 50 * MS,
					   .m = { 30, 5, 0.5, 20, 0 } };
		for (int r = 0; r < 4; r++)
			if (r != 2)
				ts_job_add_step(j, r, 4, &rs);
		ts_job_tick(j, t + (uint64_t)st * 100 * MS);
	}
	assert_true(ts_job_result(j)->steps_evaluated < 60 - (uint64_t)p.lag_steps);
	ts_job_tick(j, t + 6000 * MS + (uint64_t)(p.lateness_s * 1000) * MS);
	assert_int_equal(ts_job_result(j)->steps_evaluated, 60 - (uint64_t)p.lag_steps);
	ts_job_free(j);
}

/* A step counter that jumps: refused past limits.max_step_jump; a jump within it is
 * passed over in one go (no walk over the gap, which 2^62 would make endless). */
static void test_step_jump(void **state)
{
	struct ts_params p;
	struct ts_job *j;
	struct sim s = { 4, -1, 0, TS_M_COMPUTE, 1, 5 };
	uint64_t t = 1000000 * MS;

	(void)state;
	synthetic_defaults(&p);
	p.limits.max_step_jump = 2000000000;
	p.limits.reorder_steps = 32; /* a ring that does not grow past 32 rows ... */
	p.lateness_s = 0;            /* ... and steps judged as soon as lag_steps behind */
	assert_int_equal(ts_job_new(&j, "ns", "jump", 4, &p), 0);
	for (int st = 0; st < 30; st++) {
		feed_step(j, &s, (uint64_t)st);
		ts_job_tick(j, t + (uint64_t)st * 100 * MS);
	}
	struct ts_rank_step rs = { .step = 1ull << 62, .start_ns = t, .end_ns = t + 50 * MS };
	assert_int_equal(ts_job_add_step(j, 0, 4, &rs), -EDOM);
	/* a jump of 1.5e9 steps is allowed here: the gap costs one pass */
	for (int st = 0; st < 40; st++)
		feed_step(j, &s, 1500000000ull + (uint64_t)st);
	ts_job_tick(j, t + 9000 * MS);
	assert_true(ts_job_result(j)->last_step >= 1500000000ull);
	assert_true(ts_job_result(j)->steps_evaluated >= 30 + 40 - 1 - (uint64_t)p.lag_steps);
	/* a single far step ahead of a held older one forces that one out in one go */
	rs.step = 1500000000ull + 1000000;
	assert_int_equal(ts_job_add_step(j, 0, 4, &rs), 0);
	rs.step = 1500000000ull + 1000000 + 32;
	assert_int_equal(ts_job_add_step(j, 1, 4, &rs), 0);
	ts_job_tick(j, t + 9100 * MS);
	/* a rank a full ring of steps behind another: late, not held (its row would sit
	 * below the evaluation horizon, and a later step there would spin for ever) */
	uint64_t top = ts_job_result(j)->last_step + 2 * (uint64_t)p.lag_steps;
	rs.step = top + 40;
	assert_int_equal(ts_job_add_step(j, 2, 4, &rs), 0);
	uint64_t late = ts_job_late_steps(j);
	rs.step = top + 40 - 32;
	assert_int_equal(ts_job_add_step(j, 3, 4, &rs), 0);
	assert_int_equal(ts_job_late_steps(j), late + 1);
	rs.step = top + 40 + 32;
	assert_int_equal(ts_job_add_step(j, 3, 4, &rs), 0);
	ts_job_tick(j, t + 9200 * MS);
	ts_job_free(j);
}

/* A hang report holds the job in Hang only until the hung rank's steps resume. */
static void test_hang_clears(void **state)
{
	struct ts_params p;
	struct ts_job *j;
	struct sim s = { 4, -1, 0, TS_M_COMPUTE, 1, 7 };
	uint64_t t = 1000000 * MS;

	(void)state;
	synthetic_defaults(&p);
	assert_int_equal(ts_job_new(&j, "ns", "stall", 4, &p), 0);
	for (int st = 0; st < 30; st++) {
		feed_step(j, &s, (uint64_t)st);
		ts_job_tick(j, t + (uint64_t)st * 100 * MS);
	}
	ts_job_rank_hang(j, 2, "allreduce", 0xabc, 9, 400 * 1000 * MS, "stacks");
	ts_job_tick(j, t + 3100 * MS);
	assert_int_equal(ts_job_result(j)->state, TS_STATE_HANG);
	assert_int_equal(ts_job_result(j)->hang_rank, 2);
	for (int st = 30; st < 40; st++) {
		feed_step(j, &s, (uint64_t)st);
		ts_job_tick(j, t + (uint64_t)st * 100 * MS + 3000 * MS);
	}
	assert_int_equal(ts_job_result(j)->state, TS_STATE_HEALTHY);
	assert_int_equal(ts_job_result(j)->hang_rank, -1);
	/* quiet since the last tick that saw steps, then since all ranks ended */
	assert_int_equal(ts_job_quiet_since_ns(j), t + 39 * 100 * MS + 3000 * MS);
	for (int r = 0; r < 4; r++)
		ts_job_rank_final(j, r);
	ts_job_tick(j, t + 9000 * MS);
	assert_int_equal(ts_job_quiet_since_ns(j), t + 9000 * MS);
	ts_job_tick(j, t + 9500 * MS);
	assert_int_equal(ts_job_quiet_since_ns(j), t + 9000 * MS);
	ts_job_free(j);
}

/* A rank that stops without an exit record while the others exit is lost: the job
 * ended abnormally (Hang, saying so), and the evaluated steps it missed are counted. */
static void test_rank_lost(void **state)
{
	struct ts_params p;
	struct ts_job *j;
	uint64_t t = 1000000 * MS;

	(void)state;
	synthetic_defaults(&p);
	assert_int_equal(ts_job_new(&j, "ns", "killed", 4, &p), 0);
	for (int st = 0; st < 40; st++) {
		struct ts_rank_step rs = { .step = (uint64_t)st, .start_ns = t, .end_ns = t + 50 * MS,
					   .m = { 30, 5, 0.5, 20, 0 } };
		for (int r = 0; r < 4; r++)
			if (r != 3 || st < 20)
				ts_job_add_step(j, r, 4, &rs);
		ts_job_tick(j, t + (uint64_t)st * 100 * MS);
	}
	for (int r = 0; r < 3; r++)
		ts_job_rank_final(j, r);
	ts_job_tick(j, t + 5000 * MS);
	assert_int_equal(ts_job_result(j)->nlost, 0);
	ts_job_tick(j, t + 36000 * MS);
	ts_job_tick(j, t + 37000 * MS); /* the lost rank no longer holds its steps back */
	const struct ts_job_result *res = ts_job_result(j);
	assert_int_equal(res->nlost, 1);
	assert_true(ts_job_rank(j, 3)->lost);
	assert_int_equal(res->state, TS_STATE_HANG);
	assert_non_null(strstr(res->reason, "rank 3 (last step 19) lost"));
	assert_int_equal(res->steps_evaluated, 40);
	assert_int_equal(res->rank_steps_missing, 20);
	assert_int_equal(res->rank_steps_expected, 4 * res->steps_evaluated);
	assert_int_equal(ts_job_quiet_since_ns(j), t + 36000 * MS);
	ts_job_free(j);
}

/* A backlog drained rank by rank (a relay restarted after a pause): every rank's 300
 * steps come one rank after another within the lateness bound. The ring grows to hold
 * them, nothing is late, and the verdict is the one in-order data gives. Past the bound
 * (a tick lateness_s later) a step still missing ranks is judged without them. */
static void test_backlog_reordered(void **state)
{
	struct sim s = { 8, 5, 40, TS_M_COMPUTE, 1.5, 7 };
	struct ts_params p;
	struct ts_job *j;
	uint64_t now = 5000000 * MS;
	const struct ts_job_result *r;

	(void)state;
	synthetic_defaults(&p);
	assert_int_equal(ts_job_new(&j, "ns", "backlog", s.world, &p), 0);
	ts_job_tick(j, now);
	for (int rank = 0; rank < s.world; rank++) {
		struct sim one = s;
		for (uint64_t st = 0; st < 300; st++) { /* feed_step for one rank only */
			struct ts_rank_step rs = { .step = st, .start_ns = 1000000 * MS + st * 100 * MS };
			for (int m = 0; m < TS_M_COUNT; m++)
				rs.m[m] = jitter(&one.seed, m == TS_M_COMPUTE ? 30 : 5, 0.03);
			if (rank == s.slow_rank && st >= 40)
				rs.m[TS_M_COMPUTE] *= s.factor;
			rs.end_ns = rs.start_ns + 56 * MS;
			assert_int_equal(ts_job_add_step(j, rank, s.world, &rs), 0);
		}
		ts_job_tick(j, now += 100 * MS);
	}
	r = ts_job_result(j);
	assert_int_equal(ts_job_late_steps(j), 0);
	assert_int_equal(r->rank_steps_missing, 0);
	assert_int_equal(r->steps_evaluated, 300);
	assert_int_equal(r->nslow, 1);
	assert_int_equal(r->slow[0].rank, 5);
	assert_string_equal(r->slow[0].cause, "Compute");

	/* rank 7 stops at 300 while the others go on: judged without it once late */
	for (uint64_t st = 300; st < 340; st++)
		for (int rank = 0; rank < 7; rank++) {
			struct ts_rank_step rs = { .step = st, .start_ns = 1000000 * MS + st * 100 * MS };
			rs.end_ns = rs.start_ns + 56 * MS;
			assert_int_equal(ts_job_add_step(j, rank, s.world, &rs), 0);
		}
	ts_job_tick(j, now += 100 * MS);
	assert_int_equal(r->steps_evaluated, 300);
	ts_job_tick(j, now += (uint64_t)(p.lateness_s * 1000) * MS);
	assert_int_equal(r->steps_evaluated, 340 - p.lag_steps);
	assert_int_equal(r->rank_steps_missing, 340 - p.lag_steps - 300);
	ts_job_free(j);
}

/* ts_job_bytes budgets memory: it grows with the world and stays near what a rank costs
 * (a 65,536-rank job used to cost about 3 KB a rank). */
static void test_job_bytes(void **state)
{
	struct ts_params p;
	size_t small, big;

	(void)state;
	synthetic_defaults(&p);
	small = ts_job_bytes(&p, 8);
	big = ts_job_bytes(&p, 65536);
	assert_true(big > small);
	print_message("job state: %zu bytes for 8 ranks, %.0f bytes a rank at 65,536\n", small,
		      (double)big / 65536);
	assert_true(big / 65536 > 1000 && big / 65536 < 8192);
}

/* Layouts list dimensions fastest first; dp and cp are replicas, the rest split peers. */
static void test_layout(void **state)
{
	struct ts_layout l;
	char err[160], coords[64];

	(void)state;
	assert_int_equal(ts_layout_parse(&l, "tp2-pp4-dp8", err, sizeof(err)), 0);
	assert_int_equal(ts_layout_world(&l), 64);
	assert_int_equal(ts_layout_classes(&l), 8);
	/* rank 11 = tp 1, pp 1, dp 1; rank 3 = tp 1, pp 1, dp 0: peers */
	assert_int_equal(ts_layout_class(&l, 11), ts_layout_class(&l, 3));
	assert_int_not_equal(ts_layout_class(&l, 11), ts_layout_class(&l, 9));
	assert_int_equal(ts_layout_class(&l, 64), -1);
	assert_int_equal(ts_layout_coord(&l, 11, "pp"), 1);
	assert_int_equal(ts_layout_coord(&l, 11, "ep"), -1);
	ts_layout_coords(&l, 11, coords, sizeof(coords));
	assert_string_equal(coords, "tp1-pp1-dp1");
	assert_int_equal(ts_layout_parse(&l, "pp4,dp4", err, sizeof(err)), 0);
	/* Megatron's own form: its default order puts the pipeline outermost */
	assert_int_equal(ts_layout_parse(&l, "megatron:pp=4,tp=2,dp=8", err, sizeof(err)), 0);
	assert_int_equal(ts_layout_world(&l), 64);
	assert_int_equal(ts_layout_coord(&l, 17, "tp"), 1);
	assert_int_equal(ts_layout_coord(&l, 17, "dp"), 0);
	assert_int_equal(ts_layout_coord(&l, 17, "pp"), 1);
	assert_int_equal(ts_layout_parse(&l, "megatron:tp=2,pp=2,order=pp-tp", err, sizeof(err)), 0);
	assert_int_equal(ts_layout_coord(&l, 1, "pp"), 1);
	assert_int_equal(ts_layout_parse(&l, "megatron:tp=2,xx=2", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'xx' is not in the order"));
	assert_int_equal(ts_layout_parse(&l, "megatron:tp2", err, sizeof(err)), -EINVAL);
	assert_int_equal(ts_layout_parse(&l, "pp0-dp4", err, sizeof(err)), -EINVAL);
	assert_int_equal(ts_layout_parse(&l, "pp4-pp2", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "twice"));
	assert_int_equal(ts_layout_parse(&l, "4pp", err, sizeof(err)), -EINVAL);
	assert_int_equal(ts_layout_parse(&l, "", err, sizeof(err)), -EINVAL);
}

/* The communicators of rank k in a pp4-dp4 job (stage k % 4, replica k / 4): its
 * pipeline's (sends and receives), its stage's data-parallel one, and the world's. */
static uint64_t pp_comm(int d, int k)
{
	return d == 0 ? 0xa00u + (unsigned)k / 4 : d == 1 ? 0xb00u + (unsigned)k % 4 : 0xab;
}

static void pp_groups(struct ts_job *j, bool layout)
{
	char g[3][64];
	const char *gp[3] = { "layout:pp4-dp4", g[1], g[2] };

	for (int k = 0; k < 16; k++) {
		snprintf(g[1], sizeof(g[1]), "nccl:%llx:16:%d", (unsigned long long)pp_comm(2, k), k);
		snprintf(g[2], sizeof(g[2]), "nccl:%llx:4:%d", (unsigned long long)pp_comm(1, k),
			 k / 4);
		ts_job_rank_groups(j, k, layout ? gp : gp + 1, layout ? 3 : 2);
	}
}

/* How the ranks' peers are known: */
enum { BY_COMMS, BY_LAYOUT, BY_TIMES };

/* 4 stages x 4 replicas, stage 3 heavier by design: healthy under its layout, with no
 * layout by the peers its communicators give, with neither (gloo) by the ranks' own
 * times; then one rank of stage 1 slows by 10 % and is named against its stage's peers
 * alone. */
static void pipeline_peers(int how)
{
	bool layout = how == BY_LAYOUT;
	struct ts_params p;
	struct ts_job *j;
	unsigned seed = 5;

	synthetic_defaults(&p);
	assert_int_equal(ts_job_new(&j, "ns", "pp", 16, &p), 0);
	if (how != BY_TIMES)
		pp_groups(j, layout);
	for (int st = 0; st < 200; st++) {
		uint64_t t0 = 1000000 * MS + (uint64_t)st * 100 * MS;
		for (int k = 0; k < 16; k++) {
			struct ts_rank_step rs = { .step = (uint64_t)st, .start_ns = t0,
						   .end_ns = t0 + 90 * MS };
			double work = k % 4 == 3 ? 1.25 : 1.0;
			rs.m[TS_M_COMPUTE] = jitter(&seed, 60 * work, 0.02);
			if (k == 5 && st >= 120)
				rs.m[TS_M_COMPUTE] *= 1.10;
			rs.m[TS_M_DATALOADER] = jitter(&seed, 4, 0.02);
			rs.m[TS_M_LAUNCH] = jitter(&seed, 2, 0.02);
			rs.m[TS_M_COLLECTIVE] = 90 - rs.m[TS_M_COMPUTE];
			rs.m[TS_M_RUNQ] = rs.m[TS_M_OFFCPU] = NAN;
			for (int d = 0; d < 3 && how != BY_TIMES; d++)
				rs.comm[rs.ncomm++] = (struct ts_comm_time){
					.id = pp_comm(d, k), .nranks = d == 2 ? 16 : 4, .count = 2,
					.p2p = d == 0 ? 2 : 0, .ms = 3, .mb = 8 };
			assert_int_equal(ts_job_add_step(j, k, 16, &rs), 0);
		}
		ts_job_tick(j, t0 + 90 * MS);
		if (st == 119) {
			assert_int_equal(ts_job_result(j)->nslow, 0);
			assert_int_equal(ts_job_result(j)->state, TS_STATE_HEALTHY);
		}
	}
	const struct ts_job_result *r = ts_job_result(j);
	assert_int_equal(r->nslow, 1);
	assert_int_equal(r->slow[0].rank, 5);
	assert_string_equal(r->slow[0].cause, "Compute");
	assert_true(r->slow[0].onset_step >= 118 && r->slow[0].onset_step <= 123);
	assert_true(r->slow[0].confirmed_step <= 130);
	assert_non_null(strstr(r->slow[0].evidence, layout ? "3 peers under layout pp4-dp4"
					: how == BY_COMMS ? "3 peers by their communicators"
					: "3 peers inferred from their times"));
	/* a layout that does not cover the job is refused, and said */
	char err[160];
	assert_int_equal(ts_job_set_layout(j, "pp2-dp4", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "covers 8 ranks"));
	ts_job_free(j);
}

static void test_pipeline_peers(void **state)
{
	(void)state;
	pipeline_peers(BY_LAYOUT);
}

static void test_pipeline_peers_from_comms(void **state)
{
	(void)state;
	pipeline_peers(BY_COMMS);
}

static void test_pipeline_peers_from_times(void **state)
{
	(void)state;
	pipeline_peers(BY_TIMES);
}

/* Seven ranks wait in AllReduce seq 31 on their communicator; rank 3 never entered it.
 * The culprit is named with the op, and the hang stays in the history once the job
 * ends. */
static void test_hang_culprit(void **state)
{
	struct ts_params p;
	struct ts_job *j;
	struct sim s = { 8, -1, 0, TS_M_COMPUTE, 1, 9 };
	uint64_t t = 1000000 * MS;
	const char *g[] = { "nccl:c0ffee:8:0" };

	(void)state;
	synthetic_defaults(&p);
	assert_int_equal(ts_job_new(&j, "ns", "hung", 8, &p), 0);
	for (int k = 0; k < 8; k++)
		ts_job_rank_groups(j, k, g, 1);
	for (int st = 0; st < 30; st++) {
		feed_step(j, &s, (uint64_t)st);
		ts_job_tick(j, t + (uint64_t)st * 100 * MS);
	}
	for (int k = 0; k < 8; k++)
		if (k != 3)
			ts_job_rank_hang(j, k, "AllReduce", 0xc0ffee, 31, 300 * 1000 * MS,
					 k == 0 ? "File \"train.py\", line 9" : "");
	ts_job_tick(j, t + 400 * 1000 * MS);
	const struct ts_job_result *r = ts_job_result(j);
	assert_int_equal(r->state, TS_STATE_HANG);
	assert_int_equal(r->nculprits, 1);
	assert_int_equal(r->culprits[0], 3);
	assert_int_equal(r->hang_rank, 3);
	assert_int_equal(r->hang_waiting, 7);
	assert_int_equal(r->hang_members, 8);
	assert_int_equal(r->hang_seq, 31);
	assert_string_equal(r->hang_op, "AllReduce");
	assert_int_equal(r->hang_stacks_rank, 0);
	assert_non_null(strstr(r->reason, "rank 3 did not enter AllReduce"));
	assert_non_null(strstr(r->reason, "7 of 8 ranks wait in"));
	for (int k = 0; k < 8; k++)
		ts_job_rank_final(j, k);
	ts_job_tick(j, t + 401 * 1000 * MS);
	assert_int_not_equal(r->state, TS_STATE_HANG);
	assert_true(r->nhistory >= 1);
	const struct ts_event *ev = &r->history[r->nhistory - 1];
	assert_int_equal(ev->kind, TS_EV_HANG);
	assert_false(ev->open);
	assert_non_null(strstr(ev->text, "rank 3 did not enter"));
	ts_job_free(j);
}

/* Two ranks, as on a 2-GPU machine: rank 0 waits in AllReduce seq 407, rank 1 sleeps in
 * Python. One of two reports is no majority, so the culprit is named after
 * failslow.hang_culprit_wait_s. Then the job ends: rank 0 gives up (its last record
 * ends step 30, then its exit record), rank 1 is killed. The hang is not over for that;
 * the report and its history keep the culprit. */
/* Four ranks, rank 3 never enters: the three others report, then their sync gives up
 * and two of them exit with their exit records while the rest die: still victims; the
 * naming made while three waited stands (the NPU e2e failed 1 run in 11 so). */
static void test_hang_victims_exit(void **state)
{
	struct ts_params p;
	struct ts_job *j;
	struct sim s = { 4, -1, 0, TS_M_COMPUTE, 1, 9 };
	uint64_t t = 1000000 * MS;
	const char *g[1];
	char grp[4][32];

	(void)state;
	synthetic_defaults(&p);
	assert_int_equal(ts_job_new(&j, "ns", "npu", 4, &p), 0);
	for (int k = 0; k < 4; k++) {
		snprintf(grp[k], sizeof(grp[k]), "nccl:ea46:4:%d", k);
		g[0] = grp[k];
		ts_job_rank_groups(j, k, g, 1);
	}
	for (int st = 0; st < 30; st++) {
		feed_step(j, &s, (uint64_t)st);
		ts_job_tick(j, t + (uint64_t)st * 100 * MS);
	}
	for (int k = 0; k < 3; k++)
		ts_job_rank_hang(j, k, "AllReduce", 0xea46, 61, 2000 * MS, "");
	ts_job_tick(j, t + 5000 * MS);
	const struct ts_job_result *r = ts_job_result(j);
	assert_int_equal(r->nculprits, 1);
	assert_int_equal(r->culprits[0], 3);
	ts_job_rank_final(j, 0);
	ts_job_rank_final(j, 1);
	ts_job_rank_died(j, 2);
	ts_job_rank_died(j, 3);
	ts_job_tick(j, t + 11000 * MS);
	assert_int_equal(r->state, TS_STATE_HANG);
	assert_int_equal(r->nculprits, 1);
	assert_int_equal(r->culprits[0], 3);
	assert_int_equal(r->hang_waiting, 3);
	assert_int_equal(r->hang_seq, 61);
	ts_job_free(j);
}

static void test_hang_killed(void **state)
{
	struct ts_params p;
	struct ts_job *j;
	struct sim s = { 2, -1, 0, TS_M_COMPUTE, 1, 9 };
	uint64_t t = 1000000 * MS;
	const char *g0[] = { "nccl:9a42:2:0" }, *g1[] = { "nccl:9a42:2:1" };

	(void)state;
	synthetic_defaults(&p);
	assert_int_equal(ts_job_new(&j, "ns", "killed", 2, &p), 0);
	ts_job_rank_groups(j, 0, g0, 1);
	ts_job_rank_groups(j, 1, g1, 1);
	for (int st = 0; st < 30; st++) {
		feed_step(j, &s, (uint64_t)st);
		ts_job_tick(j, t + (uint64_t)st * 100 * MS);
	}
	t += 30 * 100 * MS + 20000 * MS;
	ts_job_tick(j, t);
	ts_job_rank_hang(j, 0, "AllReduce", 0x9a42, 407, 20000 * MS, "");
	ts_job_tick(j, t);
	const struct ts_job_result *r = ts_job_result(j);
	assert_int_equal(r->state, TS_STATE_HANG);
	assert_int_equal(r->nculprits, 0);
	assert_false(ts_job_tick(j, t + 1000 * MS)); /* nothing new: no report to write */
	/* no step evaluated, but the culprit named is news: the report is written again */
	assert_true(ts_job_tick(j, t + (uint64_t)(p.hang_culprit_wait_s * 1000 + 100) * MS));
	assert_int_equal(r->nculprits, 1);
	assert_int_equal(r->culprits[0], 1);
	assert_non_null(strstr(r->reason, "rank 1 did not enter AllReduce"));
	assert_non_null(strstr(r->reason, "rank 1 is in no collective (last step 29)"));
	struct ts_rank_step rs = { .step = 30, .start_ns = t - 20000 * MS, .end_ns = t + 12000 * MS };
	assert_int_equal(ts_job_add_step(j, 0, 2, &rs), 0);
	ts_job_rank_final(j, 0);
	ts_job_rank_died(j, 1);
	for (int i = 0; i < 5; i++)
		ts_job_tick(j, t + (uint64_t)(13000 + 1000 * i) * MS);
	assert_int_equal(r->state, TS_STATE_HANG);
	assert_int_equal(r->nculprits, 1);
	assert_non_null(strstr(r->reason, "rank 1 did not enter AllReduce"));
	assert_non_null(strstr(r->reason, "; then the job ended abnormally"));
	const struct ts_event *ev = &r->history[r->nhistory - 1];
	assert_int_equal(ev->kind, TS_EV_HANG);
	assert_non_null(strstr(ev->text, "rank 1 did not enter AllReduce"));
	assert_null(strstr(ev->text, "lost"));
	ts_job_free(j);
}

/* Each process names its communicator differently and none announced one: no majority
 * agrees on an op, so nobody is named a culprit, however long the hang lasts. */
static void test_hang_no_guess(void **state)
{
	struct ts_params p;
	struct ts_job *j;
	struct sim s = { 4, -1, 0, TS_M_COMPUTE, 1, 9 };
	uint64_t t = 1000000 * MS;

	(void)state;
	synthetic_defaults(&p);
	assert_int_equal(ts_job_new(&j, "ns", "guess", 4, &p), 0);
	for (int st = 0; st < 20; st++) {
		feed_step(j, &s, (uint64_t)st);
		ts_job_tick(j, t + (uint64_t)st * 100 * MS);
	}
	ts_job_rank_hang(j, 0, "AllReduce", 0x1000, 21, 300 * 1000 * MS, "");
	ts_job_rank_hang(j, 1, "AllReduce", 0x2000, 21, 300 * 1000 * MS, "");
	ts_job_tick(j, t + 4000 * 1000 * MS);
	assert_int_equal(ts_job_result(j)->state, TS_STATE_HANG);
	assert_int_equal(ts_job_result(j)->nculprits, 0);
	ts_job_free(j);
}

/* A job of world ranks that announced no communicator, 20 steps done by T0 + 1.9 s. */
#define T0 (1000000 * MS)
static struct ts_job *unannounced_job(int world, const char *name)
{
	struct ts_params p;
	struct ts_job *j;
	struct sim s = { world, -1, 0, TS_M_COMPUTE, 1, 11 };

	synthetic_defaults(&p);
	assert_int_equal(ts_job_new(&j, "ns", name, world, &p), 0);
	for (int st = 0; st < 20; st++) {
		feed_step(j, &s, (uint64_t)st);
		ts_job_tick(j, T0 + (uint64_t)st * 100 * MS);
	}
	return j;
}

#define GUESSED "communicator unknown: gloo or a custom barrier; the job's ranks taken as its members"

/* gloo: every hang watch says comm 0 and nobody announced a communicator. The job's ranks
 * stand for the members: once a majority waits in AllReduce seq 181, rank 5 (which never
 * entered) is named, the reason saying the members were guessed; once it enters too,
 * the op itself does not complete. */
static void test_hang_gloo_culprit(void **state)
{
	struct ts_job *j = unannounced_job(8, "gloo");
	const struct ts_job_result *r = ts_job_result(j);

	(void)state;
	for (int k = 0; k < 4; k++)
		ts_job_rank_hang(j, k, "AllReduce", 0, 181, 300 * 1000 * MS, "");
	ts_job_tick(j, T0 + 3000 * MS);
	assert_int_equal(r->state, TS_STATE_HANG);
	assert_int_equal(r->nculprits, 0); /* 4 of 8: no majority yet */
	for (int k = 4; k < 8; k++)
		if (k != 5)
			ts_job_rank_hang(j, k, "AllReduce", 0, 181, 300 * 1000 * MS, "");
	ts_job_tick(j, T0 + 4000 * MS);
	assert_int_equal(r->nculprits, 1);
	assert_int_equal(r->culprits[0], 5);
	assert_int_equal(r->hang_rank, 5);
	assert_int_equal(r->hang_waiting, 7);
	assert_int_equal(r->hang_members, 8);
	assert_int_equal(r->hang_comm, 0);
	assert_int_equal(r->hang_seq, 181);
	assert_non_null(strstr(r->reason, "rank 5 did not enter AllReduce (seq 181) that 7 of 8 "
				       "ranks wait in (" GUESSED ")"));
	assert_non_null(strstr(r->reason, "rank 5 is in no collective (last step 19)"));
	ts_job_rank_hang(j, 5, "AllReduce", 0, 181, 300 * 1000 * MS, "");
	ts_job_tick(j, T0 + 5000 * MS);
	assert_int_equal(r->state, TS_STATE_HANG);
	assert_int_equal(r->nculprits, 0);
	assert_non_null(strstr(r->reason, "all 8 ranks wait in AllReduce (seq 181; " GUESSED
				       "): every member entered, the op itself does not complete"));
	ts_job_free(j);
}

/* gloo, five ranks: rank 3 exited, rank 4 was killed, ranks 0-2 wait in a barrier (a
 * majority). Neither rank gone is named: the reason says every rank still running
 * entered, and the lost rank's account follows. */
static void test_hang_gloo_gone(void **state)
{
	struct ts_job *j = unannounced_job(5, "gone");
	const struct ts_job_result *r = ts_job_result(j);

	(void)state;
	ts_job_rank_final(j, 3);
	ts_job_rank_died(j, 4);
	for (int k = 0; k < 3; k++)
		ts_job_rank_hang(j, k, "Barrier", 0, 40, 300 * 1000 * MS, "");
	ts_job_tick(j, T0 + 3000 * MS);
	assert_int_equal(r->state, TS_STATE_HANG);
	assert_int_equal(r->nculprits, 0);
	assert_int_equal(r->hang_waiting, 3);
	assert_int_equal(r->hang_members, 5);
	assert_non_null(strstr(r->reason, "3 of 5 ranks wait in Barrier (seq 40; " GUESSED
				       "): every rank still running entered, the other 2 exited "
				       "or were lost; then the job ended abnormally: rank 4"));
	assert_null(strstr(r->reason, "did not enter"));
	assert_null(strstr(r->reason, "the op itself"));
	ts_job_free(j);
}

/* gloo: rank 2 is named once most ranks wait, then killed to end the job. It is no
 * longer running, but the naming stands; the lost ranks' account follows it. */
static void test_hang_gloo_named_then_lost(void **state)
{
	struct ts_job *j = unannounced_job(4, "killed");
	const struct ts_job_result *r = ts_job_result(j);

	(void)state;
	for (int k = 0; k < 4; k++)
		if (k != 2)
			ts_job_rank_hang(j, k, "Barrier", 0, 7, 300 * 1000 * MS, "");
	ts_job_tick(j, T0 + 3000 * MS);
	assert_int_equal(r->nculprits, 1);
	assert_int_equal(r->culprits[0], 2);
	ts_job_rank_died(j, 2);
	ts_job_tick(j, T0 + 4000 * MS);
	assert_int_equal(r->state, TS_STATE_HANG);
	assert_int_equal(r->nculprits, 1);
	assert_int_equal(r->culprits[0], 2);
	assert_non_null(strstr(r->reason, "rank 2 did not enter Barrier (seq 7) that 3 of 4"));
	assert_non_null(strstr(r->reason, "; then the job ended abnormally: rank 2"));
	ts_job_free(j);
}

/* A known communicator still sets the members, not the job's ranks: ranks 0-3 announced
 * 0xaa, ranks 4-7 (busy elsewhere) did not. Ranks 0-2 wait in it: only rank 3 is
 * named, with the communicator, and nothing is said to be guessed. */
static void test_hang_known_comm_not_world(void **state)
{
	struct ts_job *j = unannounced_job(8, "known");
	const struct ts_job_result *r = ts_job_result(j);

	(void)state;
	for (int k = 0; k < 4; k++) {
		char grp[32];
		const char *g[] = { grp };
		snprintf(grp, sizeof(grp), "nccl:aa:4:%d", k);
		ts_job_rank_groups(j, k, g, 1);
	}
	for (int k = 0; k < 3; k++)
		ts_job_rank_hang(j, k, "AllGather", 0xaa, 5, 300 * 1000 * MS, "");
	ts_job_tick(j, T0 + 3000 * MS);
	assert_int_equal(r->nculprits, 1);
	assert_int_equal(r->culprits[0], 3);
	assert_int_equal(r->hang_waiting, 3);
	assert_int_equal(r->hang_members, 4);
	assert_non_null(strstr(r->reason, "rank 3 did not enter AllGather (communicator "
				       "00000000000000aa, seq 5) that 3 of 4 ranks wait in"));
	assert_null(strstr(r->reason, "taken as its members"));
	ts_job_free(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compute),
		cmocka_unit_test(test_world_regrown_forgets_named),
		cmocka_unit_test(test_report_trace_ahead),
		cmocka_unit_test(test_gemm_throughput),
		cmocka_unit_test(test_waiting_rank_not_named),
		cmocka_unit_test(test_runq_named_whatever_the_wait),
		cmocka_unit_test(test_storage),
		cmocka_unit_test(test_launch_is_host_cpu),
		cmocka_unit_test(test_busy_gpu_blocks_launches),
		cmocka_unit_test(test_throttled_gpu_is_device),
		cmocka_unit_test(test_runq_names_preemptor),
		cmocka_unit_test(test_starved_host_two_ranks),
		cmocka_unit_test(test_every_other_step_waits),
		cmocka_unit_test(test_gpu_time_lost),
		cmocka_unit_test(test_whole_node_starved),
		cmocka_unit_test(test_healthy_names_nobody),
		cmocka_unit_test(test_hang_and_finish),
		cmocka_unit_test(test_missing_rank_does_not_stall),
		cmocka_unit_test(test_step_jump),
		cmocka_unit_test(test_hang_clears),
		cmocka_unit_test(test_rank_lost),
		cmocka_unit_test(test_backlog_reordered),
		cmocka_unit_test(test_job_bytes),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_pipeline_peers),
		cmocka_unit_test(test_pipeline_peers_from_comms),
		cmocka_unit_test(test_pipeline_peers_from_times),
		cmocka_unit_test(test_hang_culprit),
		cmocka_unit_test(test_hang_victims_exit),
		cmocka_unit_test(test_hang_killed),
		cmocka_unit_test(test_hang_no_guess),
		cmocka_unit_test(test_hang_gloo_culprit),
		cmocka_unit_test(test_hang_gloo_gone),
		cmocka_unit_test(test_hang_gloo_named_then_lost),
		cmocka_unit_test(test_hang_known_comm_not_world),
	};
	return cmocka_run_group_tests_name("job", tests, NULL, NULL);
}
