// SPDX-License-Identifier: Apache-2.0
/* Device timing shared by the CUDA, cuBLAS, NCCL, ACL and HCCL hooks: one event pair
 * per stream per step (split where the stream waits on another), sampled kernels and
 * GEMMs, timed collectives, a poller thread that reads the events back, and the hang
 * watch. A process times the devices of one runtime: the first whose hooks run (a
 * process uses the runtime it loads); the other's work is counted, never timed. */
#ifndef TS_GPU_H
#define TS_GPU_H

#include <stdbool.h>
#include "cudefs.h"
#include "graph.h"
#include "lib.h"
#include "selftime.h"

/* Whose stream a hook hands over. A CUDA hook passes its per-thread-default-stream flag
 * as is (false = TS_SK_CUDA, true = TS_SK_PTSZ: what its NULL stream means). */
enum ts_skind { TS_SK_CUDA = 0, TS_SK_PTSZ = 1, TS_SK_ACL = 2 };

/* The device functions the timing needs, with the CUDA driver's shapes and results
 * (TS_CUDA_SUCCESS, TS_CUDA_ERROR_NOT_READY): the driver's own, or the ACL runtime's
 * behind adapters (acl.c). */
struct ts_dev_fns {
	CUresult (*ctx_get)(CUcontext *);
	CUresult (*ctx_set)(CUcontext);
	CUresult (*ev_create)(CUevent *, unsigned);
	CUresult (*ev_record)(CUevent, CUstream);
	CUresult (*ev_query)(CUevent);
	CUresult (*ev_elapsed)(float *, CUevent, CUevent);
	CUresult (*is_capturing)(CUstream, int *);
};
/* The ACL runtime's, when libascendcl is loaded (acl.c). */
TS_HIDDEN bool ts_acl_dev_fns(struct ts_dev_fns *d);

enum ts_timed_kind { TS_T_SEGMENT = 1, TS_T_KERNEL, TS_T_GEMM, TS_T_COLL };

struct ts_op_meta {
	uint16_t kind;   /* enum ts_timed_kind */
	uint16_t op;     /* collective op */
	uint32_t nranks;
	uint64_t amount; /* bytes of a collective, flops of a GEMM */
	uint64_t comm, seq;
};

/* A launch on stream s of kind sk (enum ts_skind), work kernels for its segment's count.
 * Opens the stream's segment for the step. Returns a slot >= 0 when the launch (one kernel, when
 * it may be sampled) is sampled: the caller then calls ts_gpu_timed_end after the real
 * launch. */
TS_HIDDEN int ts_gpu_launch(CUstream s, unsigned sk, bool may_sample, uint32_t work);
/* 1-in-N sampling for GEMMs, with the same adaptive N; and the process's first
 * TRAINSCOPE_GEMMS_PER_STEP (TS_GEMMS_PER_STEP) GEMMs of each step always (the same GEMMs
 * each step): every step has a throughput to compare, which a GPU shared or slowed lowers
 * and a starved host not. Per process, not per thread: autograd's backward thread timed
 * two more a step (on an H200, DDP's cuBLAS hooks cost 25 µs a step instead of 35; issue
 * 45). Each is an event pair: some 9 µs of host time and 6 of device time on an H200. */
#define TS_GEMMS_PER_STEP 2
#define TS_GEMMS_PER_STEP_MAX 255 /* always_gemm counts them in 8 bits */
/* TRAINSCOPE_DEVICE_EVERY's largest. The analyzer's change points want 8 timed steps of a
 * 20-step window (bench/results/gpu.md, session 37): past 2 they go blind, so 3 and 4 are
 * for measuring what the events cost, not for detection. */
#define TS_DEVICE_EVERY_MAX 4
TS_HIDDEN bool ts_gpu_sample_gemm(void);
/* A GEMM ts_gpu_sample_gemm chose could not be timed (no context, a capture, no free
 * event): its place among the step's first GEMMs goes to the next one. */
TS_HIDDEN void ts_gpu_gemm_unsampled(void);
/* An explicitly timed operation: start event now, end event at ts_gpu_timed_end.
 * Returns a slot, or -1 (capturing, no context, pool empty: counted, never waits). */
TS_HIDDEN int ts_gpu_timed_begin(CUstream s, unsigned sk);
TS_HIDDEN void ts_gpu_timed_end(int slot, CUstream s, unsigned sk, const struct ts_op_meta *m);

enum ts_graph_note {
	TS_GRAPH_INSTANTIATED,   /* an executable graph whose kernels were counted */
	TS_GRAPH_UNCOUNTED,      /* one whose nodes the driver would not list */
	TS_GRAPH_LAUNCH,         /* a replay */
	TS_GRAPH_UNKNOWN_LAUNCH, /* a replay of a graph instantiated unseen */
	TS_GRAPH_CAPTURED,       /* work launched into a stream being captured */
	TS_GRAPH_HOST_FUNC,      /* a host function enqueued on a stream */
};
TS_HIDDEN void ts_gpu_graph_note(enum ts_graph_note what);
/* The stream is being captured (asked only while a capture is under way): captured
 * counts the launch as captured, capturing does not. */
TS_HIDDEN bool ts_gpu_captured(CUstream s, unsigned sk);
TS_HIDDEN bool ts_gpu_capturing(CUstream s, unsigned sk);

#define TS_LAUNCH_PAUSED (-2) /* ts_launch_enter's slot while recording is paused */

/* Around one outermost launch, runtime or driver, of `kernels` kernels (a graph replay
 * runs many, a host function none; work: how many kernels its segment is to count, a
 * graph of unknown size many): count them, open the stream's segment, maybe
 * sample a single kernel (returns the slot or -1), and charge its host time (none of it
 * while recording is paused: TS_LAUNCH_PAUSED, for ts_launch_leave). Work
 * launched into a stream being captured does not run now: it counts when its graph
 * is launched. */
static inline int launch_enter_n(CUstream stream, unsigned sk, uint64_t *t0, uint32_t kernels,
				 uint32_t work)
{
	ts_tls.depth++;
	if (ts_paused())
		return TS_LAUNCH_PAUSED;
	/* a kernel's launch in a job of many clocked one in TS_TICK_EVERY, counted that many
	 * times; any other, and a graph's replay or a host function, clocked once (lib.h) */
	bool each = kernels != 1 ||
		    atomic_load_explicit(&ts_lib.tick_every, memory_order_relaxed) <= 1;
	ts_tls.tick_mul = each ? 1 : TS_TICK_EVERY;
	*t0 = each || ts_tick_sampled() ? ts_ticks() : 0; /* 0: not clocked */
	if (unlikely(atomic_load_explicit(&ts_lib.captures, memory_order_relaxed) > 0) &&
	    ts_gpu_captured(stream, sk))
		return -1;
	ts_count(TS_CNT_LAUNCHES, kernels);
	return ts_gpu_launch(stream, sk, kernels == 1, work);
}

static inline int ts_launch_enter_n(CUstream stream, unsigned sk, uint64_t *t0,
				    uint32_t kernels, uint32_t work)
{
	TS_ST_BEGIN(st);
	int r = launch_enter_n(stream, sk, t0, kernels, work);
	TS_ST_END(TS_ST_LAUNCH, st);
	return r;
}

static inline int ts_launch_enter(CUstream stream, unsigned sk, uint64_t *t0)
{
	return ts_launch_enter_n(stream, sk, t0, 1, 1);
}

/* A replay of the executable graph exec: its kernels and collectives, counted at
 * instantiation. A graph launched into a capture runs later, as part of another. */
static inline int ts_graph_launch_enter(uint64_t exec, CUstream stream, bool ptsz, uint64_t *t0)
{
	int slot;
	uint32_t kernels = ts_graph_kernels(exec, &slot);

	ts_gpu_graph_note(TS_GRAPH_LAUNCH);
	if (slot >= 0 && !(unlikely(atomic_load_explicit(&ts_lib.captures, memory_order_relaxed) > 0) &&
			   ts_gpu_capturing(stream, ptsz)))
		ts_graph_colls_replayed(slot);
	return ts_launch_enter_n(stream, ptsz, t0, kernels, kernels ? kernels : UINT16_MAX);
}

/* A host function enqueued on the stream: work on it, no kernel. */
static inline int ts_host_func_enter(CUstream stream, bool ptsz, uint64_t *t0)
{
	ts_gpu_graph_note(TS_GRAPH_HOST_FUNC);
	return ts_launch_enter_n(stream, ptsz, t0, 0, 0);
}

static inline void launch_leave(int sampled, CUstream stream, unsigned sk, uint64_t t0)
{
	static const struct ts_op_meta kernel = { .kind = TS_T_KERNEL };

	if (sampled == TS_LAUNCH_PAUSED) {
		ts_tls.depth--;
		return;
	}
	if (sampled >= 0)
		ts_gpu_timed_end(sampled, stream, sk, &kernel);
	if (t0 && !ts_tls.lib_depth)
		ts_count(TS_CNT_TICKS, (ts_ticks() - t0) * ts_tls.tick_mul);
	ts_tls.depth--;
}

static inline void ts_launch_leave(int sampled, CUstream stream, unsigned sk, uint64_t t0)
{
	TS_ST_BEGIN(st);
	launch_leave(sampled, stream, sk, t0);
	TS_ST_END(TS_ST_LAUNCH, st);
}

/* The stream is about to wait on another's work: its busy segment ends here. */
TS_HIDDEN void ts_gpu_stream_wait(CUstream s, unsigned sk);
/* True while NCCL's profiler plugin times collectives (the API hooks then do not). */
TS_HIDDEN bool ts_gpu_plugin_active(void);
TS_HIDDEN void ts_gpu_set_plugin_active(void);
/* The plugin's ops pending longer than limit_ns (the hang timeout) are reported
 * (ncclprof.c, from the poller). */
TS_HIDDEN void ts_prof_hang_scan(uint64_t now_ns, uint64_t limit_ns);
/* The plugin's network sends per peer since the last call (ncclprof.c, from the poller,
 * once a step). */
TS_HIDDEN void ts_prof_flush_peers(void);

/* Hang report from any watcher: dumps Python stacks (when the shim asked) and emits. */
TS_HIDDEN void ts_report_hang(unsigned op, uint64_t comm, uint64_t seq, uint64_t step,
			      uint64_t pending_ns);
TS_HIDDEN uint64_t ts_hang_timeout_ns(void);

/* Fills the device-side fields of the public counters (trainscope.h). */
struct trainscope_device_counters;
TS_HIDDEN void ts_gpu_get_stats(struct trainscope_device_counters *out);

#endif
