// SPDX-License-Identifier: Apache-2.0
/* trainscope: the one API between a training process and libtrainscope.so.
 *
 * The Python shim calls it through ctypes; a C program (such as the e2e workload)
 * calls it directly. Define TRAINSCOPE_WEAK before including this header to declare
 * the functions weak: the program then runs unchanged when the library is not
 * preloaded (test `if (trainscope_step_begin)` before calling).
 *
 * Every call is safe from any thread, never blocks, never allocates and makes no
 * system call once the process's ring exists; a full ring drops and counts.
 *
 * The ABI rule: a program built against any earlier trainscope.h, or calling through
 * dlsym or ctypes, keeps working with a newer libtrainscope.so.
 *  - An entry point, once shipped, is never removed and its prototype never changes:
 *    new behaviour gets a new name. The exports are checked against
 *    injector/preload/libtrainscope.sym by make unit.
 *  - A struct the library fills only grows, at its end (never a field moved, resized or
 *    removed), and is filled through a call that takes the caller's sizeof: the library
 *    writes no byte past it, and zeroes what it does not know of a bigger (newer)
 *    caller's struct. The calls without a size (trainscope_get_counters,
 *    trainscope_get_device_counters) write exactly the layout they had when the sized
 *    calls came (2 and 20 fields), whatever the structs grow to.
 * New names rather than ELF symbol versions of the old ones: dlsym, and so ctypes and
 * every Python caller, binds a name to its newest (default) version, so an old ctypes
 * caller would reach the sized form with no size; and a version script on a library
 * that interposes vendors' and glibc's functions would have to keep every hook out of
 * its version nodes, where it no longer stands in for a program's versioned reference
 * (dlsym@GLIBC_2.34). injector/preload/tests/abi/ keeps each earlier header; a test
 * built against it runs against this library. */
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

/* Kept for programs built against an earlier header; new code calls the _sized form. */
#define TRAINSCOPE_LEGACY(use) __attribute__((deprecated("use " #use)))

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

/* Grows only at its end (the ABI rule above). */
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

/* What the device hooks saw since the process started (for tests and benchmarks).
 * Grows only at its end (the ABI rule above). */
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
	uint64_t seg_waits;      /* segments ended by their stream's wait on another's work */
	uint64_t seg_switches;   /* segments ended by a stream's switch between collective
				  * and other kernels */
	uint64_t seg_untimed;    /* segments past their stream's head not timed: their
				  * busy time is their kernels at the stream's sampled ns
				  * per kernel */
	uint64_t tail_unsampled; /* kernels in untimed segments of a stream with no sample
				  * read yet: not in the device time */
};

/* The counters into out's first size bytes (pass sizeof *out): the fields this library
 * knows that fit, then zeroes up to size for fields it does not know; no byte at or past
 * out + size is written. Returns the size of the library's own struct (so a caller sees
 * which of its fields were filled: those below min(size, the return)), also for
 * out == NULL with size 0; -EINVAL for out == NULL with a size. */
TRAINSCOPE_API int trainscope_get_counters_sized(struct trainscope_counters *out, size_t size);
TRAINSCOPE_API int trainscope_get_device_counters_sized(struct trainscope_device_counters *out,
							 size_t size);

/* Legacy: the calls of earlier headers. Each writes exactly 16 (2 fields) and 160 bytes
 * (20 fields, launches to graph_colls_uncounted) and always will; out must hold that. */
TRAINSCOPE_API TRAINSCOPE_LEGACY(trainscope_get_counters_sized)
void trainscope_get_counters(struct trainscope_counters *out);
TRAINSCOPE_API TRAINSCOPE_LEGACY(trainscope_get_device_counters_sized)
void trainscope_get_device_counters(struct trainscope_device_counters *out);

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
