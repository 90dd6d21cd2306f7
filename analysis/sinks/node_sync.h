// SPDX-License-Identifier: Apache-2.0
/* Node health in the analyzer: notes each report's slow ranks, and every period stores
 * this partition's findings in JetStream's key-value bucket, reads the other
 * partitions' and hands the nodes this analyzer answers for to the Kubernetes writer. */
#ifndef TS_NODE_SYNC_H
#define TS_NODE_SYNC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include "buf.h"
#include "k8s_writer.h"
#include "metric.h"
#include "natskv.h"
#include "nodehealth.h"

struct ts_node_sync_stats {
	uint64_t findings, nodes, degraded, stored, store_failures, read_failures;
};

struct ts_node_sync;

/* partition of partitions: this analyzer's; period_s: how often the findings are
 * stored and the nodes synced. Returns 0, -EINVAL or -ENOMEM. */
int ts_node_sync_new(struct ts_node_sync **out, const struct ts_nh_opts *o, int partition,
		     int partitions, double period_s);
void ts_node_sync_free(struct ts_node_sync *s);
/* Notes the report's slow ranks (nodehealth.h). */
void ts_node_sync_report(struct ts_node_sync *s, json_t *report, uint64_t now_real_ns);
/* Whether a round is due at now_real_ns. */
bool ts_node_sync_due(struct ts_node_sync *s, uint64_t now_real_ns);
/* A round in three parts, so that the key-value I/O holds no lock that reports and
 * /metrics take. begin, under that lock, when the period is due (NULL when not, or out
 * of memory: the round is skipped): expires findings and copies this partition's (kv:
 * whether a bucket is there; without one the findings are kept and the nodes synced
 * all the same). io, without the lock: stores ours, reads the other partitions' (and,
 * on the first round after a start, our own, which that round does not overwrite).
 * end, under the lock again: merges what was read, counts, hands this analyzer's nodes
 * to the Kubernetes writer (w may be NULL), and frees the round. */
struct ts_node_round;
struct ts_node_round *ts_node_sync_begin(struct ts_node_sync *s, bool kv, uint64_t now_real_ns);
void ts_node_sync_io(struct ts_node_round *r, struct tsn_kv *kv);
void ts_node_sync_end(struct ts_node_sync *s, struct ts_node_round *r, struct ts_k8sw *w,
		      uint64_t now_real_ns);
/* The degraded nodes' series (trainscope_node_degraded_score{node,cause}). */
void ts_node_sync_render(struct ts_node_sync *s, struct ts_buf *out);
/* The families ts_node_sync_render writes. */
extern const struct ts_metric_table ts_node_sync_metrics;
void ts_node_sync_get_stats(struct ts_node_sync *s, struct ts_node_sync_stats *out);

#endif
