// SPDX-License-Identifier: Apache-2.0
/* The Kubernetes writer on a thread of its own: the analyzer hands it each job's latest
 * report and goes on; an API server that is slow or does not answer delays only the
 * SlowNodeReports and Events, never the analysis, the report files or /metrics. */
#ifndef TS_K8S_WRITER_H
#define TS_K8S_WRITER_H

#include <jansson.h>
#include <stdint.h>
#include "k8s.h"
#include "k8s_nodes.h"

struct ts_k8sw;

/* Takes k (freed by ts_k8sw_stop). Returns 0 or a negative errno. */
int ts_k8sw_start(struct ts_k8sw **out, struct ts_k8s *k);
/* Queues the job's report (copied); a newer one replaces a queued one of the same job,
 * so the queue holds at most one report a job. */
void ts_k8sw_publish(struct ts_k8sw *w, json_t *report, uint64_t now_ns);
/* Queues ts_k8s_forget for the job. */
void ts_k8sw_forget(struct ts_k8sw *w, const char *ns, const char *job, uint64_t now_ns);
/* The writer's counts as of its last write, and how many reports wait. */
void ts_k8sw_stats(struct ts_k8sw *w, struct ts_k8s_stats *out, uint64_t *queued);
/* Gives the writer node health's objects to keep (freed by ts_k8sw_stop). */
void ts_k8sw_set_nodes(struct ts_k8sw *w, struct ts_k8s_nodes *nodes);
/* Queues the node views v[0..n) (copied; a newer call replaces them while unwritten):
 * the writer brings the SlowNodes, conditions and taints up to date with them. */
void ts_k8sw_nodes(struct ts_k8sw *w, const struct ts_nh_node *v, int n, uint64_t now_ns);
void ts_k8sw_node_stats(struct ts_k8sw *w, struct ts_node_stats *out);
/* Writes what is queued and held back (for at most timeout_s, a request under way cut
 * off at it), then stops and frees. */
void ts_k8sw_stop(struct ts_k8sw *w, int timeout_s);

#endif
