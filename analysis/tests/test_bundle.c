// SPDX-License-Identifier: Apache-2.0
/* A relay's Bundle (the batches of its pod's ranks in one message, on
 * ts.v1.<ns>.<job>.pod.<pod>) as the analyzer takes it: each batch as if it came alone on
 * its rank's subject, its identity, seq gaps and ring drops its own; a batch that claims
 * another namespace, job or pod than the subject's refused and counted, the others
 * taken; a message that is no Bundle refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "analysis/ingest/analyzer.h"
#include "common/tests/testbatch.h"
#include "proto/wire.h"

#define MS 1000000ull
#define T0 (1700000000ull * 1000 * MS)
#define RANKS 4
#define POD "llm-worker-0"
#define SUBJECT "ts.v1.ml.llm.pod." POD

/* A message being made: its batches, each packed apart. */
struct msg {
	uint8_t buf[RANKS + 1][2048];
	ProtobufCBinaryData batch[RANKS + 1];
	size_t n;
};

/* One rank's batch of steps [first, first + n) of job ns/job, from pod POD. */
static struct ts_test_batch *rank_batch(const char *ns, const char *job, int rank, uint64_t seq,
					uint64_t first, int n)
{
	static struct ts_test_batch x;

	ts_test_batch_init(&x, ns, job, rank, RANKS, 0x5000 + (uint64_t)rank, seq);
	x.id.pod = (char *)POD;
	x.id.node = (char *)"node-0";
	x.id.pid = 100 + rank;
	for (int i = 0; i < n; i++) {
		uint64_t k = first + (uint64_t)i, start = T0 + k * 100 * MS;
		assert_non_null(ts_test_batch_step(&x, k, start, start + 90 * MS, 60 * MS));
	}
	return &x;
}

static void add(struct msg *m, const struct ts_test_batch *x)
{
	size_t len = ts_test_batch_pack(x, m->buf[m->n], sizeof(m->buf[0]));

	assert_true(len > 0 && m->n < RANKS + 1);
	m->batch[m->n].data = m->buf[m->n];
	m->batch[m->n++].len = len;
}

/* Every rank's batch of steps [first, first + n), its seq. */
static void every_rank(struct msg *m, uint64_t seq, uint64_t first, int n)
{
	m->n = 0;
	for (int r = 0; r < RANKS; r++)
		add(m, rank_batch("ml", "llm", r, seq, first, n));
}

static int ingest_bundle(struct ts_analyzer *a, const char *subject, const struct msg *m,
			 uint64_t seq)
{
	uint8_t *buf;
	size_t len;
	int rc;

	assert_int_equal(ts_bundle_pack(m->batch, m->n, 0xb0b, seq, &buf, &len), 0);
	rc = ts_analyzer_ingest(a, subject, buf, len);
	free(buf);
	return rc;
}

/* An analyzer of the default parameters for the test (*state), freed after it even when
 * it failed. */
static int up(void **state)
{
	struct ts_analyzer_opts o = { 0 };
	struct ts_analyzer *a = NULL;
	int err;

	ts_params_defaults(&o.params);
	err = ts_analyzer_new(&a, &o);
	*state = a;
	return err;
}

static int down(void **state)
{
	ts_analyzer_free(*state);
	return 0;
}

/* Each batch's rank keeps its identity; the stats are those of the batches sent alone. */
static void test_bundle_as_batches(void **state)
{
	struct ts_analyzer *pod = *state, *alone;
	struct ts_analyzer_stats ps, as;
	char subject[64];
	void *other;
	struct msg m;

	assert_int_equal(up(&other), 0);
	alone = other;
	for (uint64_t seq = 1; seq <= 3; seq++) {
		every_rank(&m, seq, (seq - 1) * 4, 4);
		assert_int_equal(ingest_bundle(pod, SUBJECT, &m, seq), 0);
		for (int r = 0; r < RANKS; r++) {
			snprintf(subject, sizeof(subject), "ts.v1.ml.llm.rank.%d", r);
			assert_int_equal(ts_analyzer_ingest(alone, subject, m.batch[r].data,
							    m.batch[r].len), 0);
		}
	}
	ts_analyzer_get_stats(pod, &ps);
	ts_analyzer_get_stats(alone, &as);
	assert_int_equal(ps.msgs, 3);
	assert_int_equal(ps.bundles, 3);
	assert_int_equal(ps.batches, 3 * RANKS);
	assert_int_equal(ps.steps, 3 * 4 * RANKS);
	assert_int_equal(ps.steps, as.steps);
	assert_int_equal(ps.batches, as.batches);
	assert_int_equal(as.bundles, 0);
	struct ts_job *j = ts_analyzer_job(pod, "ml", "llm");
	assert_non_null(j);
	assert_int_equal(ts_job_world(j), RANKS);
	for (int r = 0; r < RANKS; r++) {
		const struct ts_rank_meta *rm = ts_job_rank(j, r);
		assert_string_equal(rm->pod, POD);
		assert_int_equal(rm->pid, 100 + r);
		assert_int_equal(rm->last_step, 11);
	}
	/* the same bundle again (a resend past JetStream's window): every batch a duplicate */
	assert_int_equal(ingest_bundle(pod, SUBJECT, &m, 3), 0);
	ts_analyzer_get_stats(pod, &ps);
	assert_int_equal(ps.duplicates, RANKS);
	assert_int_equal(ps.steps, 3 * 4 * RANKS);
	ts_analyzer_free(alone);
}

/* A rank whose batch is missing from a round (a lost bundle, or its relay killed) is a
 * gap of its own producer: counted lost, in the metric and the job's report; its ring's
 * drops too. */
static void test_bundle_gap_is_loss(void **state)
{
	struct ts_analyzer *a = *state;
	struct ts_analyzer_stats st;
	struct msg m;

	every_rank(&m, 1, 0, 4);
	assert_int_equal(ingest_bundle(a, SUBJECT, &m, 1), 0);
	/* round 2: rank 2's batch (its seq 2) lost; round 3: rank 2 goes on with seq 3 and
	 * says its ring dropped 7 records */
	m.n = 0;
	for (int r = 0; r < RANKS; r++)
		if (r != 2)
			add(&m, rank_batch("ml", "llm", r, 2, 4, 4));
	assert_int_equal(ingest_bundle(a, SUBJECT, &m, 2), 0);
	m.n = 0;
	for (int r = 0; r < RANKS; r++) {
		struct ts_test_batch *x = rank_batch("ml", "llm", r, 3, 8, 4);
		x->b.dropped_records = r == 2 ? 7 : 0;
		add(&m, x);
	}
	assert_int_equal(ingest_bundle(a, SUBJECT, &m, 3), 0);
	ts_analyzer_get_stats(a, &st);
	assert_int_equal(st.lost_batches, 1);
	assert_int_equal(st.ring_dropped, 7);
	assert_int_equal(st.batches, 3 * RANKS - 1);
	const struct ts_job_result *res = ts_job_result(ts_analyzer_job(a, "ml", "llm"));
	assert_int_equal(res->batches_lost, 1);
	assert_int_equal(res->ring_dropped, 7);
}

/* A relay may speak only for its subject's namespace, job and pod: a batch that claims
 * another is refused and counted, the bundle's others taken. */
static void test_bundle_mismatch_refused(void **state)
{
	struct ts_analyzer *a = *state;
	struct ts_analyzer_stats st;
	struct ts_test_batch *x;
	struct msg m;

	every_rank(&m, 1, 0, 4);
	m.n = 2; /* ranks 0 and 1, then forged ones */
	add(&m, rank_batch("victim", "llm", 2, 1, 0, 4));
	add(&m, rank_batch("ml", "other", 3, 1, 0, 4));
	x = rank_batch("ml", "llm", 3, 1, 0, 4);
	x->id.pod = (char *)"someone-else";
	add(&m, x);
	assert_int_equal(ingest_bundle(a, SUBJECT, &m, 1), -EBADMSG);
	ts_analyzer_get_stats(a, &st);
	assert_int_equal(st.mismatched, 3);
	assert_int_equal(st.batches, 2);
	assert_int_equal(st.steps, 2 * 4);
	assert_null(ts_analyzer_job(a, "victim", "llm"));
	assert_null(ts_analyzer_job(a, "ml", "other"));
	assert_non_null(ts_analyzer_job(a, "ml", "llm"));
	/* the subject's partition token changes nothing */
	every_rank(&m, 2, 4, 4);
	assert_int_equal(ingest_bundle(a, SUBJECT ".1", &m, 2), 0);
	ts_analyzer_get_stats(a, &st);
	assert_int_equal(st.batches, 2 + RANKS);
}

/* A message on a pod subject that is no Bundle, or a Bundle's batch that is no Batch. */
static void test_bundle_malformed(void **state)
{
	struct ts_analyzer *a = *state;
	struct ts_analyzer_stats st;
	static const uint8_t junk[] = { 0xff, 0xff, 0xff, 0xff, 0x0f };
	struct msg m;

	assert_int_equal(ts_analyzer_ingest(a, SUBJECT, junk, sizeof(junk)), -EBADMSG);
	every_rank(&m, 1, 0, 1);
	m.batch[1].data = (uint8_t *)junk;
	m.batch[1].len = sizeof(junk);
	assert_int_equal(ingest_bundle(a, SUBJECT, &m, 1), -EBADMSG);
	ts_analyzer_get_stats(a, &st);
	assert_int_equal(st.bad_msgs, 2);
	assert_int_equal(st.bundles, 1);
	assert_int_equal(st.batches, RANKS - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bundle_as_batches, up, down),
		cmocka_unit_test_setup_teardown(test_bundle_gap_is_loss, up, down),
		cmocka_unit_test_setup_teardown(test_bundle_mismatch_refused, up, down),
		cmocka_unit_test_setup_teardown(test_bundle_malformed, up, down),
	};
	return cmocka_run_group_tests_name("bundle", tests, NULL, NULL);
}
