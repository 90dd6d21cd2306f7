// SPDX-License-Identifier: Apache-2.0
/* Reviewed tokens remembered: the API server's word on a token (who, exp; or "not
 * valid") kept by the SHA-256 of the token, never the token itself, so that a pod's
 * relays, and a relay that reconnects, cost one TokenReview, not one each. A valid
 * token's result is kept until the earlier of its own expiry and a bound (a deleted
 * pod's bound token stops being valid at the API server at once: the cache answers for
 * it up to the bound longer); a refusal for a few seconds only (it sheds a client's retry
 * storm); "could not ask" never. Concurrent reviews of one token are made once: the
 * others wait for that answer. Shared by every review worker, under one mutex. */
#ifndef TS_NATSAUTH_CACHE_H
#define TS_NATSAUTH_CACHE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "callout.h"

#define TS_REVIEW_CACHE_MAX 65536 /* entries: the oldest goes first */
#define TS_REVIEW_REFUSAL_S 10    /* a refusal is remembered this long (at most the bound) */
#define TS_REVIEW_WAIT_S 15       /* a review of the same token is waited for this long */

struct ts_cache_entry;

struct ts_review_cache {
	int64_t bound_s;             /* a valid token's result kept at most this long; 0: none */
	int64_t refusal_s;
	size_t cap;
	/* the clock, for tests: seconds of CLOCK_MONOTONIC (the bound) and CLOCK_REALTIME
	 * (a token's exp); NULL: clock_gettime */
	int64_t (*clock)(clockid_t id);
	_Atomic uint64_t hits;       /* answered without a TokenReview */
	_Atomic uint64_t misses;     /* TokenReviews made */
	_Atomic int64_t in_flight;   /* TokenReviews under way now */
	/* under lock: */
	pthread_mutex_t lock;
	pthread_cond_t done;         /* a review another caller waits for has ended */
	struct ts_cache_entry **buckets;
	size_t mask, n;
	struct ts_cache_entry *oldest, *newest;
	struct ts_cache_flight *flights; /* the tokens under review now */
	int n_flights;
};

/* bound_s 0: nothing kept (every call reviews). cap: at most this many entries;
 * max_flights: the callers reviewing at once (the workers). 0 or -ENOMEM. */
int ts_review_cache_init(struct ts_review_cache *c, int64_t bound_s, size_t cap, int max_flights);
void ts_review_cache_free(struct ts_review_cache *c);
/* Entries held now (for tests and metrics). */
size_t ts_review_cache_size(struct ts_review_cache *c);

/* A worker's review through the cache: the ctx of ts_cached_review. */
struct ts_cached_review {
	struct ts_review_cache *cache;
	ts_callout_review review; /* the worker's own: asks the API server */
	void *ctx;
};

/* ts_callout_review: the remembered answer, or review's (remembered when it is one). */
int ts_cached_review(void *ctx, const char *token, struct ts_authz_who *who, int64_t *exp,
		     char *why, size_t whylen);

#endif
