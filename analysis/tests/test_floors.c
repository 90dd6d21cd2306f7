// SPDX-License-Identifier: Apache-2.0
/* The real-job floors (verdict.*, on by default) and the device evidence they ask of a
 * rank with no slowdown to see: a rank slow from its first step is named only when its
 * GPU shows why (another tenant's processes, throttling, slower GEMMs), since in real
 * jobs a healthy rank can hold the last-to-arrive role for 60 steps and more; and a rank
 * the others wait for with no busy time to show for it is HostCPU, unless its GPU is
 * shared: then Compute. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/detect/job.h"

#define MS 1000000ull
#define WORLD 4
#define SLOW 1

/* How rank SLOW is slow: its metric's time (busy; compute unless said) or time in none
 * of its metrics (its host holds each step), extra ms a step from step from, in every
 * every-th step (every step unless said). */
struct fault {
	bool busy;
	double extra;
	int from;
	int metric, every;
};

static void feed(struct ts_job *j, const struct fault *f, uint64_t step, unsigned *seed)
{
	double base[TS_M_COUNT] = { 30, 5, 0.5, 2, 0 };
	bool on = step >= (uint64_t)f->from && (f->every < 2 || step % (uint64_t)f->every == 0);
	double extra = on ? f->extra : 0;
	uint64_t t0 = 1000000 * MS + step * 100 * MS;

	for (int r = 0; r < WORLD; r++) {
		struct ts_rank_step rs = { .step = step, .start_ns = t0 };
		for (int m = 0; m < TS_M_COUNT; m++)
			rs.m[m] = base[m] * (1 + 0.02 * ((rand_r(seed) % 2001) / 1000.0 - 1.0));
		rs.m[TS_M_GEMM] = NAN;
		if (r == SLOW && f->busy)
			rs.m[f->metric] += extra;
		else if (r != SLOW)
			rs.m[TS_M_COLLECTIVE] += extra;
		rs.end_ns = t0 + (uint64_t)((38 + extra) * MS);
		assert_int_equal(ts_job_add_step(j, r, WORLD, &rs), 0);
	}
}

/* What the node agent says of rank SLOW's GPU (the others': 1980 MHz, nothing on them). */
struct gpu {
	uint32_t others; /* processes that are no rank of the job */
	uint32_t mhz;
	uint64_t reasons;
};

/* 200 steps of the fault with the defaults, rank SLOW's GPU as g says. */
static const struct ts_job_result *run(struct ts_job **j, const struct fault *f, struct gpu g)
{
	struct ts_params p;
	unsigned seed = 5;

	ts_params_defaults(&p);
	assert_true(p.verdict.wait_floor > 0);
	assert_int_equal(ts_job_new(j, "ns", "floors", WORLD, &p), 0);
	for (int st = 0; st < 200; st++) {
		feed(*j, f, (uint64_t)st, &seed);
		for (int r = 0; r < WORLD; r++) {
			snprintf(ts_job_rank(*j, r)->node, 64, "n0");
			ts_job_rank(*j, r)->device_index = r;
			struct ts_device_view v = { .valid = true, .sm_clock_mhz = 1980 };
			if (r == SLOW)
				v.other_procs = g.others, v.throttle_reasons = g.reasons,
				v.sm_clock_mhz = g.mhz ? g.mhz : 1980;
			ts_job_device_view(*j, "n0", r, &v);
		}
		ts_job_tick(*j, 1000000 * MS + (uint64_t)st * 100 * MS);
	}
	return ts_job_result(*j);
}

/* The result names rank SLOW alone, with cause. */
static void named_alone(const struct ts_job_result *r, const char *cause)
{
	assert_int_equal(r->nslow, 1);
	assert_int_equal(r->slow[0].rank, SLOW);
	assert_string_equal(r->slow[0].cause, cause);
}

/* Twice its peers' compute from step 0, the others waiting 30 ms of each step: a role
 * as far as the steps tell. Named only with the other process on its GPU. */
static void test_slow_from_start_needs_device(void **state)
{
	const struct fault f = { true, 34, 0 };
	struct ts_job *j;
	const struct ts_job_result *r = run(&j, &f, (struct gpu){ 0 });

	(void)state;
	assert_int_equal(r->nslow, 0);
	ts_job_free(j);
	/* an idle GPU's floor clock is no evidence (NVML's GpuIdle reason) */
	r = run(&j, &f, (struct gpu){ .mhz = 345, .reasons = 0x1 });
	assert_int_equal(r->nslow, 0);
	ts_job_free(j);
	r = run(&j, &f, (struct gpu){ .others = 1 });
	named_alone(r, "Compute");
	assert_non_null(strstr(r->slow[0].evidence, "is shared: 1 process on it"));
	ts_job_free(j);
}

/* From step 40 the job waits 34 ms a step for rank SLOW, whose own times show none of
 * it: HostCPU, its host holding the step; with another tenant on its GPU, Compute. */
static void test_hidden_wait_cause(void **state)
{
	const struct fault f = { false, 34, 40 };
	struct ts_job *j;
	const struct ts_job_result *r = run(&j, &f, (struct gpu){ 0 });

	(void)state;
	named_alone(r, "HostCPU");
	assert_non_null(strstr(r->slow[0].evidence, "its host holds each step"));
	ts_job_free(j);
	r = run(&j, &f, (struct gpu){ .others = 2 });
	named_alone(r, "Compute");
	assert_non_null(strstr(r->slow[0].evidence, "is shared: 2 processes on it"));
	ts_job_free(j);
}

/* One of rank SLOW's two loader workers slow from step 40: the others wait 60 ms for it
 * every other step, and it comes last in half its steps (in a quarter of the rest by
 * chance), under the floor's three in four; over pairs of steps it is last in each. */
static void test_alternating_loader(void **state)
{
	const struct fault f = { true, 60, 40, TS_M_DATALOADER, 2 };
	struct ts_job *j;
	const struct ts_job_result *r = run(&j, &f, (struct gpu){ 0 });

	(void)state;
	named_alone(r, "Storage");
	ts_job_free(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slow_from_start_needs_device),
		cmocka_unit_test(test_hidden_wait_cause),
		cmocka_unit_test(test_alternating_loader),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
