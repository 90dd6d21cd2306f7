// SPDX-License-Identifier: Apache-2.0
#include "cache.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>

struct ts_cache_entry {
	uint8_t key[32];                      /* SHA-256 of the token */
	struct ts_cache_entry *chain;         /* the bucket's next */
	struct ts_cache_entry *older, *newer; /* in the order made: the oldest goes first */
	int64_t until;                        /* monotonic seconds: kept before this */
	int64_t exp;                          /* the token's expiry (unix seconds; 0: none) */
	int err;                              /* 0 or -EACCES */
	union {
		struct ts_authz_who who;      /* err 0 */
		char why[256];                /* -EACCES */
	} u;
};

struct ts_cache_flight {
	uint8_t key[32];
	bool busy;
};

static int64_t clock_s(const struct ts_review_cache *c, clockid_t id)
{
	struct timespec ts;

	if (c->clock)
		return c->clock(id);
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec;
}

int ts_review_cache_init(struct ts_review_cache *c, int64_t bound_s, size_t cap, int max_flights)
{
	size_t nb = 16;

	memset(c, 0, sizeof(*c));
	c->bound_s = bound_s > 0 ? bound_s : 0;
	c->refusal_s = c->bound_s < TS_REVIEW_REFUSAL_S ? c->bound_s : TS_REVIEW_REFUSAL_S;
	c->cap = cap ? cap : 1;
	while (nb < c->cap && nb < (1u << 20))
		nb <<= 1;
	c->buckets = calloc(nb, sizeof(*c->buckets));
	c->flights = calloc(max_flights > 0 ? (size_t)max_flights : 1, sizeof(*c->flights));
	if (!c->buckets || !c->flights) {
		free(c->buckets);
		free(c->flights);
		return -ENOMEM;
	}
	c->mask = nb - 1;
	c->n_flights = max_flights > 0 ? max_flights : 1;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->done, NULL);
	return 0;
}

void ts_review_cache_free(struct ts_review_cache *c)
{
	struct ts_cache_entry *e, *next;

	if (!c->buckets)
		return;
	for (e = c->oldest; e; e = next) {
		next = e->newer;
		free(e);
	}
	free(c->buckets);
	free(c->flights);
	pthread_cond_destroy(&c->done);
	pthread_mutex_destroy(&c->lock);
	memset(c, 0, sizeof(*c));
}

size_t ts_review_cache_size(struct ts_review_cache *c)
{
	size_t n;

	pthread_mutex_lock(&c->lock);
	n = c->n;
	pthread_mutex_unlock(&c->lock);
	return n;
}

/* The bucket of a key: its first bytes (a SHA-256 is uniform). */
static struct ts_cache_entry **bucket(struct ts_review_cache *c, const uint8_t *key)
{
	uint64_t h;

	memcpy(&h, key, sizeof(h));
	return &c->buckets[h & c->mask];
}

static struct ts_cache_entry *find(struct ts_review_cache *c, const uint8_t *key)
{
	for (struct ts_cache_entry *e = *bucket(c, key); e; e = e->chain)
		if (!memcmp(e->key, key, sizeof(e->key)))
			return e;
	return NULL;
}

/* Unlinks e from its bucket and the age list, and frees it. Under lock. */
static void drop(struct ts_review_cache *c, struct ts_cache_entry *e)
{
	struct ts_cache_entry **at = bucket(c, e->key);

	while (*at != e)
		at = &(*at)->chain;
	*at = e->chain;
	if (e->older)
		e->older->newer = e->newer;
	else
		c->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		c->newest = e->older;
	c->n--;
	free(e);
}

static bool fresh(const struct ts_review_cache *c, const struct ts_cache_entry *e)
{
	return clock_s(c, CLOCK_MONOTONIC) < e->until &&
	       (!e->exp || clock_s(c, CLOCK_REALTIME) < e->exp);
}

/* Remembers a review's answer (0 or -EACCES); a token already expired is not. */
static void put(struct ts_review_cache *c, const uint8_t *key, int err,
		const struct ts_authz_who *who, int64_t exp, const char *why)
{
	int64_t keep = err ? c->refusal_s : c->bound_s;
	struct ts_cache_entry *e, **b;

	if (keep <= 0 || (!err && exp && exp <= clock_s(c, CLOCK_REALTIME)))
		return;
	if ((e = find(c, key)))
		drop(c, e);
	while (c->n >= c->cap && c->oldest)
		drop(c, c->oldest);
	if (!(e = calloc(1, sizeof(*e))))
		return;
	memcpy(e->key, key, sizeof(e->key));
	e->until = clock_s(c, CLOCK_MONOTONIC) + keep;
	e->err = err;
	if (err) {
		snprintf(e->u.why, sizeof(e->u.why), "%s", why);
	} else {
		e->u.who = *who;
		e->exp = exp;
	}
	b = bucket(c, key);
	e->chain = *b;
	*b = e;
	e->older = c->newest;
	if (c->newest)
		c->newest->newer = e;
	else
		c->oldest = e;
	c->newest = e;
	c->n++;
}

static struct ts_cache_flight *flight_of(struct ts_review_cache *c, const uint8_t *key)
{
	for (int i = 0; i < c->n_flights; i++)
		if (c->flights[i].busy && !memcmp(c->flights[i].key, key, 32))
			return &c->flights[i];
	return NULL;
}

/* A free flight slot for key, taken; NULL when every one is (more callers than said). */
static struct ts_cache_flight *flight_take(struct ts_review_cache *c, const uint8_t *key)
{
	for (int i = 0; i < c->n_flights; i++)
		if (!c->flights[i].busy) {
			memcpy(c->flights[i].key, key, 32);
			c->flights[i].busy = true;
			return &c->flights[i];
		}
	return NULL;
}

/* The remembered answer for key into who/exp/why: true when there is one. Under lock;
 * waits for a review of the same token under way (TS_REVIEW_WAIT_S at most). */
static bool lookup(struct ts_review_cache *c, const uint8_t *key, struct ts_authz_who *who,
		   int64_t *exp, char *why, size_t whylen, int *err)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += TS_REVIEW_WAIT_S;
	for (;;) {
		struct ts_cache_entry *e = find(c, key);

		if (e && fresh(c, e)) {
			*err = e->err;
			if (e->err) {
				memset(who, 0, sizeof(*who));
				snprintf(why, whylen, "%s", e->u.why);
			} else {
				*who = e->u.who;
				*exp = e->exp;
			}
			return true;
		}
		if (e)
			drop(c, e);
		if (!flight_of(c, key) || pthread_cond_timedwait(&c->done, &c->lock, &until))
			return false;
	}
}

static int review(struct ts_cached_review *r, const char *token, struct ts_authz_who *who,
		  int64_t *exp, char *why, size_t whylen)
{
	struct ts_review_cache *c = r->cache;
	int err;

	atomic_fetch_add(&c->misses, 1);
	atomic_fetch_add(&c->in_flight, 1);
	err = r->review(r->ctx, token, who, exp, why, whylen);
	atomic_fetch_sub(&c->in_flight, 1);
	return err;
}

int ts_cached_review(void *ctx, const char *token, struct ts_authz_who *who, int64_t *exp,
		     char *why, size_t whylen)
{
	struct ts_cached_review *r = ctx;
	struct ts_review_cache *c = r->cache;
	struct ts_cache_flight *f;
	uint8_t key[32];
	unsigned len = 0;
	int err;

	*exp = 0;
	if (!c->bound_s || EVP_Digest(token, strlen(token), key, &len, EVP_sha256(), NULL) != 1 ||
	    len != sizeof(key))
		return review(r, token, who, exp, why, whylen);
	pthread_mutex_lock(&c->lock);
	if (lookup(c, key, who, exp, why, whylen, &err)) {
		pthread_mutex_unlock(&c->lock);
		atomic_fetch_add(&c->hits, 1);
		return err;
	}
	f = flight_take(c, key);
	pthread_mutex_unlock(&c->lock);
	err = review(r, token, who, exp, why, whylen);
	pthread_mutex_lock(&c->lock);
	if (err == 0 || err == -EACCES) /* "could not ask" is never remembered */
		put(c, key, err, who, *exp, why);
	if (f) {
		f->busy = false;
		pthread_cond_broadcast(&c->done);
	}
	pthread_mutex_unlock(&c->lock);
	return err;
}
