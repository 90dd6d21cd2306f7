// SPDX-License-Identifier: Apache-2.0
/* Pods that asked for trainscope and were admitted without it. The API server admits a
 * pod unchanged when it cannot reach the webhook (failurePolicy: Ignore: the webhook
 * starting or restarting, its Service without endpoints, a timeout); nothing else would
 * tell that pod's owner that the job runs unseen. */
#ifndef TS_WEBHOOK_MISSED_H
#define TS_WEBHOOK_MISSED_H

#include <stddef.h>

struct ts_kube;

struct ts_missed_opts {
	size_t sz;                   /* sizeof(struct ts_missed_opts) */
	unsigned check_s;            /* how often to look (0: never) */
	const char *namespace_label; /* pods of namespaces with it "enabled" opt in */
	const char *exclude;         /* comma-separated namespaces never sent to the webhook */
};

/* Called for each pod found: its namespace, name and uid. */
typedef void (*ts_missed_fn)(const char *ns, const char *pod, const char *uid, void *arg);

/* One look over the cluster's pods that are not done: their metadata in pages, then the
 * whole pod of each that asks and has no mark of trainscope; found() for each that the
 * webhook would inject now (ts_pod_would_inject). Returns how many were found, or a
 * negative errno with err naming the request that failed and its answer. */
int ts_missed_scan(struct ts_kube *k, const struct ts_missed_opts *o, ts_missed_fn found,
		   void *arg, char *err, size_t errlen);

#endif
