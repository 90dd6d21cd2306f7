// SPDX-License-Identifier: Apache-2.0
/* ABI snapshot v1: trainscope.h of 95647b4, before the sized calls. Verbatim below; never edit. */
/* trainscope: the one API between a training process and libtrainscope.so.
 *
 * The Python shim calls it through ctypes; a C program (such as the e2e workload)
 * calls it directly. Define TRAINSCOPE_WEAK before including this header to declare
 * the functions weak: the program then runs unchanged when the library is not
 * preloaded (test `if (trainscope_step_begin)` before calling).
 *
 * Every call is safe from any thread, never blocks, never allocates and makes no
 * system call once the process's ring exists; a full ring drops and counts. */
#ifndef TRAINSCOPE_H
#define TRAINSCOPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef TRAINSCOPE_WEAK
#define TRAINSCOPE_API __attribute__((weak))
#else
#define TRAINSCOPE_API __attribute__((visibility("default")))
#endif

enum trainscope_region {
	TRAINSCOPE_REGION_DATALOADER = 1,
	TRAINSCOPE_REGION_COMPUTE = 2,
	TRAINSCOPE_REGION_CHECKPOINT = 3,
	TRAINSCOPE_REGION_LAUNCH = 4, /* host-side launch / framework API time */
	TRAINSCOPE_REGION_SYNC = 5,   /* waiting on the device */
	TRAINSCOPE_REGION_GC = 6,
	TRAINSCOPE_REGION_MAX = 7
};

/* Values match trainscope.v1.CollOp. */
enum trainscope_coll_op {
	TRAINSCOPE_COLL_ALL_REDUCE = 1,
	TRAINSCOPE_COLL_ALL_GATHER = 2,
	TRAINSCOPE_COLL_REDUCE_SCATTER = 3,
	TRAINSCOPE_COLL_BROADCAST = 4,
	TRAINSCOPE_COLL_REDUCE = 5,
	TRAINSCOPE_COLL_ALL_TO_ALL = 6,
	TRAINSCOPE_COLL_SEND_RECV = 7,
	TRAINSCOPE_COLL_GATHER = 8,
	TRAINSCOPE_COLL_SCATTER = 9,
	TRAINSCOPE_COLL_MAX = 10
};

struct trainscope_counters {
	uint64_t written; /* records that reached the ring */
	uint64_t dropped; /* records lost: ring full, or no ring could be made */
};

TRAINSCOPE_API void trainscope_step_begin(uint64_t step);
TRAINSCOPE_API void trainscope_step_end(uint64_t step);
TRAINSCOPE_API void trainscope_region_begin(enum trainscope_region region);
TRAINSCOPE_API void trainscope_region_end(enum trainscope_region region);
/* Device busy time of the current step's compute (CUDA events; CPU time for a CPU
 * "device"): the analyzer prefers it to the compute region's wall time. */
TRAINSCOPE_API void trainscope_compute_device_ns(uint64_t ns);
TRAINSCOPE_API void trainscope_collective_begin(enum trainscope_coll_op op, uint64_t bytes);
TRAINSCOPE_API void trainscope_collective_end(enum trainscope_coll_op op);
TRAINSCOPE_API void trainscope_get_counters(struct trainscope_counters *out);

/* What the device hooks saw since the process started (for tests and benchmarks). */
struct trainscope_device_counters {
	uint64_t launches;       /* kernel launches, every path, each counted once */
	uint64_t api_calls;      /* cuBLAS and NCCL calls (outermost) */
	uint64_t segments;       /* per-stream busy segments timed with an event pair */
	uint64_t samples;        /* sampled kernels, GEMMs and timed collectives */
	uint64_t completed;      /* event pairs read back by the poller */
	uint64_t timed_skipped;  /* timing skipped: capture, another context, pool empty */
	uint64_t capture_skips;  /* of those, streams capturing a CUDA graph */
	uint64_t hangs;          /* hang reports */
	uint64_t sample_n;       /* the current 1-in-N */
	uint64_t mem_live;       /* device bytes allocated and not freed */
	uint64_t alloc_failures;
	uint64_t gemms;          /* cuBLAS GEMM calls (outermost) */
	uint64_t colls;          /* NCCL collective and p2p calls (outermost) */
	uint64_t graphs;         /* CUDA graphs instantiated, their kernels counted */
	uint64_t graphs_uncounted; /* instantiated or launched without a kernel count */
	uint64_t graph_launches; /* graph replays (their kernels are in launches) */
	uint64_t captured;       /* launches into a stream being captured (not in launches) */
	uint64_t host_funcs;     /* host functions enqueued on streams */
	uint64_t graph_colls;    /* collectives run by graph replays (they are in colls) */
	uint64_t graph_colls_uncounted; /* collectives captured into a graph and not kept */
};
TRAINSCOPE_API void trainscope_get_device_counters(struct trainscope_device_counters *out);

/* For the Python shim. The path of a text file beside this process's ring (suffix
 * ".stacks", ".exc" or ".groups"); 0, or -1 when there is no ring. */
TRAINSCOPE_API int trainscope_side_path(const char *suffix, char *buf, size_t n);
/* The signal on which faulthandler dumps all threads into the .stacks file; the hang
 * watch raises it before it reports a hang. 0 (the default): no dump. */
TRAINSCOPE_API void trainscope_set_dump_signal(int sig);

enum trainscope_note {
	TRAINSCOPE_NOTE_EXCEPTION = 1, /* the .exc file holds a new traceback */
	TRAINSCOPE_NOTE_GROUPS = 2,    /* the .groups file holds the process groups */
};
TRAINSCOPE_API void trainscope_note(enum trainscope_note what);

/* The process's rank and world size as the program itself established them (the shim
 * calls it after torch.distributed.init_process_group), for launchers that put no rank
 * in the environment (Lightning's, mp.spawn, Ray): its steps, also those made before,
 * are published under it. local_rank: -1 when unknown. Returns 0; -EINVAL for a rank
 * outside [0, world_size); -EBUSY while another thread tells one; -ENODEV when the
 * process records nothing (no ring folder). */
TRAINSCOPE_API int trainscope_set_rank(int32_t rank, int32_t world_size, int32_t local_rank);

#ifdef __cplusplus
}
#endif
#endif
