// SPDX-License-Identifier: Apache-2.0
/* Analyzer snapshots: an analyzer restored from a snapshot taken mid-job and fed the
 * rest gives the verdict and counts of one that never stopped; damaged snapshots and
 * those of another build are refused, leaving the analyzer empty. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analyzer.h"
#include "common/tests/testbatch.h"

#define MS 1000000ull
#define T0 (1700000000ull * 1000 * MS)
#define WORLD 4
#define STEPS 300

/* One step of one rank: rank 2 computes 1.8x slower from step 40. */
static void feed(struct ts_analyzer *a, int rank, uint64_t step)
{
	static struct ts_test_batch x;
	double f = rank == 2 && step >= 40 ? 1.8 : 1.0;
	uint64_t start = T0 + step * 200 * MS;
	uint64_t compute = (uint64_t)(60 * MS * f) + (uint64_t)((step * 7 + (uint64_t)rank * 3) % 5) * MS;
	char subject[64];
	uint8_t buf[1024];
	size_t len;

	ts_test_batch_init(&x, "ml", "snap", rank, WORLD, 0x5000 + (uint64_t)rank, step + 1);
	assert_non_null(ts_test_batch_step(&x, step, start, start + compute + 40 * MS, compute));
	assert_true((len = ts_test_batch_pack(&x, buf, sizeof(buf))) > 0);
	snprintf(subject, sizeof(subject), "ts.v1.ml.snap.rank.%d", rank);
	assert_int_equal(ts_analyzer_ingest(a, subject, buf, len), 0);
}

static void feed_steps(struct ts_analyzer *a, uint64_t from, uint64_t to)
{
	for (uint64_t s = from; s < to; s++) {
		for (int r = 0; r < WORLD; r++)
			feed(a, r, s);
		ts_analyzer_tick(a, T0 + s * 200 * MS + 1000 * MS);
	}
}

static struct ts_analyzer *analyzer(void)
{
	struct ts_analyzer_opts o = { 0 };
	struct ts_analyzer *a;

	ts_params_defaults(&o.params);
	assert_int_equal(ts_analyzer_new(&a, &o), 0);
	return a;
}

static void assert_same(struct ts_analyzer *x, struct ts_analyzer *y)
{
	const struct ts_job_result *a = ts_job_result(ts_analyzer_job(x, "ml", "snap"));
	const struct ts_job_result *b = ts_job_result(ts_analyzer_job(y, "ml", "snap"));

	assert_int_equal(a->state, TS_STATE_FAILSLOW);
	assert_int_equal(a->state, b->state);
	assert_int_equal(a->nslow, 1);
	assert_int_equal(a->slow[0].rank, 2);
	assert_int_equal(b->nslow, a->nslow);
	assert_int_equal(b->slow[0].rank, a->slow[0].rank);
	assert_string_equal(b->slow[0].cause, a->slow[0].cause);
	assert_string_equal(b->slow[0].metric, a->slow[0].metric);
	assert_string_equal(b->slow[0].evidence, a->slow[0].evidence);
	assert_int_equal(b->steps_evaluated, a->steps_evaluated);
	assert_int_equal(b->rank_steps_expected, a->rank_steps_expected);
	assert_int_equal(b->rank_steps_missing, a->rank_steps_missing);
	assert_int_equal(b->last_step, a->last_step);
	assert_true(fabs(b->baseline_ms - a->baseline_ms) < 1e-9);
	assert_string_equal(b->summary, a->summary);
}

static void test_restore_continues(void **state)
{
	struct ts_analyzer *whole = analyzer(), *first = analyzer(), *second = analyzer();
	struct ts_buf snap = { 0 };
	uint64_t seq = 0;

	(void)state;
	feed_steps(whole, 0, STEPS);
	feed_steps(first, 0, STEPS / 2);
	assert_int_equal(ts_analyzer_save(first, 4242, &snap), 0);
	ts_analyzer_free(first); /* the analyzer killed */
	assert_int_equal(ts_analyzer_restore(second, snap.data, snap.len, T0, &seq), 0);
	assert_int_equal(seq, 4242);
	/* what came before the snapshot is a duplicate now, not a step analysed twice */
	feed(second, 1, STEPS / 2 - 1);
	feed_steps(second, STEPS / 2, STEPS);
	assert_same(whole, second);
	ts_buf_free(&snap);
	ts_analyzer_free(whole);
	ts_analyzer_free(second);
}

static void test_damaged_refused(void **state)
{
	struct ts_analyzer *a = analyzer(), *b = analyzer();
	struct ts_buf snap = { 0 };
	uint64_t seq = 7;

	(void)state;
	feed_steps(a, 0, 60);
	assert_int_equal(ts_analyzer_save(a, 99, &snap), 0);
	assert_int_equal(ts_analyzer_restore(b, snap.data, snap.len / 2, T0, &seq), -EBADMSG);
	assert_null(ts_analyzer_job(b, "ml", "snap"));
	assert_int_equal(ts_analyzer_restore(b, snap.data, snap.len - 1, T0, &seq), -EBADMSG);
	snap.data[8] ^= 1; /* the layout word: a snapshot of another build */
	assert_int_equal(ts_analyzer_restore(b, snap.data, snap.len, T0, &seq), -EPROTO);
	snap.data[8] ^= 1;
	assert_int_equal(ts_analyzer_restore(b, snap.data, snap.len, T0, &seq), 0);
	assert_int_equal(seq, 99);
	assert_non_null(ts_analyzer_job(b, "ml", "snap"));
	/* only into an empty analyzer */
	assert_int_equal(ts_analyzer_restore(b, snap.data, snap.len, T0, &seq), -EBUSY);
	ts_buf_free(&snap);
	ts_analyzer_free(a);
	ts_analyzer_free(b);
}

/* A job whose ranks named their communicators holds the sends between them (links):
 * not saved, and the restored job must not hold the saving process's pointer to them. */
static void test_links_not_carried(void **state)
{
	struct ts_analyzer *a = analyzer(), *b = analyzer();
	const char *groups[] = { "nccl:abc:4:1" };
	struct ts_buf snap = { 0 };
	uint64_t seq = 0;

	(void)state;
	feed_steps(a, 0, 10);
	ts_job_rank_groups(ts_analyzer_job(a, "ml", "snap"), 1, groups, 1);
	assert_int_equal(ts_analyzer_save(a, 5, &snap), 0);
	assert_int_equal(ts_analyzer_restore(b, snap.data, snap.len, T0, &seq), 0);
	ts_job_rank_groups(ts_analyzer_job(b, "ml", "snap"), 2, groups, 1);
	ts_analyzer_free(b); /* with a's pointer it would free a's links: a double free */
	ts_analyzer_free(a);
	ts_buf_free(&snap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restore_continues),
		cmocka_unit_test(test_damaged_refused),
		cmocka_unit_test(test_links_not_carried),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
