// SPDX-License-Identifier: Apache-2.0
/* Sliding-window k-sigma: learning, bounds, bias, expert bounds, no learning of faults. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include "analysis/detect/ksigma.h"

static struct ts_ksigma_opts base(void)
{
	return (struct ts_ksigma_opts){
		.training_window_size = 40, .min_update_window_size = 10, .min_std_val = 0.0001,
		.bias = 0.01, .abs_bias = 0, .nsigma = 4, .detect = TS_BOUND_UPPER,
		.min_expert_upper = NAN, .max_expert_upper = NAN, .min_expert_lower = NAN,
		.max_expert_lower = NAN,
	};
}

static void test_learns_then_detects(void **state)
{
	struct ts_ksigma_opts o = base();
	struct ts_ksigma k;

	(void)state;
	assert_int_equal(ts_ksigma_init(&k, o.training_window_size), 0);
	/* nothing is judged while learning */
	for (int i = 0; i < 10; i++)
		assert_int_equal(ts_ksigma_update(&k, &o, 10.0 + (i % 2) * 0.1), 0);
	assert_int_equal(ts_ksigma_update(&k, &o, 13.0), 1);
	/* a lasting fault is not learnt: it keeps being flagged */
	for (int i = 0; i < 50; i++)
		assert_int_equal(ts_ksigma_update(&k, &o, 13.0), 1);
	/* low values are not flagged with upper_bound */
	assert_int_equal(ts_ksigma_update(&k, &o, 1.0), 0);
	ts_ksigma_free(&k);
}

static void test_bounds_bias_and_experts(void **state)
{
	struct ts_ksigma_opts o = base();
	struct ts_ksigma k;
	double lo, hi;

	(void)state;
	ts_ksigma_init(&k, 40);
	ts_ksigma_bounds(&k, &o, &lo, &hi);
	assert_true(isnan(hi));
	for (int i = 0; i < 20; i++)
		ts_ksigma_update(&k, &o, 10.0); /* std 0 -> min_std_val */
	ts_ksigma_bounds(&k, &o, &lo, &hi);
	assert_true(fabs(hi - (10.0 + 4 * 0.0001) * 1.01) < 1e-9);
	o.min_expert_upper = 15.0;
	ts_ksigma_bounds(&k, &o, &lo, &hi);
	assert_true(hi == 15.0);
	assert_int_equal(ts_ksigma_update(&k, &o, 14.0), 0);
	o.min_expert_upper = NAN;
	o.detect = TS_BOUND_BOTH;
	assert_int_equal(ts_ksigma_update(&k, &o, 5.0), -1);
	o.detect = TS_BOUND_LOWER;
	assert_int_equal(ts_ksigma_update(&k, &o, 50.0), 0);
	ts_ksigma_free(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_learns_then_detects),
		cmocka_unit_test(test_bounds_bias_and_experts),
	};
	return cmocka_run_group_tests_name("ksigma", tests, NULL, NULL);
}
