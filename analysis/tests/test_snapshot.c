// SPDX-License-Identifier: Apache-2.0
/* Analyzer snapshots: an analyzer restored from a snapshot taken mid-job and fed the
 * rest gives the verdict and counts of one that never stopped; damaged snapshots and
 * those of another build are refused, leaving the analyzer empty. The state in parts
 * (snapstate.h) over a bucket in memory (fakekv.h): saves that store only what changed,
 * a save cut short, the single blob of earlier builds; and the deltas' codec. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/ingest/analyzer.h"
#include "analysis/detect/snapdiff.h"
#include "analysis/state/snapstate.h"
#include "analysis/tests/fakekv.h"
#include "common/tests/testbatch.h"

/* The defaults with the real-job floors off (verdict.wait_floor 0): these tests feed
 * synthetic steps to the statistics themselves; bench/data's recordings of real programs
 * (make real-bench) judge the floors. */
static void synthetic_defaults(struct ts_params *p)
{
	ts_params_defaults(p);
	p->verdict.wait_floor = 0;
}

/* the analyzer's, which /metrics takes: a restore fills the analyzer under it */
static pthread_mutex_t core_lock = PTHREAD_MUTEX_INITIALIZER;

#define MS 1000000ull
#define T0 (1700000000ull * 1000 * MS)
#define WORLD 4
#define STEPS 300

/* One step of one rank of job ml/name: rank 2 computes 1.8x slower from step 40. */
static void feed_job(struct ts_analyzer *a, const char *name, int rank, uint64_t step)
{
	static struct ts_test_batch x;
	double f = rank == 2 && step >= 40 ? 1.8 : 1.0;
	uint64_t start = T0 + step * 200 * MS;
	uint64_t compute = (uint64_t)(60 * MS * f) + (uint64_t)((step * 7 + (uint64_t)rank * 3) % 5) * MS;
	char subject[64];
	uint8_t buf[1024];
	size_t len;

	ts_test_batch_init(&x, "ml", name, rank, WORLD,
			   0x5000 + (uint64_t)rank + ((uint64_t)(unsigned char)name[0] << 8), step + 1);
	assert_non_null(ts_test_batch_step(&x, step, start, start + compute + 40 * MS, compute));
	assert_true((len = ts_test_batch_pack(&x, buf, sizeof(buf))) > 0);
	snprintf(subject, sizeof(subject), "ts.v1.ml.%s.rank.%d", name, rank);
	assert_int_equal(ts_analyzer_ingest(a, subject, buf, len), 0);
}

static void feed(struct ts_analyzer *a, int rank, uint64_t step)
{
	feed_job(a, "snap", rank, step);
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

	synthetic_defaults(&o.params);
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
	/* the GPU time lost, counted across the restart as if none happened */
	assert_true(a->gpu_lost.total_s > 0);
	assert_true(fabs(b->gpu_lost.total_s - a->gpu_lost.total_s) < 1e-6 * a->gpu_lost.total_s);
	assert_true(fabs(b->gpu_lost.cause_s[TS_CAUSE_COMPUTE] - a->gpu_lost.cause_s[TS_CAUSE_COMPUTE]) <
		    1e-6 * a->gpu_lost.total_s);
	assert_true(fabs(ts_job_rank(ts_analyzer_job(y, "ml", "snap"), 2)->gpu_lost_s -
			 ts_job_rank(ts_analyzer_job(x, "ml", "snap"), 2)->gpu_lost_s) <
		    1e-6 * a->gpu_lost.total_s);
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

/* A save of a as of stream message seq (one per step here): its bytes stored. */
static size_t save(struct ts_snapstate *st, struct ts_analyzer *a, uint64_t seq)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	size_t written = 0;
	char why[256];

	assert_int_equal(ts_snapstate_save(st, a, &lock, seq, &written, why, sizeof(why)), 0);
	return written;
}

/* A save of a as of seq that the store cuts short after one put. */
static void save_cut_short(struct tsn_kv *kv, struct ts_snapstate *st, struct ts_analyzer *a,
			   uint64_t seq)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	size_t written;
	char why[256];

	fakekv_fail_after(kv, 1);
	assert_int_equal(ts_snapstate_save(st, a, &lock, seq, &written, why, sizeof(why)), -EAGAIN);
	fakekv_fail_after(kv, -1);
}

static struct ts_snapstate *state(struct tsn_kv *kv)
{
	struct ts_snapstate *st;

	assert_int_equal(ts_snapstate_new(&st, kv, "an"), 0);
	return st;
}

/* The analyzer killed after the save of step seq: restored into a new one by a new
 * state (the process that follows), which is returned. */
static struct ts_snapstate *restart(struct tsn_kv *kv, struct ts_snapstate *st,
				    struct ts_analyzer *a, struct ts_analyzer *into, uint64_t seq)
{
	uint64_t got = 0;
	size_t read = 0;

	ts_snapstate_free(st);
	ts_analyzer_free(a);
	st = state(kv);
	assert_int_equal(ts_snapstate_restore(st, into, &core_lock, T0, &got, &read), 0);
	assert_int_equal(got, seq);
	assert_true(read > 0);
	return st;
}

static int objects(struct tsn_kv *kv, size_t *bytes)
{
	return fakekv_count(kv, "an.o.>", bytes);
}

/* Saved every 5 steps, each save after the first storing only what changed, and
 * restored: the verdicts of an analyzer that never stopped. A save after the restore
 * goes on from it, and restores alike. */
static void test_parts_restore_continues(void **state_)
{
	struct ts_analyzer *whole = analyzer(), *first = analyzer(), *second = analyzer();
	struct ts_analyzer *third = analyzer();
	struct tsn_kv *kv = fakekv_new();
	struct ts_snapstate *st = state(kv);
	struct ts_buf blob = { 0 };
	size_t most = 0, bytes;

	(void)state_;
	feed_steps(whole, 0, STEPS);
	for (uint64_t s = 0; s < STEPS / 2; s += 5) {
		feed_steps(first, s, s + 5);
		size_t w = save(st, first, s + 4);
		most = s && w > most ? w : most;
	}
	assert_int_equal(ts_analyzer_save(first, 0, &blob), 0);
	assert_true(most < blob.len / 4); /* the whole state, as one blob */
	ts_buf_free(&blob);
	st = restart(kv, st, first, second, STEPS / 2 - 1);
	feed(second, 1, STEPS / 2 - 1); /* a duplicate now */
	feed_steps(second, STEPS / 2, STEPS);
	assert_same(whole, second);
	save(st, second, STEPS);
	assert_true(objects(kv, &bytes) > 0);
	st = restart(kv, st, second, third, STEPS);
	assert_same(whole, third);
	ts_snapstate_free(st);
	ts_analyzer_free(whole);
	ts_analyzer_free(third);
	fakekv_free(kv);
}

/* A save with nothing new, ticks aside, stores the manifest alone. */
static void test_unchanged_stores_nothing(void **state_)
{
	struct ts_analyzer *a = analyzer();
	struct tsn_kv *kv = fakekv_new();
	struct ts_snapstate *st = state(kv);
	size_t bytes, again;

	(void)state_;
	feed_steps(a, 0, 50);
	save(st, a, 49);
	int n = objects(kv, &bytes);
	ts_analyzer_tick(a, T0 + 50 * 200 * MS + 1500 * MS);
	assert_true(save(st, a, 50) < 1024);
	assert_int_equal(objects(kv, &again), n);
	assert_int_equal(again, bytes);
	ts_snapstate_free(st);
	ts_analyzer_free(a);
	fakekv_free(kv);
}

/* Saves that fail midway (objects stored, no manifest): the next save makes them good;
 * an analyzer killed after one restores the save before, and what the failed one stored
 * is purged. */
static void test_save_cut_short(void **state_)
{
	struct ts_analyzer *whole = analyzer(), *first = analyzer(), *second = analyzer();
	struct tsn_kv *kv = fakekv_new();
	struct ts_snapstate *st = state(kv);
	size_t bytes, after;

	(void)state_;
	feed_steps(whole, 0, STEPS);
	feed_steps(first, 0, 100);
	save(st, first, 99);
	feed_steps(first, 100, 120);
	save_cut_short(kv, st, first, 119);
	feed_steps(first, 120, 140);
	save(st, first, 139);
	int n = objects(kv, &bytes);
	feed_steps(first, 140, 150);
	save_cut_short(kv, st, first, 149);
	assert_true(objects(kv, &after) > n);
	st = restart(kv, st, first, second, 139);
	assert_int_equal(objects(kv, &after), n);
	assert_int_equal(after, bytes);
	feed_steps(second, 140, STEPS);
	assert_same(whole, second);
	ts_snapstate_free(st);
	ts_analyzer_free(whole);
	ts_analyzer_free(second);
	fakekv_free(kv);
}

/* The single blob of earlier builds restores, and goes once a save in parts is stored. */
static void test_single_blob_restores(void **state_)
{
	struct ts_analyzer *whole = analyzer(), *first = analyzer(), *second = analyzer();
	struct tsn_kv *kv = fakekv_new();
	struct ts_snapstate *st = state(kv);
	struct ts_buf blob = { 0 };
	size_t bytes;
	char why[256];

	(void)state_;
	feed_steps(whole, 0, STEPS);
	feed_steps(first, 0, STEPS / 2);
	assert_int_equal(ts_analyzer_save(first, 149, &blob), 0);
	assert_int_equal(tsn_kv_put_blob(kv, "an", blob.data, blob.len, why, sizeof(why)), 0);
	st = restart(kv, st, first, second, 149);
	feed_steps(second, STEPS / 2, STEPS);
	assert_same(whole, second);
	assert_int_equal(fakekv_count(kv, "an.head", &bytes), 1);
	save(st, second, STEPS);
	assert_int_equal(fakekv_count(kv, "an.head", &bytes), 0);
	assert_int_equal(fakekv_count(kv, "an.0.>", &bytes), 0);
	ts_buf_free(&blob);
	ts_snapstate_free(st);
	ts_analyzer_free(whole);
	ts_analyzer_free(second);
	fakekv_free(kv);
}

/* A damaged part, or a manifest of another layout, is refused: the analyzer is left
 * empty, and what it named purged (the next save starts afresh). */
static void test_parts_refused(void **state_)
{
	struct ts_analyzer *a = analyzer(), *b = analyzer();
	struct tsn_kv *kv = fakekv_new();
	struct ts_snapstate *st = state(kv);
	uint64_t seq;
	size_t read, bytes;

	(void)state_;
	feed_steps(a, 0, 60);
	save(st, a, 59);
	assert_int_equal(fakekv_damage(kv, "an.m.0.0", 8), 0); /* the layout word */
	assert_int_equal(ts_snapstate_restore(st, b, &core_lock, T0, &seq, &read), -EPROTO);
	assert_int_equal(ts_analyzer_njobs(b), 0);
	assert_int_equal(objects(kv, &bytes), 0);
	save(st, a, 59);
	assert_int_equal(fakekv_damage(kv, "an.o.4.1", 100), 0); /* the job's base */
	assert_int_equal(ts_snapstate_restore(st, b, &core_lock, T0, &seq, &read), 0);
	assert_int_equal(ts_analyzer_njobs(b), 0); /* the job alone is left out */
	assert_int_equal(ts_snapstate_dropped(st), 1);
	ts_snapstate_free(st);
	ts_analyzer_free(a);
	ts_analyzer_free(b);
	fakekv_free(kv);
}

struct keys {
	char key[64][128];
	int n;
};

static void key_seen(void *ctx, const char *key)
{
	struct keys *k = ctx;

	if (k->n < 64)
		snprintf(k->key[k->n++], sizeof(k->key[0]), "%s", key);
}

/* Two jobs saved; each stored object damaged in turn: a job's part damaged leaves that
 * job out, counted, and restores the other whole (its verdict the never-stopped one's);
 * only the producers' part fails the restore. */
static void test_damaged_job_alone(void **state_)
{
	struct ts_analyzer *a = analyzer();
	struct tsn_kv *kv = fakekv_new();
	struct ts_snapstate *st = state(kv);
	struct keys k = { .n = 0 };
	int alone = 0, whole = 0;

	(void)state_;
	for (uint64_t s = 0; s < STEPS; s++) {
		for (int r = 0; r < WORLD; r++)
			feed_job(a, "snap", r, s), feed_job(a, "keep", r, s);
		ts_analyzer_tick(a, T0 + s * 200 * MS + 1000 * MS);
	}
	save(st, a, STEPS);
	assert_int_equal(tsn_kv_keys(kv, "an.o.>", key_seen, &k), 0);
	assert_true(k.n >= 3);
	for (int i = 0; i < k.n; i++) {
		struct ts_analyzer *b = analyzer();
		struct ts_snapstate *again = state(kv);
		uint64_t seq = 0;
		size_t read;
		assert_int_equal(fakekv_damage(kv, k.key[i], 64), 0);
		int rc = ts_snapstate_restore(again, b, &core_lock, T0, &seq, &read);
		assert_true(rc == 0 || rc == -EBADMSG);
		if (rc == 0 && ts_snapstate_dropped(again) == 1) {
			const char *left = ts_analyzer_job(b, "ml", "snap") ? "snap" : "keep";
			assert_int_equal(ts_analyzer_njobs(b), 1);
			assert_int_equal(seq, STEPS);
			const struct ts_job_result *x = ts_job_result(ts_analyzer_job(a, "ml", left));
			const struct ts_job_result *y = ts_job_result(ts_analyzer_job(b, "ml", left));
			assert_int_equal(y->state, x->state);
			assert_int_equal(y->steps_evaluated, x->steps_evaluated);
			alone++;
		} else if (rc == -EBADMSG) {
			assert_int_equal(ts_analyzer_njobs(b), 0);
			whole++;
		}
		assert_int_equal(fakekv_damage(kv, k.key[i], 64), 0); /* flipped back */
		ts_snapstate_free(again);
		ts_analyzer_free(b);
	}
	assert_true(alone >= 2); /* one object of each job at least */
	assert_true(whole >= 1); /* the producers' */
	ts_snapstate_free(st);
	ts_analyzer_free(a);
	fakekv_free(kv);
}

/* Saved at every step: a part takes a new base once its deltas would pass half of one,
 * what the store holds stays within about one and a half times the state, and a job
 * that is gone is purged. */
static void test_bases_bound_the_store(void **state_)
{
	struct ts_analyzer *a = analyzer();
	struct tsn_kv *kv = fakekv_new();
	struct ts_snapstate *st = state(kv);
	size_t first, bytes, most = 0;

	(void)state_;
	feed_steps(a, 0, 10);
	save(st, a, 9);
	objects(kv, &first);
	for (uint64_t s = 10; s < STEPS; s++) {
		feed_steps(a, s, s + 1);
		save(st, a, s);
		objects(kv, &bytes);
		most = bytes > most ? bytes : most;
	}
	assert_int_equal(fakekv_count(kv, "an.o.2.>", &bytes), 0); /* the first base went */
	assert_true(most < 3 * first);
	ts_analyzer_tick(a, T0 + 4000 * 1000 * MS); /* quiet past limits.job_ttl_s */
	ts_analyzer_tick(a, T0 + 8000 * 1000 * MS);
	assert_int_equal(ts_analyzer_njobs(a), 0);
	save(st, a, STEPS);
	objects(kv, &bytes);
	assert_true(bytes < 1024); /* the producers' table alone */
	ts_snapstate_free(st);
	ts_analyzer_free(a);
	fakekv_free(kv);
}

/* The codec alone: random images changed at random (bytes, zero runs, their length),
 * walked in fields of random sizes; the segments applied in order give each back, as
 * does a base; an image that did not change makes no segment. */
static void test_diff_segments(void **state_)
{
	struct ts_image shadow = { 0 }, back = { 0 }, whole = { 0 };
	static uint8_t img[20000];
	struct ts_buf ops = { 0 }, base = { 0 };
	struct ts_snapdiff d;
	struct ts_snap s;
	size_t len = 5000;
	unsigned seed = 7;

	(void)state_;
	for (int round = 0; round < 200; round++) {
		for (int k = rand_r(&seed) % 8; k >= 0; k--) {
			size_t at = (size_t)rand_r(&seed) % sizeof(img), n = (size_t)rand_r(&seed) % 300;
			n = at + n > sizeof(img) ? sizeof(img) - at : n;
			int zero = rand_r(&seed) % 3 == 0;
			for (size_t i = 0; i < n; i++)
				img[at + i] = zero ? 0 : (uint8_t)rand_r(&seed);
		}
		if (round % 10 == 3)
			len = (size_t)rand_r(&seed) % sizeof(img);
		ops.len = 0;
		ts_snapdiff_begin(&s, &d, &shadow, &ops);
		for (size_t o = 0; o < len;) {
			size_t n = 1 + (size_t)rand_r(&seed) % 97;
			n = o + n > len ? len - o : n;
			ts_snap_io(&s, img + o, n);
			o += n;
		}
		bool changed = ts_snapdiff_end(&s);
		assert_int_equal(s.err, 0);
		assert_int_equal(changed, ops.len > 0);
		assert_int_equal(ts_snapdiff_apply(&back, ops.data, ops.len), 0);
		assert_int_equal(back.len, len);
		assert_memory_equal(back.data, img, len);
		assert_memory_equal(shadow.data, img, len);
	}
	assert_int_equal(ts_snapdiff_base(&shadow, &base), 0);
	assert_int_equal(ts_snapdiff_apply(&whole, base.data, base.len), 0);
	assert_int_equal(whole.len, len);
	assert_memory_equal(whole.data, img, len);
	ops.len = 0;
	ts_snapdiff_begin(&s, &d, &shadow, &ops);
	ts_snap_io(&s, img, len);
	assert_false(ts_snapdiff_end(&s));
	assert_int_equal(ops.len, 0);
	ts_image_free(&shadow);
	ts_image_free(&back);
	ts_image_free(&whole);
	ts_buf_free(&ops);
	ts_buf_free(&base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restore_continues),
		cmocka_unit_test(test_damaged_refused),
		cmocka_unit_test(test_links_not_carried),
		cmocka_unit_test(test_parts_restore_continues),
		cmocka_unit_test(test_unchanged_stores_nothing),
		cmocka_unit_test(test_save_cut_short),
		cmocka_unit_test(test_single_blob_restores),
		cmocka_unit_test(test_parts_refused),
		cmocka_unit_test(test_damaged_job_alone),
		cmocka_unit_test(test_bases_bound_the_store),
		cmocka_unit_test(test_diff_segments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
