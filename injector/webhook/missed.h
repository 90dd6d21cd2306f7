// SPDX-License-Identifier: Apache-2.0
/* Pods that asked for trainscope and were admitted without it. The API server admits a
 * pod unchanged when it cannot reach the webhook (failurePolicy: Ignore: the webhook
 * starting or restarting, its Service without endpoints, a timeout); nothing else would
 * tell that pod's owner that the job runs unseen. */
#ifndef TS_WEBHOOK_MISSED_H
#define TS_WEBHOOK_MISSED_H

#include <stdbool.h>
#include <stddef.h>

struct ts_kube;

struct ts_missed_opts {
	size_t sz;                   /* sizeof(struct ts_missed_opts) */
	unsigned check_s;            /* how often to look (0: never) */
	const char *namespace_label; /* pods of namespaces with it "enabled" opt in */
	const char *exclude;         /* comma-separated namespaces never sent to the webhook */
	unsigned page;               /* pods a list page (0: 250) */
};

/* What a look tells its caller: a pod found (its namespace, name and uid), whether a
 * uid is one found before (its pod is not read again: a pod's spec does not change), and
 * each page's end (the caller's other work need not wait for the whole look). known and
 * page_done may be NULL. */
struct ts_missed_cb {
	void (*found)(const char *ns, const char *pod, const char *uid, void *arg);
	bool (*known)(const char *uid, void *arg);
	void (*page_done)(void *arg);
	void *arg;
};

/* One look over the cluster's pods that are not done: their metadata in pages, then the
 * whole pod of each that asks, has no mark of trainscope and is not known; found() for
 * each that the webhook would inject now (ts_pod_would_inject). Returns how many were
 * found, known ones with them, or a negative errno with err naming the request that
 * failed and its answer. */
int ts_missed_scan(struct ts_kube *k, const struct ts_missed_opts *o,
		   const struct ts_missed_cb *cb, char *err, size_t errlen);

#endif
