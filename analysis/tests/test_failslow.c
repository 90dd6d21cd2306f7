// SPDX-License-Identifier: Apache-2.0
/* Job-level fail-slow: quiet through warm-up and single spikes, raised by a sustained
 * slowdown, and the degradation divided by the baseline (not by the threshold). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include "analysis/detect/failslow.h"

static const struct ts_failslow_opts o = {
	.task_stable_step = 3, .min_startup_detection_steps = 10, .steps_window_size = 5,
	.k_sigma = 3, .anomaly_degree_thr = 0.2, .max_data_queue_steps = 500,
	.consecutive_windows = 2,
};

static double noisy(int i)
{
	return 100.0 + ((i * 37) % 7) - 3; /* 97..103 */
}

static void test_no_alarm_on_warmup_or_spike(void **state)
{
	struct ts_failslow f;

	(void)state;
	assert_int_equal(ts_failslow_init(&f, &o), 0);
	/* warm-up steps are huge (compilation, cache fill) */
	for (int i = 0; i < 3; i++)
		assert_false(ts_failslow_add(&f, &o, 2000.0));
	for (int i = 0; i < 200; i++)
		assert_false(ts_failslow_add(&f, &o, i == 100 ? 5000.0 : noisy(i)));
	assert_true(fabs(f.baseline - 100.0) < 3);
	ts_failslow_free(&f);
}

static void test_sustained_slowdown(void **state)
{
	struct ts_failslow f;
	int raised_at = -1;

	(void)state;
	ts_failslow_init(&f, &o);
	for (int i = 0; i < 60; i++)
		ts_failslow_add(&f, &o, noisy(i));
	for (int i = 0; i < 30 && raised_at < 0; i++)
		if (ts_failslow_add(&f, &o, 130.0 + (i % 3)))
			raised_at = i;
	assert_true(raised_at >= 2 && raised_at <= 6);
	assert_true(f.degradation > 0.25 && f.degradation < 0.35);
	/* the slow steps did not become the baseline */
	for (int i = 0; i < 100; i++)
		assert_true(ts_failslow_add(&f, &o, 130.0));
	assert_true(fabs(f.baseline - 100.0) < 3);
	/* recovery clears it */
	for (int i = 0; i < 10; i++)
		ts_failslow_add(&f, &o, noisy(i));
	assert_false(f.slow);
	ts_failslow_free(&f);
}

static void test_below_degree_threshold(void **state)
{
	struct ts_failslow f;

	(void)state;
	ts_failslow_init(&f, &o);
	for (int i = 0; i < 60; i++)
		ts_failslow_add(&f, &o, noisy(i));
	/* +15 %: many sigmas, but under anomaly_degree_thr 0.2 */
	for (int i = 0; i < 50; i++)
		assert_false(ts_failslow_add(&f, &o, 115.0));
	ts_failslow_free(&f);
}

/* Loader workers that take turns: every other step waits. The median step is the
 * short one; the job still runs at half its speed. */
static void test_every_other_step_slow(void **state)
{
	struct ts_failslow f;
	int raised_at = -1;

	(void)state;
	ts_failslow_init(&f, &o);
	for (int i = 0; i < 60; i++)
		ts_failslow_add(&f, &o, noisy(i));
	for (int i = 0; i < 30 && raised_at < 0; i++)
		if (ts_failslow_add(&f, &o, i % 2 ? 300.0 : noisy(i)))
			raised_at = i;
	assert_true(raised_at >= 2 && raised_at <= 8);
	assert_true(f.degradation > 0.5);
	ts_failslow_free(&f);
}

/* A job that always alternated is its own baseline. */
static void test_alternating_from_start(void **state)
{
	struct ts_failslow f;

	(void)state;
	ts_failslow_init(&f, &o);
	for (int i = 0; i < 300; i++)
		assert_false(ts_failslow_add(&f, &o, i % 2 ? 300.0 : noisy(i)));
	ts_failslow_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_alarm_on_warmup_or_spike),
		cmocka_unit_test(test_sustained_slowdown),
		cmocka_unit_test(test_below_degree_threshold),
		cmocka_unit_test(test_every_other_step_slow),
		cmocka_unit_test(test_alternating_from_start),
	};
	return cmocka_run_group_tests_name("failslow", tests, NULL, NULL);
}
