// SPDX-License-Identifier: Apache-2.0
/* Connect storms: the review cache (a hit, expiry by the token's exp and by the bound, a
 * refusal kept briefly, "could not ask" never kept, the oldest evicted, one review for
 * callers asking at once), the "busy" refusal of a shedding worker, and the clients'
 * reconnect backoff with jitter. The review is a fake that counts its calls; the clock
 * is the test's. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/natsw_impl.h"
#include "injector/natsauth/cache.h"
#include "injector/natsauth/callout.h"

#define T0 1700000000 /* the fake clock's start (both clocks) */

static int64_t now_mono = T0, now_wall = T0;

static int64_t fake_clock(clockid_t id)
{
	return id == CLOCK_MONOTONIC ? now_mono : now_wall;
}

/* The fake API server: tokens "ok:<exp>" (exp relative to now; 0: none), "bad" (not
 * valid), "down" (could not ask); counts its calls; sleeps delay_us in each. */
static _Atomic int reviews;
static int delay_us;

static int fake_review(void *ctx, const char *token, struct ts_authz_who *who, int64_t *exp,
		       char *why, size_t whylen)
{
	long rel = 0;

	(void)ctx;
	reviews++;
	if (delay_us)
		usleep((useconds_t)delay_us);
	if (!strcmp(token, "down")) {
		snprintf(why, whylen, "TokenReview: no answer");
		return -EAGAIN;
	}
	if (sscanf(token, "ok:%ld", &rel) != 1) {
		snprintf(why, whylen, "the API server does not accept the token");
		return -EACCES;
	}
	memset(who, 0, sizeof(*who));
	snprintf(who->ns, sizeof(who->ns), "team-a");
	snprintf(who->pod, sizeof(who->pod), "%s", token);
	*exp = rel ? now_wall + rel : 0;
	return 0;
}

struct fixture {
	struct ts_review_cache cache;
	struct ts_cached_review cr;
};

static struct fixture *setup(int64_t bound_s, size_t cap)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_int_equal(ts_review_cache_init(&f->cache, bound_s, cap, 8), 0);
	f->cache.clock = fake_clock;
	f->cr = (struct ts_cached_review){ .cache = &f->cache, .review = fake_review };
	now_mono = now_wall = T0;
	reviews = 0;
	delay_us = 0;
	return f;
}

static void teardown(struct fixture *f)
{
	ts_review_cache_free(&f->cache);
	free(f);
}

static int ask(struct fixture *f, const char *token, struct ts_authz_who *who, int64_t *exp,
	       char *why)
{
	why[0] = 0;
	return ts_cached_review(&f->cr, token, who, exp, why, 256);
}

static void advance(int64_t s)
{
	now_mono += s;
	now_wall += s;
}

static void test_hit(void **state)
{
	struct fixture *f = setup(300, 16);
	struct ts_authz_who who;
	int64_t exp = 0;
	char why[256];

	(void)state;
	assert_int_equal(ask(f, "ok:3600", &who, &exp, why), 0);
	assert_int_equal(reviews, 1);
	memset(&who, 0, sizeof(who));
	exp = 0;
	advance(100);
	assert_int_equal(ask(f, "ok:3600", &who, &exp, why), 0);
	assert_int_equal(reviews, 1); /* answered from the cache */
	assert_string_equal(who.pod, "ok:3600");
	assert_int_equal(exp, T0 + 3600);
	assert_int_equal(f->cache.hits, 1);
	assert_int_equal(f->cache.misses, 1);
	/* another token is another review */
	assert_int_equal(ask(f, "ok:3601", &who, &exp, why), 0);
	assert_int_equal(reviews, 2);
	assert_int_equal(ts_review_cache_size(&f->cache), 2);
	teardown(f);
}

static void test_expiry_by_exp(void **state)
{
	struct fixture *f = setup(300, 16);
	struct ts_authz_who who;
	int64_t exp;
	char why[256];

	(void)state;
	assert_int_equal(ask(f, "ok:60", &who, &exp, why), 0);
	advance(59);
	assert_int_equal(ask(f, "ok:60", &who, &exp, why), 0);
	assert_int_equal(reviews, 1);
	advance(1); /* the token's own expiry, before the bound */
	assert_int_equal(ask(f, "ok:60", &who, &exp, why), 0);
	assert_int_equal(reviews, 2);
	/* only the wall clock passing the exp counts, the monotonic one has not moved */
	now_wall += 60;
	assert_int_equal(ask(f, "ok:60", &who, &exp, why), 0);
	assert_int_equal(reviews, 3);
	teardown(f);
}

static void test_expiry_by_bound(void **state)
{
	struct fixture *f = setup(300, 16);
	struct ts_authz_who who;
	int64_t exp;
	char why[256];

	(void)state;
	assert_int_equal(ask(f, "ok:86400", &who, &exp, why), 0);
	advance(299);
	assert_int_equal(ask(f, "ok:86400", &who, &exp, why), 0);
	assert_int_equal(reviews, 1);
	advance(1); /* the bound: the API server is asked again though the token is valid */
	assert_int_equal(ask(f, "ok:86400", &who, &exp, why), 0);
	assert_int_equal(reviews, 2);
	/* a token without exp: the bound alone */
	assert_int_equal(ask(f, "ok:0", &who, &exp, why), 0);
	advance(299);
	assert_int_equal(ask(f, "ok:0", &who, &exp, why), 0);
	assert_int_equal(reviews, 3);
	advance(1);
	assert_int_equal(ask(f, "ok:0", &who, &exp, why), 0);
	assert_int_equal(reviews, 4);
	/* a token already expired (the review raced its exp) is not kept */
	assert_int_equal(ask(f, "ok:-1", &who, &exp, why), 0);
	assert_int_equal(ask(f, "ok:-1", &who, &exp, why), 0);
	assert_int_equal(reviews, 6);
	teardown(f);
}

static void test_refusal_briefly(void **state)
{
	struct fixture *f = setup(300, 16);
	struct ts_authz_who who;
	int64_t exp;
	char why[256];

	(void)state;
	assert_int_equal(ask(f, "bad", &who, &exp, why), -EACCES);
	advance(TS_REVIEW_REFUSAL_S - 1);
	assert_int_equal(ask(f, "bad", &who, &exp, why), -EACCES);
	assert_int_equal(reviews, 1); /* the retry storm shed */
	assert_non_null(strstr(why, "does not accept")); /* with the API server's reason */
	advance(1);
	assert_int_equal(ask(f, "bad", &who, &exp, why), -EACCES);
	assert_int_equal(reviews, 2);
	teardown(f);
	/* never longer than the bound */
	f = setup(3, 16);
	assert_int_equal(ask(f, "bad", &who, &exp, why), -EACCES);
	advance(3);
	assert_int_equal(ask(f, "bad", &who, &exp, why), -EACCES);
	assert_int_equal(reviews, 2);
	teardown(f);
}

static void test_could_not_ask_not_kept(void **state)
{
	struct fixture *f = setup(300, 16);
	struct ts_authz_who who;
	int64_t exp;
	char why[256];

	(void)state;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ask(f, "down", &who, &exp, why), -EAGAIN);
		assert_non_null(strstr(why, "TokenReview"));
	}
	assert_int_equal(reviews, 3);
	assert_int_equal(ts_review_cache_size(&f->cache), 0);
	teardown(f);
}

static void test_eviction(void **state)
{
	struct fixture *f = setup(300, 4);
	struct ts_authz_who who;
	int64_t exp;
	char why[256], tok[32];

	(void)state;
	for (int i = 0; i < 5; i++) {
		snprintf(tok, sizeof(tok), "ok:%d", 1000 + i);
		assert_int_equal(ask(f, tok, &who, &exp, why), 0);
	}
	assert_int_equal(ts_review_cache_size(&f->cache), 4);
	for (int i = 4; i >= 1; i--) { /* the newest four are there */
		snprintf(tok, sizeof(tok), "ok:%d", 1000 + i);
		assert_int_equal(ask(f, tok, &who, &exp, why), 0);
	}
	assert_int_equal(reviews, 5);
	assert_int_equal(ask(f, "ok:1000", &who, &exp, why), 0); /* the oldest went */
	assert_int_equal(reviews, 6);
	assert_int_equal(ts_review_cache_size(&f->cache), 4);
	teardown(f);
}

static void test_no_cache(void **state)
{
	struct fixture *f = setup(0, 16);
	struct ts_authz_who who;
	int64_t exp;
	char why[256];

	(void)state;
	assert_int_equal(ask(f, "ok:3600", &who, &exp, why), 0);
	assert_int_equal(ask(f, "ok:3600", &who, &exp, why), 0);
	assert_int_equal(ask(f, "bad", &who, &exp, why), -EACCES);
	assert_int_equal(ask(f, "bad", &who, &exp, why), -EACCES);
	assert_int_equal(reviews, 4);
	assert_int_equal(f->cache.misses, 4);
	assert_int_equal(f->cache.hits, 0);
	teardown(f);
}

struct asker {
	struct fixture *f;
	int err;
	struct ts_authz_who who;
};

static void *ask_thread(void *arg)
{
	struct asker *a = arg;
	int64_t exp;
	char why[256];

	a->err = ask(a->f, "ok:3600", &a->who, &exp, why);
	return NULL;
}

/* A pod's relays connect at once: their token is reviewed once, the others wait for it. */
static void test_one_review_at_once(void **state)
{
	struct fixture *f = setup(300, 16);
	struct asker as[6];
	pthread_t t[6];

	(void)state;
	delay_us = 200 * 1000;
	for (int i = 0; i < 6; i++) {
		as[i] = (struct asker){ .f = f, .err = -1 };
		assert_int_equal(pthread_create(&t[i], NULL, ask_thread, &as[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(as[i].err, 0);
		assert_string_equal(as[i].who.pod, "ok:3600");
	}
	assert_int_equal(reviews, 1);
	assert_int_equal(f->cache.hits, 5);
	assert_int_equal(f->cache.in_flight, 0);
	teardown(f);
}

/* An authorization request with token ok:3600, expiring at exp (0: no exp). */
static char *request(int64_t exp)
{
	uint8_t sraw[32] = { 9 };
	struct ts_nkey server;
	json_t *claims;
	char *req;

	assert_int_equal(ts_nkey_from_raw(&server, TS_NKEY_SERVER, sraw), 0);
	claims = json_pack("{s:s, s:s, s:{s:s, s:{s:s}, s:{s:s}, s:s, s:i}}", "sub", "UX", "aud",
			   "nats-authorization-request", "nats", "user_nkey", "UX", "server_id",
			   "id", "NSERVERID", "connect_opts", "auth_token", "ok:3600", "type",
			   "authorization_request", "version", 2);
	if (exp)
		json_object_set_new(claims, "exp", json_integer(exp));
	req = ts_jwt_encode(claims, &server);
	json_decref(claims);
	return req;
}

/* A shedding worker's answer: a signed refusal saying busy, the token never reviewed. */
static void test_busy_refusal(void **state)
{
	struct ts_callout c = { .account = "TS", .review = fake_review };
	uint8_t raw[32] = { 1, 2, 3 };
	struct ts_callout_result r;
	char *req, *ans, why[128];
	json_t *claims;

	(void)state;
	reviews = 0;
	assert_int_equal(ts_nkey_from_raw(&c.issuer, TS_NKEY_ACCOUNT, raw), 0);
	req = request(0);
	ans = ts_callout_refuse(&c, req, strlen(req), "busy: 600 authorization requests waiting; retry",
				&r);
	free(req);
	assert_non_null(ans);
	assert_int_equal(r.role, TS_ROLE_NONE);
	assert_int_equal(reviews, 0);
	claims = ts_jwt_decode(ans, why, sizeof(why));
	free(ans);
	assert_non_null(claims);
	assert_null(json_object_get(json_object_get(claims, "nats"), "jwt"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(claims, "nats"), "error")),
			    "busy: 600 authorization requests waiting; retry");
	assert_string_equal(json_string_value(json_object_get(claims, "aud")), "NSERVERID");
	json_decref(claims);
}

/* A request that waited past its exp (the server's auth_timeout) is dropped unreviewed:
 * its server has refused the client already. One still in time is answered. */
static void test_stale_request_dropped(void **state)
{
	struct ts_callout c = { .account = "TS", .review = fake_review };
	uint8_t raw[32] = { 1, 2, 3 };
	struct ts_callout_result r;
	char *req, *ans;

	(void)state;
	reviews = 0;
	assert_int_equal(ts_nkey_from_raw(&c.issuer, TS_NKEY_ACCOUNT, raw), 0);
	req = request((int64_t)time(NULL) - 1);
	assert_null(ts_callout_answer(&c, req, strlen(req), &r));
	assert_true(r.stale);
	assert_non_null(strstr(r.why, "expired"));
	assert_null(ts_callout_refuse(&c, req, strlen(req), "busy", &r));
	assert_true(r.stale);
	free(req);
	assert_int_equal(reviews, 0);
	req = request((int64_t)time(NULL) + 30);
	ans = ts_callout_answer(&c, req, strlen(req), &r);
	assert_non_null(ans);
	assert_false(r.stale);
	assert_int_equal(reviews, 1);
	free(ans);
	free(req);
}

/* Reconnects back off, doubling to a cap, each wait drawn between its half and its
 * whole: clients with other seeds spread over it. */
static void test_backoff(void **state)
{
	uint64_t rng = 12345, a = 1, b = 2;
	int64_t lo[8] = { 0 }, hi[8] = { 0 };
	int same = 0;

	(void)state;
	for (int attempt = 1; attempt <= 8; attempt++) {
		lo[attempt - 1] = INT64_MAX;
		for (int i = 0; i < 2000; i++) {
			int64_t w = tsn_backoff_ms(&rng, attempt);
			lo[attempt - 1] = w < lo[attempt - 1] ? w : lo[attempt - 1];
			hi[attempt - 1] = w > hi[attempt - 1] ? w : hi[attempt - 1];
		}
	}
	/* 250 ms, 500 ms, 1 s, 2 s, 4 s, then 8 s: from its half to its whole */
	const int64_t full[8] = { 250, 500, 1000, 2000, 4000, 8000, 8000, 8000 };
	for (int i = 0; i < 8; i++) {
		assert_true(lo[i] >= full[i] / 2 && lo[i] < full[i] / 2 + full[i] / 20);
		assert_true(hi[i] <= full[i] && hi[i] > full[i] - full[i] / 20);
	}
	/* two clients refused at once do not come back together */
	for (int i = 0; i < 100; i++)
		same += tsn_backoff_ms(&a, 3) == tsn_backoff_ms(&b, 3);
	assert_true(same < 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hit),
		cmocka_unit_test(test_expiry_by_exp),
		cmocka_unit_test(test_expiry_by_bound),
		cmocka_unit_test(test_refusal_briefly),
		cmocka_unit_test(test_could_not_ask_not_kept),
		cmocka_unit_test(test_eviction),
		cmocka_unit_test(test_no_cache),
		cmocka_unit_test(test_one_review_at_once),
		cmocka_unit_test(test_busy_refusal),
		cmocka_unit_test(test_stale_request_dropped),
		cmocka_unit_test(test_backoff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
