// SPDX-License-Identifier: Apache-2.0
/* trainscope-relay: drains the rings of a folder into Step batches on NATS. */
#ifndef TS_RELAY_H
#define TS_RELAY_H

#include <stdint.h>
#include "buf.h"
#include "metric.h"
#include "bundle.h"
#include "natsw.h"

struct relay_opts {
	const char *ring_dir;
	struct tsn_opts nats;
	int flush_ms;        /* publish a producer's pending steps at least this often */
	int max_batch_steps; /* ... or as soon as this many are pending */
	enum ts_wire wire;   /* a Bundle per pod and job a round (default), or a message per
			      * rank batch */
};

struct relay_stats {
	uint64_t producers_seen, producers_active, producers_done, bad_rings;
	uint64_t unreadable_rings; /* ring files not ours to open (EACCES), once per file */
	uint64_t identity_unsaved; /* rings whose .relay file cannot be written, once per ring */
	uint64_t records, steps, batches, encode_errors, publish_errors;
	uint64_t bundles, bundle_splits; /* the pod wire's messages, and those split at the
					  * server's message bound */
	uint64_t ring_dropped; /* drops counted by the producers' rings, finished ones too */
	uint64_t unranked_producers;    /* processes that stepped with no rank, once each */
	uint64_t unranked_steps_dropped; /* their held steps past the bound or at their end */
	uint64_t ranks_learned, bad_records;
	uint64_t stepless_producers; /* ranks with collectives or GEMMs and no step, once each */
	uint64_t steps_undeviced; /* steps sent without their device time (agg.h) */
};

struct relay;

int relay_new(struct relay **out, const struct relay_opts *opts);
/* One round: waits up to timeout_ms for ring files to appear (not at all when the last
 * round left records in a ring: a round takes a few steps a ring), rescans the folder when
 * it changed, drains every ring, publishes what is due. Returns 0 or -errno. */
int relay_poll(struct relay *r, int timeout_ms);
/* Final drain of every ring, publish everything, and wait for acks: all within timeout_ms
 * (records still arriving then stay in their ring for the next relay). Returns 0 or
 * -ETIMEDOUT (what was not acknowledged is logged and counted). */
int relay_finish(struct relay *r, int timeout_ms);
void relay_get_stats(struct relay *r, struct relay_stats *out);
void relay_render_metrics(struct relay *r, struct ts_buf *b);
/* The families relay_render_metrics writes. */
extern const struct ts_metric_table relay_metric_table;
void relay_free(struct relay *r);

#endif
