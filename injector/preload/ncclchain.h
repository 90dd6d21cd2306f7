// SPDX-License-Identifier: Apache-2.0
/* A second NCCL profiler plugin chained behind trainscope's (ncclchain.c): the v5
 * callbacks NCCL gets (ncclProfiler_v5, and through the shims of ncclprof_compat.c the
 * v4 ones). Without TRAINSCOPE_NCCL_PROFILER_CHAIN they are trainscope's own callbacks
 * (ts_prof_*) behind one address comparison. */
#ifndef TS_NCCLCHAIN_H
#define TS_NCCLCHAIN_H

#include "ncclprof.h"

/* NCCL's init for one communicator. The first call loads the chained plugin, once per
 * process; then both plugins' inits run with NCCL's arguments, *ctx holds both contexts
 * and *mask is the union of both masks. A chained plugin that fails to load, or to init
 * a communicator, is said once on stderr and left out of it. Returns 0: ours runs on. */
TS_HIDDEN int ts_chain_init(void **ctx, uint64_t comm_id, int *mask, const char *comm_name,
			    int nnodes, int nranks, int rank, ts_nccl_logger log);
/* Hot path (no lock, system call or allocation). Each plugin gets the event only when its
 * mask has the type, with the parent handles translated to its own; *handle is ours, or
 * a pair of both. Returns the chained plugin's result (ours never fails). */
TS_HIDDEN int ts_chain_start(void *ctx, void **handle, ts_prof_descr_v5 *d);
/* Hot path: the event's stop for whichever plugins took it; the chained plugin's result. */
TS_HIDDEN int ts_chain_stop(void *handle);
/* Hot path: the state change for whichever plugins took the event. */
TS_HIDDEN int ts_chain_record(void *handle, int state, ts_prof_state_args_v5 *args);
/* NCCL's finalize for one communicator: both plugins', and the events the handle pool
 * could not take said on stderr. Returns the chained plugin's result. */
TS_HIDDEN int ts_chain_finalize(void *ctx);
/* From the shims of NCCL before profiler v4: says once, when a chained plugin was asked
 * for, that it cannot be (those versions' layouts are not forwarded). */
TS_HIDDEN void ts_chain_refuse_old_nccl(void);

#endif
