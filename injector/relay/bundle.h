// SPDX-License-Identifier: Apache-2.0
/* The pod wire: a relay's encoded batches gathered per subject (its pod's, in one job)
 * and sent once a round as one trainscope.v1.Bundle each, split where one would pass the
 * server's message bound. The relay and trainscope-loadgen use it. */
#ifndef TS_BUNDLE_H
#define TS_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

/* How a relay publishes its ranks' batches: one Bundle a round per pod and job on
 * ts.v1.<ns>.<job>.pod.<pod> (the default), or each on its rank's subject. */
enum ts_wire { TS_WIRE_POD, TS_WIRE_RANK };

/* "pod" or "rank" into *out (NULL or "": pod). Returns 0 or -EINVAL. */
int ts_wire_parse(const char *s, enum ts_wire *out);

/* Sends one packed Bundle on subject, its Nats-Msg-Id made of producer_id and seq.
 * Returns 0 or a negative errno. */
typedef int (*ts_bundle_send_fn)(void *ctx, const char *subject, const uint8_t *data,
				 size_t len, uint64_t producer_id, uint64_t seq);

/* ts_bundle_send_fn for a NATS connection (ctx: its struct tsn): queued in its outbox. */
int ts_bundle_send_nats(void *ctx, const char *subject, const uint8_t *data, size_t len,
			uint64_t producer_id, uint64_t seq);

/* A Bundle's bound for a server that takes max_payload bytes: never past 1 MiB, whatever
 * the server allows, so that an analyzer's --max-msg-bytes (4 MiB by default) never
 * refuses a pod's whole round. */
static inline size_t ts_bundle_bound(size_t max_payload)
{
	return max_payload < (1u << 20) ? max_payload : (1u << 20);
}

struct ts_bundler_opts {
	uint64_t producer_id; /* the sender's own, new at each start (a restarted one must not
			       * meet its old ids in JetStream's duplicate window) */
	size_t max_bytes;     /* a message's bound (tsn_max_payload); may change between calls */
	ts_bundle_send_fn send;
	void *ctx;
};

struct ts_bundler_stats {
	uint64_t bundles, batches; /* sent, and the batches they held */
	uint64_t splits;           /* bundles sent before their round ended: the next batch
				    * would have taken them past max_bytes */
	uint64_t lost;             /* batches not sent: their bundle could not be packed or
				    * queued, or one alone passes max_bytes (each said) */
};

struct ts_bundle; /* one subject's batches of the round (bundle.c) */

struct ts_bundler {
	struct ts_bundler_opts opts;
	uint64_t seq;            /* of the last Bundle sent */
	struct ts_bundle *open;  /* [cap]: the first n gather this round's batches */
	int n, cap;
	struct ts_bundler_stats st;
};

void ts_bundler_init(struct ts_bundler *b, const struct ts_bundler_opts *opts);
/* Adds the encoded batch (malloc'ed: the bundler frees it), of steps step records, to
 * subject's Bundle of the round; a Bundle it would take past max_bytes is sent first
 * (counted in splits). Returns 0, or -EMSGSIZE (the batch alone passes max_bytes) or
 * -ENOMEM: the batch is dropped, counted lost and said. */
int ts_bundler_add(struct ts_bundler *b, const char *subject, uint8_t *batch, size_t len,
		   int steps);
/* Sends every Bundle of the round, in the order their subjects came. Returns 0 or the
 * first error (a Bundle's batches are then counted lost, and it is said). */
int ts_bundler_flush(struct ts_bundler *b);
/* Frees what it holds; batches not flushed are dropped (as a relay killed would). */
void ts_bundler_free(struct ts_bundler *b);

#endif
