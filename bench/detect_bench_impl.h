// SPDX-License-Identifier: Apache-2.0
/* The detection bench's insides, for the files that make it up (no other file includes
 * this):
 *   detect_bench.c  the matrix of scenarios, each run judged against its truth, the table
 *   detect_sim.c    the synthetic job a scenario describes, step by step into the analyzer */
#ifndef TS_DETECT_BENCH_IMPL_H
#define TS_DETECT_BENCH_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include "analysis/detect/job.h"
#include "analysis/detect/peers.h"

#define MS 1000000ull

enum fault { F_NONE, F_COMPUTE, F_STORAGE, F_HOST, F_NETWORK, F_HANG, F_STARVED };

enum shape { PERSISTENT, TRANSIENT, GRADUAL };

struct scenario {
	const char *name;
	int world;
	const char *layout;     /* TRAINSCOPE_GROUPS the ranks run (and announce); NULL: none */
	int stages;             /* pipeline stages by rank / (world / stages); last heavier */
	double stage_extra;     /* the last stage's extra work by design */
	enum fault fault;
	double size;            /* the faulty rank's work grows by this share */
	enum shape shape;
	int onset, duration;    /* transient: steps; gradual: steps to full size */
	int steps, runs;
	double jitter;          /* per-step noise (sd, share) of every rank's work */
	int ckpt_every;         /* all ranks checkpoint every N steps (0: never) */
	double jobwide;         /* the whole job slows by this share from `onset` */
	double spike_rate;      /* share of rank-steps a pause (GC, page faults) hits */
	double spike_size;      /* ... making that rank's work this much longer */
	int net_node, net_peer; /* network: 0 job-wide, else node n - 1's NIC (and peer:
				 * the link between them) transfers `size` slower */
	bool silent;            /* the ranks run `layout` but announce only communicators */
	int every;              /* the fault hits every N-th step only (loader workers that
				 * alternate); 0: every step */
	double seqvar;          /* per-step work of each replica varies by this share (sd):
				 * sequence-length imbalance, moving among replicas */
	bool agent;             /* the node agent reports run-queue delay (a starved rank's
				 * preemptor too) */
	bool gloo;              /* no communicator is announced (gloo, a custom barrier) */
	bool shared_gpu;        /* the faulty rank's communicators' transfers slow with its
				 * compute (another process on its GPU runs NCCL's kernels
				 * slower too): still one cause */
};

static inline int faulty_rank(const struct scenario *sc)
{
	return sc->world / 2 + 1 < sc->world ? sc->world / 2 + 1 : 0;
}

/* Communicators: one per group of each layout dimension (the ranks that differ only in
 * it), or one over all ranks with no layout; ranks fill nodes of RANKS_PER_NODE. A step
 * runs them in order, each a blocking collective: it ends for all its members when the
 * last has entered, plus its transfer time. */
#define RANKS_PER_NODE 8
#define MAX_WORLD 4096

struct topo {
	int nd, size[TS_LAYOUT_MAX_DIMS], stride[TS_LAYOUT_MAX_DIMS];
	bool p2p[TS_LAYOUT_MAX_DIMS]; /* pipeline neighbours send and receive */
	bool slow[TS_LAYOUT_MAX_DIMS][MAX_WORLD]; /* [dim][group key] under the fault */
	double done[TS_LAYOUT_MAX_DIMS][MAX_WORLD];
};

static inline int node_of(int k)
{
	return k / RANKS_PER_NODE;
}

static inline uint64_t comm_id(int d, int key)
{
	return 0xc0ffee0000000000ull | (uint64_t)(d + 1) << 32 | (uint32_t)key;
}

enum variant { V_ACTUAL, V_NO_FAULT, V_NO_VAR, V_BALANCED, V_COUNT };

/* The scenario's communicators in t, and which of them its network fault slows. */
void sim_topo_init(struct topo *t, const struct scenario *sc);
/* What each rank's relay says in its Hello: the layout and its communicators; and the
 * node it runs on. */
void sim_groups(struct ts_job *j, const struct scenario *sc, const struct topo *t);
/* One step of every rank into the job; its step time under each what-if into cf (each
 * from all ranks starting together). In the job the ranks run on from where each
 * ended its last step: one that ended early waits for the others in the step's first
 * collective, as in a real synchronous job, so a late rank costs every rank's step.
 * clock[] holds each rank's time (ms); returns the step's last end. */
double sim_feed(struct ts_job *j, const struct scenario *sc, const struct topo *t, int step,
		uint64_t *seed, double cf[V_COUNT], double *clock);

#endif
