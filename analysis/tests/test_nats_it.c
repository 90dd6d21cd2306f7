// SPDX-License-Identifier: Apache-2.0
/* Integration with a real nats-server: the publisher's outbox, acknowledgements and
 * resends across a server restart, deliveries lost on the way read again, a core
 * subscription given up while its handler runs, the analyzer's refusal of bad messages,
 * and the key-value bucket's parts, purges and listings that its state snapshots stand
 * on. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/ingest/analyzer.h"
#include "common/tests/natsd.h"
#include "injector/relay/batch.h"
#include "log.h"
#include "natskv.h"
#include "natsw.h"

#define SUBJ "ts.v1.it.job.rank.0"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void publish_n(struct tsn *n, int from, int to)
{
	char body[128], id[32];

	for (int i = from; i < to; i++) {
		snprintf(body, sizeof(body), "message %06d", i);
		snprintf(id, sizeof(id), "it-%d", i);
		assert_int_equal(tsn_publish(n, SUBJ, body, strlen(body) + 1, id), 0);
		tsn_pump(n);
	}
}

/* Consumes until want messages arrived or 20 s passed; seen[i] counts message i. */
static int consume(struct tsn *n, const char *durable, int *seen, int max, int want)
{
	struct tsn_sub *sub = NULL;
	double deadline = now_s() + 20;
	int got = 0;

	while (tsn_subscribe(n, durable, SUBJ, &sub) && now_s() < deadline)
		nats_Sleep(100);
	assert_non_null(sub);
	while (got < want && now_s() < deadline) {
		natsMsgList l;
		if (tsn_fetch(sub, &l, 256, 500) <= 0)
			continue;
		for (int i = 0; i < l.Count; i++) {
			int k = atoi(natsMsg_GetData(l.Msgs[i]) + 8);
			assert_true(k >= 0 && k < max);
			seen[k]++;
			got++;
			natsMsg_Ack(l.Msgs[i], NULL);
		}
		natsMsgList_Destroy(&l);
	}
	tsn_unsubscribe(sub);
	return got;
}

static void test_publish_consume(void **state)
{
	struct natsd d = { 0 };
	struct tsn_opts o = { 0 };
	struct tsn_stats st;
	struct tsn *n;
	int seen[1000] = { 0 };

	(void)state;
	assert_int_equal(natsd_start(&d, 0), 0);
	o.url = d.url;
	assert_int_equal(tsn_open(&n, &o), 0);
	publish_n(n, 0, 1000);
	assert_int_equal(tsn_flush(n, 10000), 0);
	tsn_get_stats(n, &st);
	assert_int_equal(st.acked, 1000);
	assert_int_equal(st.dropped, 0);
	assert_int_equal(consume(n, "it-pc", seen, 1000, 1000), 1000);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(seen[i], 1);
	tsn_close(n);
	natsd_cleanup(&d);
}

/* The server dies mid-stream and comes back on the same port and store: everything
 * published, before, during and after, is stored exactly once. */
/* One message a subject is in flight at a time, and the next goes on its predecessor's
 * ack, not on the next pump: a component that pumps once an interval still drains. */
static void test_subject_drains_on_acks(void **state)
{
	struct natsd d = { 0 };
	struct tsn_opts o = { 0 };
	struct tsn_stats st = { 0 };
	struct tsn *n;
	char body[64];

	(void)state;
	assert_int_equal(natsd_start(&d, 0), 0);
	o.url = d.url;
	assert_int_equal(tsn_open(&n, &o), 0);
	for (int i = 0; i < 200; i++) {
		snprintf(body, sizeof(body), "drain %d", i);
		assert_int_equal(tsn_publish(n, SUBJ, body, strlen(body) + 1, NULL), 0);
	}
	for (int t = 0; t < 1000 && !st.published; t++) { /* until connected: then no more */
		tsn_pump(n);
		tsn_get_stats(n, &st);
		if (!st.published)
			nats_Sleep(10);
	}
	for (int t = 0; t < 1000 && st.acked < 200; t++) {
		assert_true(st.inflight <= 1);
		nats_Sleep(10);
		tsn_get_stats(n, &st);
	}
	assert_int_equal(st.acked, 200);
	tsn_close(n);
	natsd_cleanup(&d);
}

/* A server that refuses the client's token (an auth service shedding load, a token not
 * accepted yet): nats.c gives the connection up at the second refusal; tsn_pump opens it
 * anew, backing off, and once the server takes the token the batch goes through. */
static void test_refused_client_comes_back(void **state)
{
	struct natsd d = { .token = "not-yours" };
	struct tsn_opts o = { 0 };
	struct tsn_stats st = { 0 };
	struct tsn *n;

	(void)state;
	assert_int_equal(natsd_start(&d, 0), 0);
	o.url = d.url;
	o.token = "the-relays";
	assert_int_equal(tsn_open(&n, &o), 0);
	assert_int_equal(tsn_publish(n, SUBJ, "refused", 8, NULL), 0);
	for (int t = 0; t < 150; t++) { /* 1.5 s of refusals */
		tsn_pump(n);
		nats_Sleep(10);
	}
	tsn_get_stats(n, &st);
	assert_false(st.connected);
	natsd_stop(&d, SIGTERM);
	d.token = "the-relays";
	assert_int_equal(natsd_start(&d, d.port), 0);
	assert_int_equal(tsn_flush(n, 20000), 0);
	tsn_get_stats(n, &st);
	assert_int_equal(st.acked, 1);
	assert_true(st.connected);
	tsn_close(n);
	natsd_cleanup(&d);
}

static void test_server_restart_loses_nothing(void **state)
{
	struct natsd d = { 0 };
	struct tsn_opts o = { 0 };
	struct tsn_stats st;
	struct tsn *n;
	int seen[600] = { 0 };

	(void)state;
	assert_int_equal(natsd_start(&d, 0), 0);
	o.url = d.url;
	o.ack_wait_ms = 500;
	assert_int_equal(tsn_open(&n, &o), 0);
	publish_n(n, 0, 200);
	natsd_stop(&d, SIGKILL);
	publish_n(n, 200, 400); /* buffered while the server is away */
	tsn_get_stats(n, &st);
	assert_true(st.acked <= 200);
	assert_int_equal(natsd_start(&d, d.port), 0);
	publish_n(n, 400, 600);
	assert_int_equal(tsn_flush(n, 20000), 0);
	tsn_get_stats(n, &st);
	assert_int_equal(st.dropped, 0);
	assert_true(st.reconnects >= 1);
	assert_int_equal(consume(n, "it-rs", seen, 600, 600), 600);
	for (int i = 0; i < 600; i++)
		assert_int_equal(seen[i], 1); /* Nats-Msg-Id made resends idempotent */
	tsn_close(n);
	natsd_cleanup(&d);
}

/* Over the outbox bound the oldest messages go, and exactly those are counted. */
static void test_outbox_bound_drops_oldest(void **state)
{
	struct natsd d = { 0 };
	struct tsn_opts o = { 0 };
	struct tsn_stats st;
	struct tsn *n;
	int seen[80] = { 0 };

	(void)state;
	/* learn a free port, then stop: the publisher starts while no server runs */
	assert_int_equal(natsd_start(&d, 0), 0);
	natsd_stop(&d, SIGTERM);
	snprintf(d.url, sizeof(d.url), "nats://127.0.0.1:%d", d.port);
	o.url = d.url;
	o.outbox_bytes = 50 * 15; /* 50 messages of 15 bytes */
	assert_int_equal(tsn_open(&n, &o), 0);
	publish_n(n, 0, 80);
	tsn_get_stats(n, &st);
	assert_int_equal(st.dropped, 30);
	assert_int_equal(st.outbox_msgs, 50);
	assert_int_equal(natsd_start(&d, d.port), 0);
	assert_int_equal(tsn_flush(n, 20000), 0);
	assert_int_equal(consume(n, "it-bound", seen, 80, 50), 50);
	for (int i = 0; i < 80; i++)
		assert_int_equal(seen[i], i >= 30);
	tsn_close(n);
	natsd_cleanup(&d);
}

/* A message the server will never take (past its max_payload) is dropped and counted,
 * and the messages behind it go: it once went first again at every pump, and held them
 * for good. */
static void test_oversized_dropped_not_blocking(void **state)
{
	static char big[8192];
	struct natsd d = { .max_payload = 4096 };
	struct tsn_opts o = { 0 };
	struct tsn_stats st;
	struct tsn *n;
	int seen[4] = { 0 };

	(void)state;
	assert_int_equal(natsd_start(&d, 0), 0);
	o.url = d.url;
	assert_int_equal(tsn_open(&n, &o), 0);
	memset(big, 'x', sizeof(big));
	assert_int_equal(tsn_publish(n, SUBJ, big, sizeof(big), "it-big"), 0);
	publish_n(n, 0, 4);
	assert_int_equal(tsn_flush(n, 20000), 0);
	tsn_get_stats(n, &st);
	assert_int_equal(st.dropped, 1);
	assert_int_equal(st.acked, 4);
	assert_int_equal(consume(n, "it-big", seen, 4, 4), 4);
	tsn_close(n);
	natsd_cleanup(&d);
}

/* Deliveries lost on the way (here taken by another fetcher of the durable consumer and
 * never acknowledged, as a server that dies takes them) come next, in order: not after
 * the 120 s ack wait, nor lost for good once a later one is acknowledged (ack all). */
static void test_lost_deliveries_come_next(void **state)
{
	struct natsd d = { 0 };
	struct tsn_opts o = { 0 };
	struct tsn_sub *sub = NULL;
	natsSubscription *thief = NULL;
	jsSubOptions so;
	jsErrCode jerr = 0;
	natsMsgList l;
	struct tsn *n;
	int got[30], ngot = 0;
	double deadline;

	(void)state;
	assert_int_equal(natsd_start(&d, 0), 0);
	o.url = d.url;
	assert_int_equal(tsn_open(&n, &o), 0);
	publish_n(n, 0, 30);
	assert_int_equal(tsn_flush(n, 10000), 0);
	deadline = now_s() + 20;
	while (tsn_subscribe(n, "it-lost", SUBJ, &sub) && now_s() < deadline)
		nats_Sleep(100);
	assert_non_null(sub);
	while (ngot < 10 && now_s() < deadline) { /* messages 0-9, the last acknowledged */
		if (tsn_fetch(sub, &l, 10 - ngot, 500) <= 0)
			continue;
		for (int i = 0; i < l.Count; i++)
			got[ngot++] = atoi(natsMsg_GetData(l.Msgs[i]) + 8);
		natsMsg_Ack(l.Msgs[l.Count - 1], NULL);
		natsMsgList_Destroy(&l);
	}
	jsSubOptions_Init(&so);
	so.Stream = "TRAINSCOPE";
	so.Consumer = "it-lost";
	assert_int_equal(js_PullSubscribe(&thief, tsn_jsctx(n, NULL), SUBJ, "it-lost", NULL, &so, &jerr),
			 NATS_OK);
	assert_int_equal(natsSubscription_Fetch(&l, thief, 7, 5000, &jerr), NATS_OK);
	assert_int_equal(l.Count, 7); /* messages 10-16 delivered, never to sub */
	natsMsgList_Destroy(&l);
	natsSubscription_Destroy(thief);
	while (ngot < 30 && now_s() < deadline) {
		int k = tsn_fetch(sub, &l, 30 - ngot, 500);
		for (int i = 0; i < k; i++)
			got[ngot++] = atoi(natsMsg_GetData(l.Msgs[i]) + 8);
		if (k > 0) {
			natsMsg_Ack(l.Msgs[k - 1], NULL);
			natsMsgList_Destroy(&l);
		}
	}
	assert_int_equal(ngot, 30);
	for (int i = 0; i < 30; i++)
		assert_int_equal(got[i], i);
	tsn_unsubscribe(sub);
	tsn_close(n);
	natsd_cleanup(&d);
}

static void publish_batch(struct tsn *n, uint64_t seq, int step)
{
	struct ts_ident id = { .ns = "it", .job = "job", .rank = 0, .world_size = 1 };
	struct ts_step_sum s = { .step = (uint64_t)step, .start_ns = 1, .end_ns = 2 };
	struct ts_batch_hdr h = { .id = &id, .producer_id = 99, .seq = seq };
	uint8_t *buf;
	size_t len;

	assert_int_equal(ts_batch_encode(&h, &s, 1, &buf, &len), 0);
	assert_int_equal(tsn_publish(n, SUBJ, buf, len, NULL), 0);
	free(buf);
}

static void test_analyzer_refuses_bad_input(void **state)
{
	struct natsd d = { 0 };
	struct tsn_opts o = { 0 };
	struct ts_analyzer_opts ao = { .max_msg_bytes = 1000 };
	struct ts_analyzer_stats st;
	struct ts_analyzer *a;
	struct tsn_sub *sub = NULL;
	struct tsn *n;
	static char big[5000];
	int got = 0;
	double deadline;

	(void)state;
	ts_params_defaults(&ao.params);
	assert_int_equal(natsd_start(&d, 0), 0);
	o.url = d.url;
	assert_int_equal(tsn_open(&n, &o), 0);
	publish_batch(n, 1, 0);
	assert_int_equal(tsn_publish(n, SUBJ, "\xff\xff\xff garbage", 12, NULL), 0);
	memset(big, 1, sizeof(big));
	assert_int_equal(tsn_publish(n, SUBJ, big, sizeof(big), NULL), 0);
	assert_int_equal(tsn_publish(n, "ts.v1.bad", "x", 1, NULL), 0);
	publish_batch(n, 1, 0); /* a duplicate */
	publish_batch(n, 4, 1); /* seq 2 and 3 never came */
	assert_int_equal(tsn_flush(n, 10000), 0);
	assert_int_equal(ts_analyzer_new(&a, &ao), 0);
	deadline = now_s() + 20;
	while (tsn_subscribe(n, "it-an", NULL, &sub) && now_s() < deadline)
		nats_Sleep(100);
	assert_non_null(sub);
	while (got < 6 && now_s() < deadline) {
		natsMsgList l;
		if (tsn_fetch(sub, &l, 16, 500) <= 0)
			continue;
		for (int i = 0; i < l.Count; i++, got++) {
			ts_analyzer_ingest(a, natsMsg_GetSubject(l.Msgs[i]), natsMsg_GetData(l.Msgs[i]),
					   (size_t)natsMsg_GetDataLength(l.Msgs[i]));
			natsMsg_Ack(l.Msgs[i], NULL);
		}
		natsMsgList_Destroy(&l);
	}
	assert_int_equal(got, 6);
	ts_analyzer_get_stats(a, &st);
	assert_int_equal(st.msgs, 6);
	assert_int_equal(st.batches, 2);
	assert_int_equal(st.bad_msgs, 1);
	assert_int_equal(st.oversized, 1);
	assert_int_equal(st.bad_subject, 1);
	assert_int_equal(st.duplicates, 1);
	assert_int_equal(st.lost_batches, 2);
	assert_int_equal(st.steps, 2);
	tsn_unsubscribe(sub);
	ts_analyzer_free(a);
	tsn_close(n);
	natsd_cleanup(&d);
}

static void count_key(void *ctx, const char *key)
{
	(void)key;
	(*(int *)ctx)++;
}

/* An object in parts (three of the bucket's 256 KiB values) reads back whole; a purge
 * by pattern removes its parts and no other key, and leaves none listed. */
static void test_kv_parts_purged(void **state)
{
	static char data[600 << 10], back[sizeof(data)];
	struct natsd d = { 0 };
	struct tsn_opts o = { 0 };
	struct tsn_kv *kv;
	struct tsn *n;
	char why[256];
	int keys;

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7);
	assert_int_equal(natsd_start(&d, 0), 0);
	o.url = d.url;
	assert_int_equal(tsn_open(&n, &o), 0);
	assert_int_equal(tsn_kv_open(n, "it-snap", &kv, why, sizeof(why)), 0);
	assert_int_equal(tsn_kv_put_parts(kv, "an.o.7", data, sizeof(data), why, sizeof(why)), 0);
	assert_int_equal(tsn_kv_put_parts(kv, "an.o.8", data, 10, why, sizeof(why)), 0);
	assert_int_equal(tsn_kv_get_parts(kv, "an.o.7", back, sizeof(back)), 0);
	assert_memory_equal(back, data, sizeof(data));
	keys = 0;
	assert_int_equal(tsn_kv_keys(kv, "an.o.>", count_key, &keys), 0);
	assert_int_equal(keys, 4);
	assert_int_equal(tsn_kv_purge(kv, "an.o.7.>", why, sizeof(why)), 0);
	keys = 0;
	assert_int_equal(tsn_kv_keys(kv, "an.o.>", count_key, &keys), 0);
	assert_int_equal(keys, 1);
	assert_int_equal(tsn_kv_get_parts(kv, "an.o.7", back, sizeof(back)), -EBADMSG);
	assert_int_equal(tsn_kv_get_parts(kv, "an.o.8", back, 10), 0);
	keys = 0;
	assert_int_equal(tsn_kv_keys(kv, "none.>", count_key, &keys), 0);
	assert_int_equal(keys, 0);
	tsn_kv_close(kv);
	tsn_close(n);
	natsd_cleanup(&d);
}

/* A connection nats.c gives up (the server refused it twice) is made anew with a new
 * JetStream context; the bucket's handle follows it: a put, a purge and a listing work
 * on the new connection, not only after a restart. */
static void test_kv_follows_new_connection(void **state)
{
	struct natsd d = { .token = "the-relays" };
	struct tsn_opts o = { 0 };
	struct tsn_stats st = { 0 };
	struct tsn_kv *kv;
	struct tsn *n;
	char why[256];
	int keys = 0;
	double deadline;

	(void)state;
	assert_int_equal(natsd_start(&d, 0), 0);
	o.url = d.url;
	o.token = "the-relays";
	assert_int_equal(tsn_open(&n, &o), 0);
	assert_int_equal(tsn_kv_open(n, "it-follow", &kv, why, sizeof(why)), 0);
	assert_int_equal(tsn_kv_put_parts(kv, "an.f.1", "before", 7, why, sizeof(why)), 0);
	natsd_stop(&d, SIGTERM);
	d.token = "not-yours"; /* refused twice: nats.c gives the connection up */
	assert_int_equal(natsd_start(&d, d.port), 0);
	deadline = now_s() + 20;
	do {
		tsn_pump(n);
		nats_Sleep(10);
		tsn_get_stats(n, &st);
	} while (st.connected && now_s() < deadline);
	for (int t = 0; t < 150; t++) { /* the refusals and the give-up */
		tsn_pump(n);
		nats_Sleep(10);
	}
	natsd_stop(&d, SIGTERM);
	d.token = "the-relays";
	assert_int_equal(natsd_start(&d, d.port), 0);
	deadline = now_s() + 30;
	int err = -EAGAIN;
	while (err && now_s() < deadline) { /* tsn_pump connects anew after its backoff */
		tsn_pump(n);
		err = tsn_kv_put_parts(kv, "an.f.2", "after", 6, why, sizeof(why));
		if (err)
			nats_Sleep(100);
	}
	assert_int_equal(err, 0);
	tsn_get_stats(n, &st);
	assert_true(st.connected);
	assert_int_equal(tsn_kv_purge(kv, "an.f.1.>", why, sizeof(why)), 0);
	assert_int_equal(tsn_kv_keys(kv, "an.f.>", count_key, &keys), 0);
	assert_int_equal(keys, 1);
	tsn_kv_close(kv);
	tsn_close(n);
	natsd_cleanup(&d);
}

struct slow_handler {
	_Atomic bool entered, finished;
};

/* nats.c thread: a handler whose work takes 500 ms (a token review, say). */
static void slow_cb(const char *subject, const void *data, size_t len, void *closure)
{
	struct slow_handler *h = closure;

	(void)subject, (void)data, (void)len;
	atomic_store(&h->entered, true);
	nats_Sleep(500); /* the work's length */
	atomic_store(&h->finished, true);
}

/* A core subscription given up while its handler runs: tsn_unsubscribe_core returns once
 * it has returned, not before (nats.c calls a handler once more after the unsubscribe),
 * so that the owner may free what the handler uses, as natsauth and the agent do. */
static void test_core_unsubscribe_waits_for_handler(void **state)
{
	struct slow_handler *h = calloc(1, sizeof(*h));
	struct natsd d = { 0 };
	struct tsn_opts o = { 0 };
	struct tsn_core_sub *sub = NULL;
	natsConnection *pub = NULL;
	struct tsn *n;
	double deadline, t0;

	(void)state;
	assert_non_null(h);
	assert_int_equal(natsd_start(&d, 0), 0);
	o.url = d.url;
	assert_int_equal(tsn_open(&n, &o), 0);
	assert_int_equal(tsn_subscribe_core(n, "it.slow", slow_cb, h, &sub), 0);
	assert_int_equal(natsConnection_ConnectTo(&pub, d.url), NATS_OK);
	deadline = now_s() + 20;
	while (!atomic_load(&h->entered) && now_s() < deadline) { /* until it is subscribed */
		natsConnection_PublishString(pub, "it.slow", "work");
		nats_Sleep(20);
	}
	assert_true(atomic_load(&h->entered));
	t0 = now_s();
	tsn_unsubscribe_core(sub);
	assert_true(atomic_load(&h->finished));
	assert_true(now_s() - t0 < 4.5); /* by the handler's return, not the 5 s bound */
	free(h);
	natsConnection_Destroy(pub);
	tsn_close(n);
	natsd_cleanup(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_publish_consume),
		cmocka_unit_test(test_subject_drains_on_acks),
		cmocka_unit_test(test_server_restart_loses_nothing),
		cmocka_unit_test(test_kv_follows_new_connection),
		cmocka_unit_test(test_refused_client_comes_back),
		cmocka_unit_test(test_outbox_bound_drops_oldest),
		cmocka_unit_test(test_oversized_dropped_not_blocking),
		cmocka_unit_test(test_lost_deliveries_come_next),
		cmocka_unit_test(test_core_unsubscribe_waits_for_handler),
		cmocka_unit_test(test_analyzer_refuses_bad_input),
		cmocka_unit_test(test_kv_parts_purged),
	};
	ts_log_set_level(TS_LOG_ERROR);
	return cmocka_run_group_tests_name("nats integration", tests, NULL, NULL);
}
