// SPDX-License-Identifier: Apache-2.0
/* The pod wire's bundler (bundle.h): a round's batches, one Bundle per subject in the
 * order the subjects came, each batch's bytes as the relay encoded them, seqs 1, 2, ...
 * of the bundler's producer; a Bundle that would pass the message bound split before it
 * does (counted), a batch that passes it alone dropped (counted); a Bundle the outbox
 * refuses counted lost with every batch in it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "injector/relay/batch.h"
#include "injector/relay/bundle.h"

#define PRODUCER 0xb0b0b0b0ull
#define MAX_SENT 64

/* What the bundler sent, as the outbox would have taken it. */
struct sent {
	char subject[MAX_SENT][64];
	uint8_t *data[MAX_SENT];
	size_t len[MAX_SENT];
	uint64_t seq[MAX_SENT];
	int n;
	int refuse; /* the outbox refuses: its errno */
};

static int capture(void *ctx, const char *subject, const uint8_t *data, size_t len,
		   uint64_t producer_id, uint64_t seq)
{
	struct sent *s = ctx;

	assert_int_equal(producer_id, PRODUCER);
	if (s->refuse)
		return -s->refuse;
	assert_true(s->n < MAX_SENT);
	snprintf(s->subject[s->n], sizeof(s->subject[0]), "%s", subject);
	s->data[s->n] = malloc(len);
	memcpy(s->data[s->n], data, len);
	s->len[s->n] = len;
	s->seq[s->n++] = seq;
	return 0;
}

static void sent_free(struct sent *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->data[i]);
}

/* Rank rank's batch (its seq), steps steps long, as the relay encodes it. */
static uint8_t *encoded(int rank, uint64_t seq, int steps, size_t *len)
{
	struct ts_ident id = { .ns = "ml", .job = "llm", .pod = "llm-worker-0", .rank = rank,
			       .world_size = 8 };
	struct ts_step_sum s[16] = { 0 };
	struct ts_batch_hdr h = { .id = &id, .pod_uid = "", .producer_id = 0x100 + (uint64_t)rank,
				  .seq = seq };
	uint8_t *buf;

	assert_true(steps <= 16);
	for (int i = 0; i < steps; i++)
		s[i].step = seq * 16 + (uint64_t)i;
	assert_int_equal(ts_batch_encode(&h, s, steps, &buf, len), 0);
	return buf;
}

/* The batches of sent message i, decoded, in order: their ranks and seqs into out. */
struct got {
	int rank[64];
	uint64_t seq[64];
	int n;
};

static void take(void *ctx, const uint8_t *data, size_t len)
{
	struct got *g = ctx;
	Trainscope__V1__Batch *b = trainscope__v1__batch__unpack(NULL, len, data);

	assert_non_null(b);
	assert_true(g->n < 64);
	g->rank[g->n] = b->id->rank;
	g->seq[g->n++] = b->seq;
	trainscope__v1__batch__free_unpacked(b, NULL);
}

static struct ts_bundler bundler(struct sent *s, size_t max_bytes)
{
	struct ts_bundler b;

	ts_bundler_init(&b, &(struct ts_bundler_opts){ .producer_id = PRODUCER,
						       .max_bytes = max_bytes, .send = capture,
						       .ctx = s });
	return b;
}

/* A pod's ranks of two jobs: one Bundle per job, each batch's bytes as encoded. */
static void test_bundle_per_subject(void **state)
{
	struct sent s = { 0 };
	struct ts_bundler b = bundler(&s, 1 << 20);
	struct got g = { 0 };
	uint8_t *copy[4];
	size_t len[4];

	(void)state;
	for (int round = 1; round <= 2; round++) {
		for (int r = 0; r < 4; r++) {
			uint8_t *buf = encoded(r, (uint64_t)round, 2, &len[r]);
			if (round == 2) { /* what the last round's Bundles must hold */
				copy[r] = malloc(len[r]);
				memcpy(copy[r], buf, len[r]);
			}
			assert_int_equal(ts_bundler_add(&b, r == 3 ? "ts.v1.ml.other.pod.p"
								  : "ts.v1.ml.llm.pod.p",
							buf, len[r], 2), 0);
		}
		assert_int_equal(ts_bundler_flush(&b), 0);
	}
	assert_int_equal(s.n, 4);
	for (int i = 0; i < 4; i++) {
		assert_string_equal(s.subject[i], i % 2 ? "ts.v1.ml.other.pod.p" : "ts.v1.ml.llm.pod.p");
		assert_int_equal(s.seq[i], (uint64_t)i + 1);
	}
	/* the last round's first Bundle: ranks 0-2, their bytes untouched */
	Trainscope__V1__Bundle *u = trainscope__v1__bundle__unpack(NULL, s.len[2], s.data[2]);
	assert_non_null(u);
	assert_int_equal(u->producer_id, PRODUCER);
	assert_int_equal(u->seq, 3);
	assert_int_equal(u->n_batches, 3);
	for (int r = 0; r < 3; r++) {
		assert_int_equal(u->batches[r].len, len[r]);
		assert_memory_equal(u->batches[r].data, copy[r], len[r]);
	}
	trainscope__v1__bundle__free_unpacked(u, NULL);
	assert_int_equal(ts_wire_each("ts.v1.ml.llm.pod.p.1", s.data[2], s.len[2], take, &g), 3);
	assert_int_equal(g.rank[2], 2);
	assert_int_equal(g.seq[2], 2);
	assert_int_equal(b.st.bundles, 4);
	assert_int_equal(b.st.batches, 8);
	assert_int_equal(b.st.splits, 0);
	assert_int_equal(b.st.lost, 0);
	for (int r = 0; r < 4; r++)
		free(copy[r]);
	ts_bundler_free(&b);
	sent_free(&s);
}

/* A round larger than the bound: Bundles split before they pass it, every batch in one
 * of them, in order; a batch that passes it alone is dropped and counted. */
static void test_split_at_size(void **state)
{
	size_t len, one, max;
	uint8_t *buf = encoded(0, 1, 16, &one);
	struct sent s = { 0 };
	struct ts_bundler b;
	struct got g = { 0 };
	int n = 0;

	(void)state;
	free(buf);
	max = 4 * one; /* room for three batches of 16 steps at most */
	b = bundler(&s, max);
	for (int r = 0; r < 10; r++) {
		buf = encoded(r, 1, 16, &len);
		assert_int_equal(ts_bundler_add(&b, "ts.v1.ml.llm.pod.p", buf, len, 16), 0);
	}
	assert_int_equal(ts_bundler_flush(&b), 0);
	for (int i = 0; i < s.n; i++) {
		print_message("bundle %d: %zu bytes of at most %zu\n", i, s.len[i], max);
		assert_true(s.len[i] <= max);
		n = ts_wire_each("ts.v1.ml.llm.pod.p", s.data[i], s.len[i], take, &g);
		assert_true(n >= 1 && n <= 3);
		assert_int_equal(s.seq[i], (uint64_t)i + 1);
	}
	assert_int_equal(g.n, 10);
	for (int r = 0; r < 10; r++)
		assert_int_equal(g.rank[r], r);
	assert_true(s.n >= 4);
	assert_int_equal(b.st.splits, (uint64_t)s.n - 1);
	assert_int_equal(b.st.batches, 10);
	/* a batch that passes the bound alone */
	n = s.n;
	b.opts.max_bytes = one / 2;
	buf = encoded(0, 2, 16, &len);
	assert_int_equal(ts_bundler_add(&b, "ts.v1.ml.llm.pod.p", buf, len, 16), -EMSGSIZE);
	assert_int_equal(ts_bundler_flush(&b), 0);
	assert_int_equal(b.st.lost, 1);
	assert_int_equal(b.st.bundles, (uint64_t)n);
	ts_bundler_free(&b);
	sent_free(&s);
}

/* The outbox refuses a Bundle: every batch in it counted lost. */
static void test_refused_bundle_counts_every_batch(void **state)
{
	struct sent s = { .refuse = ENOMEM };
	struct ts_bundler b = bundler(&s, 1 << 20);
	size_t len;

	(void)state;
	for (int r = 0; r < 8; r++) {
		uint8_t *buf = encoded(r, 1, 1, &len);
		assert_int_equal(ts_bundler_add(&b, "ts.v1.ml.llm.pod.p", buf, len, 1), 0);
	}
	assert_int_equal(ts_bundler_flush(&b), -ENOMEM);
	assert_int_equal(b.st.lost, 8);
	assert_int_equal(b.st.bundles, 0);
	/* the next round's seq is not skipped: the refused Bundle never reached the stream */
	s.refuse = 0;
	uint8_t *buf = encoded(0, 2, 1, &len);
	assert_int_equal(ts_bundler_add(&b, "ts.v1.ml.llm.pod.p", buf, len, 1), 0);
	assert_int_equal(ts_bundler_flush(&b), 0);
	assert_int_equal(s.seq[0], 1);
	ts_bundler_free(&b);
	sent_free(&s);
}

static void test_wire_parse(void **state)
{
	enum ts_wire w = TS_WIRE_RANK;

	(void)state;
	assert_int_equal(ts_wire_parse(NULL, &w), 0);
	assert_int_equal(w, TS_WIRE_POD);
	assert_int_equal(ts_wire_parse("rank", &w), 0);
	assert_int_equal(w, TS_WIRE_RANK);
	assert_int_equal(ts_wire_parse("pod", &w), 0);
	assert_int_equal(w, TS_WIRE_POD);
	assert_int_equal(ts_wire_parse("node", &w), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bundle_per_subject),
		cmocka_unit_test(test_split_at_size),
		cmocka_unit_test(test_refused_bundle_counts_every_batch),
		cmocka_unit_test(test_wire_parse),
	};
	return cmocka_run_group_tests_name("bundler", tests, NULL, NULL);
}
