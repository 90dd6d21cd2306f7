// SPDX-License-Identifier: Apache-2.0
/* Kubernetes mode of the analyzer: SlowNodeReport objects and Events. */
#ifndef TS_K8S_H
#define TS_K8S_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include "kube.h"

struct ts_k8s_stats {
	uint64_t created, status_updates, conflicts, events, errors;
	uint64_t refused; /* reports or Events not written: a namespace or pod not to write to */
};

struct ts_k8s;

/* min_interval_s: a report whose verdict did not change is rewritten at most this often. */
int ts_k8s_new(struct ts_k8s **out, struct ts_kube *kube, int min_interval_s);
void ts_k8s_free(struct ts_k8s *k);
/* From realtime_ns on, its requests are cut off (ts_kube_stop_by): a stopping writer's
 * bound holds for the request under way too. */
void ts_k8s_stop_by(struct ts_k8s *k, uint64_t realtime_ns);
/* Brings the job's SlowNodeReport up to date with report (the analyzer's JSON) and
 * raises an Event on the pod of each rank that just became slow. */
void ts_k8s_publish(struct ts_k8s *k, json_t *report, uint64_t now_ns);
/* Writes the statuses the interval held back once it has passed (all: now, at exit). */
void ts_k8s_flush(struct ts_k8s *k, uint64_t now_ns, bool all);
/* The analyzer forgot the job: its held-back status is written now, its entry freed. */
void ts_k8s_forget(struct ts_k8s *k, const char *ns, const char *job, uint64_t now_ns);
void ts_k8s_get_stats(struct ts_k8s *k, struct ts_k8s_stats *out);
/* The string at key of a JSON object, "" when there is none. */
const char *ts_k8s_jstr(json_t *o, const char *key);

#endif
