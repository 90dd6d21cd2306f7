/* Folds one process's ring records into per-step summaries (the Step record). */
#ifndef TS_AGG_H
#define TS_AGG_H

#include <stdbool.h>
#include <stdint.h>
#include "ring.h"

#define TS_AGG_MAX_COLL 16

struct ts_coll_acc {
	uint8_t op;
	uint8_t bucket; /* log2(bytes) */
	uint32_t count;
	uint64_t bytes;
	uint64_t time_ns;
};

/* Times are CLOCK_REALTIME ns; durations ns. */
struct ts_step_sum {
	uint64_t step, start_ns, end_ns;
	uint64_t dataloader_ns, compute_ns, compute_wall_ns, collective_ns, launch_ns, sync_ns,
		gc_ns, checkpoint_ns;
	bool have_device;
	int ncoll;
	struct ts_coll_acc coll[TS_AGG_MAX_COLL];
};

struct ts_agg {
	int64_t mono_to_real_ns;
	uint64_t prev_end_ns; /* realtime end of the previous step */
	uint64_t device_ns;
	struct ts_step_sum cur;
};

void ts_agg_init(struct ts_agg *a, int64_t mono_to_real_ns);
/* Returns true when rec closes a step; the summary is then in *out. */
bool ts_agg_add(struct ts_agg *a, const struct ts_rec *rec, struct ts_step_sum *out);

/* nccl-tests: bus bandwidth = algorithm bandwidth x this factor for n ranks. */
double ts_busbw_factor(int op, int nranks);

#endif
