// SPDX-License-Identifier: Apache-2.0
/* The Communication cause's insides, for the files that make it up (no other file
 * includes this):
 *   job_net.c        the communicators' transfer times, each judged against its own
 *                    baseline; the step's network verdict; its state in a snapshot
 *   job_net_place.c  where the alarmed communicators meet (a node, a link, the job),
 *                    the agent's counters as evidence, and the ranks a verdict names */
#ifndef TS_JOB_NET_IMPL_H
#define TS_JOB_NET_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include "change.h"
#include "job_impl.h"

#define RING 32          /* steps a communicator's times wait for evaluation */
#define WMAX 64          /* space.window_size at most */

struct slot {
	uint32_t step; /* low bits: the ring is far shorter than 2^32 steps */
	uint32_t n;    /* members that reported */
	float ms, mb;  /* the smallest time, and that member's payload */
};

struct comm {
	uint64_t id;
	uint32_t nranks;
	struct slot ring[RING];
	float t[WMAX], mb[WMAX], e[WMAX]; /* transfer ms, MB, excess over the baseline */
	int filled, next;
	uint64_t last_step;               /* the last step it was judged at */
	float base_ms, base_mb;           /* learned once, from the first window */
	struct ts_change chg;
	bool judged;                      /* a baseline, and judged at the last step */
	bool p2p;                         /* carries sends and receives (peer classes) */
};

struct ts_net {
	struct comm *c;
	int n, cap;
	int *index, icap; /* open addressing over c by id, -1 empty */
	float sigma;
	uint64_t sigma_at;
	uint64_t first_alarm;  /* the step the first of the alarmed communicators was */
	double *tmp;      /* cap + 2 * WMAX doubles */
	int tmp_cap;
	/* placing: (communicator, node) pairs and the nodes */
	uint64_t *pairs;
	int *node_of, *touch_a, *touch_h;
	const char **names;
	int npairs_cap, world_cap;
};

/* job_net.c: the communicator's index in n->c, or -1 (not seen yet). */
int ts_job_net_find(const struct ts_net *n, uint64_t id);

/* job_net_place.c: where the alarmed communicators meet, into v->scope and v->nodes (a
 * node all of them go through, a node pair, or the job), with the agent's counters and
 * the sends between ranks (job_links.c) as evidence that may place it where they could
 * not. v->slow_comms, v->comms and v->evidence are set before. */
void ts_job_net_place(struct ts_job *j, struct ts_net_verdict *v);

#endif
