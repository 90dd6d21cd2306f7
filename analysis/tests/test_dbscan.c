// SPDX-License-Identifier: Apache-2.0
/* DBSCAN on hand-checked cases, a property test against the textbook O(n^2)
 * algorithm, and the SPACE detector's spread test and direction. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/detect/dbscan.h"

static void test_hand_checked(void **state)
{
	/* two dense groups and one far point */
	double v[] = { 1.0, 1.1, 1.2, 5.0, 5.05, 9.0 };
	int lab[6];

	(void)state;
	assert_int_equal(ts_dbscan_1d(v, 6, 0.15, 2, lab), 2);
	assert_int_equal(lab[0], 0);
	assert_int_equal(lab[1], 0);
	assert_int_equal(lab[2], 0);
	assert_int_equal(lab[3], 1);
	assert_int_equal(lab[4], 1);
	assert_int_equal(lab[5], TS_DBSCAN_NOISE);
	/* min_samples 3: the pair is no longer dense; 1.0 is a border point of core 1.1 */
	assert_int_equal(ts_dbscan_1d(v, 6, 0.15, 3, lab), 1);
	assert_int_equal(lab[0], 0);
	assert_int_equal(lab[3], TS_DBSCAN_NOISE);
	assert_int_equal(lab[4], TS_DBSCAN_NOISE);
	/* order of input does not matter */
	double w[] = { 9.0, 5.05, 1.2, 5.0, 1.1, 1.0 };
	assert_int_equal(ts_dbscan_1d(w, 6, 0.15, 2, lab), 2);
	assert_int_equal(lab[0], TS_DBSCAN_NOISE);
	assert_int_equal(lab[1], lab[3]);
	assert_int_equal(lab[2], lab[5]);
	assert_int_not_equal(lab[1], lab[2]);
	assert_int_equal(ts_dbscan_1d(v, 0, 0.1, 2, lab), 0);
}

/* Reference: expand clusters from core points by breadth-first search. */
static int reference(const double *v, int n, double eps, int min, int *lab)
{
	int *core = calloc((size_t)n, sizeof(int)), *queue = malloc((size_t)n * sizeof(int));
	int c = 0;

	for (int i = 0; i < n; i++) {
		int cnt = 0;
		for (int j = 0; j < n; j++)
			cnt += fabs(v[i] - v[j]) <= eps;
		core[i] = cnt >= min;
		lab[i] = -1;
	}
	for (int i = 0; i < n; i++) {
		if (!core[i] || lab[i] >= 0)
			continue;
		int qh = 0, qt = 0;
		lab[i] = c;
		queue[qt++] = i;
		while (qh < qt) {
			int p = queue[qh++];
			for (int j = 0; j < n; j++)
				if (fabs(v[p] - v[j]) <= eps && lab[j] < 0) {
					lab[j] = c;
					if (core[j])
						queue[qt++] = j;
				}
		}
		c++;
	}
	free(core);
	free(queue);
	return c;
}

/* Same partition of core points, same noise set; border points may legitimately go to
 * either neighbouring cluster, so for them only "clustered" is compared. */
static void test_property_matches_reference(void **state)
{
	enum { N = 60 };
	double v[N];
	int a[N], b[N], core[N];

	(void)state;
	srand(12345);
	for (int iter = 0; iter < 500; iter++) {
		int n = 1 + rand() % N, min = 1 + rand() % 4;
		double eps = 0.02 + (rand() % 100) / 500.0;
		for (int i = 0; i < n; i++)
			v[i] = (rand() % 1000) / 1000.0 * (1 + rand() % 3);
		int ca = ts_dbscan_1d(v, (size_t)n, eps, min, a);
		int cb = reference(v, n, eps, min, b);
		assert_int_equal(ca, cb);
		for (int i = 0; i < n; i++) {
			int cnt = 0;
			for (int j = 0; j < n; j++)
				cnt += fabs(v[i] - v[j]) <= eps;
			core[i] = cnt >= min;
			assert_int_equal(a[i] < 0, b[i] < 0);
		}
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n; j++)
				if (core[i] && core[j])
					assert_int_equal(a[i] == a[j], b[i] == b[j]);
	}
}

static const struct ts_space_opts opts = { .eps = 0.1, .min_samples = 2, .cv_threshold = 0.03,
					   .scaling = true, .min_abs_diff = 0.3,
					   .min_robust_z = 3 };

static void test_space_flags_the_slow_rank(void **state)
{
	double v[8] = { 10.0, 10.2, 9.9, 10.1, 10.0, 13.0, 9.8, 10.1 };
	int out[8];
	double med;

	(void)state;
	assert_int_equal(ts_space_detect(v, 8, &opts, out, &med), 1);
	assert_int_equal(out[5], 1);
	assert_true(med > 9.9 && med < 10.2);
	/* and the fast one (a victim that waits less) as below */
	double w[8] = { 10.0, 10.2, 9.9, 10.1, 10.0, 5.0, 9.8, 10.1 };
	assert_int_equal(ts_space_detect(w, 8, &opts, out, &med), 1);
	assert_int_equal(out[5], -1);
}

static void test_space_spread_and_floor(void **state)
{
	double tight[6] = { 10.0, 10.1, 10.2, 10.0, 10.1, 10.3 };
	double small[6] = { 1.0, 1.0, 1.0, 1.0, 1.0, 1.2 }; /* 20 % but only 0.2 ms */
	double nan_[6] = { 10.0, NAN, 10.0, 10.0, 14.0, 10.0 };
	double few[2] = { 10.0, 20.0 };
	int out[6];
	double med;

	(void)state;
	assert_int_equal(ts_space_detect(tight, 6, &opts, out, &med), 0);
	assert_int_equal(ts_space_detect(small, 6, &opts, out, &med), 0);
	assert_int_equal(ts_space_detect(nan_, 6, &opts, out, &med), 1);
	assert_int_equal(out[1], 0);
	assert_int_equal(out[4], 1);
	assert_int_equal(ts_space_detect(few, 2, &opts, out, &med), 0);
}

/* Two slow ranks form their own small cluster: both stand apart from the main one. */
/* Noisy group: a rank past the cluster's edge but within 3 robust sigmas is not named. */
static void test_space_noise_needs_robust_z(void **state)
{
	double v[8] = { 40, 44, 46, 43, 41, 45, 42, 51.5 }; /* 51.5: gap 5.5 > eps, z ~ 2.1 */
	double w[8] = { 40, 44, 46, 43, 41, 60, 42, 45 };   /* 60: z ~ 5 */
	int out[8];
	double med;

	(void)state;
	assert_int_equal(ts_space_detect(v, 8, &opts, out, &med), 0);
	assert_int_equal(ts_space_detect(w, 8, &opts, out, &med), 1);
	assert_int_equal(out[5], 1);
}

static void test_space_two_slow_ranks(void **state)
{
	double v[16];
	int out[16];
	double med;

	(void)state;
	for (int i = 0; i < 16; i++)
		v[i] = 20.0 + (i % 3) * 0.2;
	v[3] = v[11] = 30.0;
	assert_int_equal(ts_space_detect(v, 16, &opts, out, &med), 2);
	assert_int_equal(out[3], 1);
	assert_int_equal(out[11], 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hand_checked),
		cmocka_unit_test(test_property_matches_reference),
		cmocka_unit_test(test_space_flags_the_slow_rank),
		cmocka_unit_test(test_space_spread_and_floor),
		cmocka_unit_test(test_space_noise_needs_robust_z),
		cmocka_unit_test(test_space_two_slow_ranks),
	};
	return cmocka_run_group_tests_name("dbscan", tests, NULL, NULL);
}
