// SPDX-License-Identifier: Apache-2.0
/* What the files of the NATS wrapper (natsw_*.c) share and nothing else includes: the
 * connection's state, its outbox entries, and the outbox's hooks that the connection
 * installs and tears down. The API is natsw.h. */
#ifndef TS_NATSW_IMPL_H
#define TS_NATSW_IMPL_H

#include "natsw.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* A message of the outbox: queued (n->head) or in flight (n->inflight). */
struct tsn_entry {
	natsMsg *msg;   /* while in flight nats.c owns it: it is the key its ack comes with */
	size_t len;
	uint64_t order; /* of tsn_publish calls: a resend goes back to its place */
	uint64_t key;   /* hash of the subject: one message per subject in flight */
	struct tsn_entry *next;
};

#define TSN_RETIRED 8

/* Subscriptions given up while their connection may still deliver to them. nats.c 3.4.1's
 * read loop looks an inbound message's subscription up and then locks and fills it
 * without holding a reference (natsConn_processMsg; fixed upstream by nats.c#638, in
 * 3.6.0): a natsSubscription_Destroy in between frees what it then writes to, which
 * glibc reports later as "double free or corruption". So none is destroyed while a
 * message may be on its way to it: a buried one goes when nothing can come any more,
 * TSN_BURY_MS after it was given up (its pull requests expired, its consumer deleted,
 * or it unsubscribed), or once the connection is closed (tsn_close). */
#define TSN_BURIED 16
#define TSN_BURY_MS 10000
struct tsn_buried {
	natsSubscription *sub;
	int64_t at_ms; /* monotonic */
};

/* A client's connection (natsw.h): its options, nats.c's handles, the outbox and what
 * has been said of the server's refusals. */
struct tsn {
	struct tsn_opts opts;
	natsConnection *nc;
	jsCtx *js;
	pthread_mutex_t lock;       /* outbox and stats: nats.c callbacks run on its threads */
	struct tsn_entry *head, *tail;
	struct tsn_entry *inflight; /* handed to nats.c, awaiting their acks */
	uint64_t next_order;
	struct tsn_stats st;
	bool stream_ready, closing, closed; /* closed: nats.c's last callback has run */
	pthread_cond_t closed_cond;
	int64_t next_stream_try_ms;
	int refused_code;           /* JetStream's last refusal said (0: none since a success) */
	int stream_code;            /* the last stream error said */
	int64_t hold_until_ms;      /* publish-only: no stream answered; wait before resending */
	char *token;                /* the token file's content, as last read */
	bool token_unread;          /* the last read failed (and was said) */
	char denied[256];           /* the last permission refusal said */
	uint64_t rng;               /* the reconnect backoff's jitter (natsw_conn.c) */
	/* nats.c closes a connection the server refused twice (an auth service shedding
	 * load, a token not accepted yet): tsn_pump makes it anew after a backoff */
	bool lost;                  /* closed by nats.c, not by tsn_close */
	int lost_rounds;            /* made anew since a connection last held */
	int64_t reopen_at_ms;       /* monotonic */
	natsConnection *retired_nc[TSN_RETIRED]; /* given up: kept until tsn_close (another */
	jsCtx *retired_js[TSN_RETIRED];          /* thread may still hold them) */
	int n_retired;
	uint64_t generation; /* connections made anew (tsn_revive): under lock */
	struct tsn_core_sub *core_subs; /* made again on the new connection */
	struct tsn_buried buried[TSN_BURIED]; /* oldest first */
	int nburied;
};

/* natsw_conn.c, from tsn_pump: a connection nats.c gave up made anew once its backoff
 * passed, the publishes in flight on it dropped (counted), the core subscriptions made
 * again on it. */
void tsn_revive(struct tsn *n);
/* natsw_sub.c: n's core subscriptions made again on n->nc. */
void tsn_core_subs_remake(struct tsn *n);
/* natsw_sub.c: sub (NULL: none) given up, destroyed later (TSN_BURIED). */
void tsn_bury(struct tsn *n, natsSubscription *sub);
/* natsw_sub.c: the buried subscriptions destroyed: those given up TSN_BURY_MS ago, or
 * all of them once the connection is closed (all). */
void tsn_reap(struct tsn *n, bool all);

/* The monotonic clock in milliseconds: backoffs, holds and deadlines. */
static inline int64_t tsn_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether an option's text is given: not NULL and not empty. */
static inline bool tsn_set(const char *s)
{
	return s && *s;
}

/* natsw_outbox.c. The ack handler tsn_open gives JetStream (nats.c thread): an
 * acknowledged message is retired and its subject's next one handed over; a failed one
 * goes back to its place in the outbox, its cause said once. */
void tsn_outbox_on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure);
/* Frees what the outbox holds, queued and in flight, once the connection and its
 * JetStream context are destroyed (in-flight messages went with the context). */
void tsn_outbox_free(struct tsn *n);

#endif
