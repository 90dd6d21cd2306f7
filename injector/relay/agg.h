// SPDX-License-Identifier: Apache-2.0
/* Folds one process's ring records into per-step summaries (the Step record). */
#ifndef TS_AGG_H
#define TS_AGG_H

#include <stdbool.h>
#include <stdint.h>
#include "ring.h"

#define TS_AGG_MAX_COLL 16
#define TS_AGG_MAX_GEMM 8
#define TS_AGG_MAX_COMM 8
#define TS_AGG_MAX_PEER 16

struct ts_peer_acc { /* network sends to one peer (NCCL's profiler) */
	uint64_t comm;
	uint32_t peer, count;
	uint64_t bytes, time_ns;
};

struct ts_comm_acc {
	uint64_t id; /* 0: no communicator (API-timed collectives) */
	uint32_t count, p2p, nranks;
	uint64_t bytes, time_ns;
};

struct ts_coll_acc {
	uint8_t op;
	uint8_t bucket; /* log2(bytes) */
	uint32_t count;
	uint64_t bytes;
	uint64_t time_ns;
};

struct ts_gemm_acc {
	uint8_t bucket; /* log2(flops) */
	uint32_t count;
	uint64_t time_ns;
	double flops;
};

/* Times are CLOCK_REALTIME ns; durations ns. */
struct ts_step_sum {
	uint64_t step, start_ns, end_ns;
	uint64_t dataloader_ns, compute_ns, compute_wall_ns, collective_ns, launch_ns, sync_ns,
		gc_ns, checkpoint_ns;
	bool have_device;
	bool device_untimed; /* its GPU_STEP said the device was not timed: no fallback */
	int ncoll, ngemm, ncomm;
	struct ts_coll_acc coll[TS_AGG_MAX_COLL];
	struct ts_comm_acc comm[TS_AGG_MAX_COMM];
	uint64_t comm_overflow; /* ops of communicators past TS_AGG_MAX_COMM */
	int npeer;
	struct ts_peer_acc peer[TS_AGG_MAX_PEER];
	uint64_t peer_overflow; /* sends to peers past TS_AGG_MAX_PEER */
	struct ts_gemm_acc gemm[TS_AGG_MAX_GEMM];
	uint64_t launches, mem_live, mem_peak, comm_busy_ns;
	uint32_t alloc_failures;
};

/* With device hooks, a closed step is held until the library's GPU_STEP record for it:
 * device time arrives after the host has moved on, and a host that does not wait for its
 * GPU (no sync in the loop) runs steps ahead of it. Up to TS_AGG_HOLD steps are held;
 * past that the oldest goes without its device time (counted). */
#define TS_AGG_HOLD 8
struct ts_agg {
	int64_t mono_to_real_ns;
	uint64_t prev_end_ns; /* realtime end of the previous step */
	bool gpu_seen;
	bool cur_open;        /* records folded into cur since it was last emptied */
	uint64_t late;        /* device records for a step already sent */
	uint64_t undeviced;   /* steps sent without their device record: held too long */
	int head, nheld;      /* the held steps, oldest first, in a ring */
	bool done[TS_AGG_HOLD]; /* its device record came (or it waits no more) */
	struct ts_step_sum cur, held[TS_AGG_HOLD];
};

void ts_agg_init(struct ts_agg *a, int64_t mono_to_real_ns);
/* Returns true when a step is ready (rec closed it, or brought the device time of the
 * oldest held one); the summary is then in *out. More may be ready: ts_agg_pop. */
bool ts_agg_add(struct ts_agg *a, const struct ts_rec *rec, struct ts_step_sum *out);
/* The next ready step, in step order; false when none is. */
bool ts_agg_pop(struct ts_agg *a, struct ts_step_sum *out);

/* Whether every record added so far is in a step sum already returned: false while a
 * step is open or held (its records, taken from the ring, are in no batch yet). */
bool ts_agg_idle(const struct ts_agg *a);

/* At the producer's end: the oldest held step, waiting no more for its device time;
 * call until false. */
bool ts_agg_flush(struct ts_agg *a, struct ts_step_sum *out);

/* nccl-tests: bus bandwidth = algorithm bandwidth x this factor for n ranks. */
double ts_busbw_factor(int op, int nranks);

#endif
