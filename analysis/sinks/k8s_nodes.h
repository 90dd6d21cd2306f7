// SPDX-License-Identifier: Apache-2.0
/* Kubernetes mode, node health (nodehealth.h): a SlowNode per node the jobs named, the
 * node's TrainscopeDegraded condition and its Events, and the opt-in remediation: a
 * taint trainscope.dev/degraded=<cause> on a degraded node, never on more than a set
 * share of the nodes at once, removed when the node is clean again. */
#ifndef TS_K8S_NODES_H
#define TS_K8S_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kube.h"
#include "nodehealth.h"

#define TS_NODE_TAINT_KEY "trainscope.dev/degraded"
#define TS_NODE_CONDITION "TrainscopeDegraded"

struct ts_node_policy {
	size_t sz;          /* sizeof(struct ts_node_policy) */
	bool taint;         /* remediate: taint a degraded node (default: report only) */
	bool dry_run;       /* say what would be done, change no node */
	const char *effect; /* PreferNoSchedule (default) or NoSchedule */
	double max_share;   /* at most this share of the nodes tainted at once (0.1) */
	const char *causes; /* comma-separated causes that may taint ("Device") */
	bool conditions;    /* set the node condition and Events (needs nodes/status) */
};

void ts_node_policy_default(struct ts_node_policy *p);
/* 0, or -EINVAL with err saying which setting is wrong. */
int ts_node_policy_check(const struct ts_node_policy *p, char *err, size_t errlen);

struct ts_node_stats {
	uint64_t slownodes_written, slownodes_deleted, conditions_set, events;
	uint64_t tainted, untainted, would_taint, held_back, errors;
};

struct ts_k8s_nodes;

/* kube stays the caller's; the policy's strings must outlive the writer. component and
 * host name the Events' source. Returns 0, -EINVAL or -ENOMEM. */
int ts_k8s_nodes_new(struct ts_k8s_nodes **out, struct ts_kube *kube,
		     const struct ts_node_policy *p, const char *host);
void ts_k8s_nodes_free(struct ts_k8s_nodes *k);

/* Brings the cluster up to date with v[0..n): the nodes this analyzer answers for, with
 * findings. A node it wrote before and not in v lost its findings: its SlowNode goes,
 * its condition clears, its taint is removed. */
void ts_k8s_nodes_sync(struct ts_k8s_nodes *k, const struct ts_nh_node *v, int n,
		       uint64_t now_real_ns);
void ts_k8s_nodes_stats(struct ts_k8s_nodes *k, struct ts_node_stats *out);

/* Whether this analyzer (partition of partitions) answers for node: one analyzer per
 * node writes its objects. */
bool ts_node_is_mine(const char *node, int partition, int partitions);

#endif
