// SPDX-License-Identifier: Apache-2.0
/* trainscope-agent's core: ranks of this node in, host and device samples out. */
#ifndef TS_AGENT_H
#define TS_AGENT_H

#include "buf.h"
#include "metric.h"
#include "natsw.h"

struct agent_opts {
	const char *node;     /* this node's name as the ranks report it */
	int interval_ms;      /* sample period (1000) */
	int forget_after_ms;  /* a rank silent this long is dropped (30000) */
	const char *host_cgroup; /* the host's /sys/fs/cgroup mounted here, or NULL */
	bool pods_only;          /* trace only inside the announcing pod (ts_ranks_verify) */
	const char *sysfs;       /* the host's /sys (network port counters), "/sys" */
	struct tsn_opts nats;
};

struct agent;

/* Returns 0, or a negative errno with err saying what is missing (BTF, permission). */
int agent_new(struct agent **out, const struct agent_opts *opts, char *err, size_t errlen);
void agent_free(struct agent *a);
/* One sample period's work: follow ranks, read counters, publish. */
void agent_tick(struct agent *a);
void agent_render_metrics(void *agent, struct ts_buf *b);
/* The families agent_render_metrics writes. */
extern const struct ts_metric_table agent_metric_table;
/* Tells which features run ("scheduling ok, block_io off: ..."). */
void agent_describe(struct agent *a, struct ts_buf *b);

#endif
