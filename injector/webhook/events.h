// SPDX-License-Identifier: Apache-2.0
/* Warning Events on pods that asked for trainscope and were left unchanged, or were
 * admitted without the webhook (missed.h), posted by a thread of their own: an
 * admission review never waits on the API server. */
#ifndef TS_WEBHOOK_EVENTS_H
#define TS_WEBHOOK_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "missed.h"

struct ts_events;

struct ts_events_stats {
	uint64_t posted, failed, dropped; /* dropped: the queue was full */
	uint64_t already;                 /* a missed pod's Event was there (409) */
	uint64_t missed;                  /* pods the last look found admitted without it */
	uint64_t scans, scan_failed;      /* looks for them, and those that failed */
	uint64_t scan_ns;                 /* how long the last look took */
};

/* kubeconfig NULL: in cluster. missed (NULL or check_s 0: never): also look for pods
 * admitted without the webhook, every check_s seconds from the start, and tell each
 * once, with an Event of a name of its own. Returns 0 or a negative errno with err
 * said. */
int ts_events_start(struct ts_events **out, const char *kubeconfig,
		    const struct ts_missed_opts *missed, char *err, size_t errlen);
/* Queues an Event on pod (its name, or the generateName of a pod not yet named) of ns.
 * Never blocks; a full queue drops it (counted). */
void ts_events_skipped(struct ts_events *e, const char *ns, const char *pod, const char *why);
void ts_events_stats(struct ts_events *e, struct ts_events_stats *out);
void ts_events_stop(struct ts_events *e);

#endif
