// SPDX-License-Identifier: Apache-2.0
/* NCCL's profiler plugin ABI, versions 5 and 4, declared by layout (NCCL's
 * ext-profiler/example/nccl/profiler_v5.h and profiler_v4.h), and trainscope's own v5
 * callbacks, which the chain (ncclchain.c) calls for NCCL and the older versions' shims
 * (ncclprof_compat.c). */
#ifndef TS_NCCLPROF_H
#define TS_NCCLPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib.h"

/* event types (activation mask bits) */
enum {
	TS_PROF_GROUP = 1 << 0,
	TS_PROF_COLL = 1 << 1,
	TS_PROF_P2P = 1 << 2,
	TS_PROF_PROXY_OP = 1 << 3,
	TS_PROF_PROXY_STEP = 1 << 4,
	TS_PROF_PROXY_CTRL = 1 << 5,
	TS_PROF_KERNEL_CH = 1 << 6,
	TS_PROF_NET_PLUGIN = 1 << 7,
	TS_PROF_V4_TYPES = 0xff, /* the types v4 knows; v5 adds API and launch events */
};
#define TS_PROF_KERNEL_CH_STOP 22 /* ncclProfilerKernelChStop, v4 and v5 */
#define TS_PROF_STEP_SEND_WAIT 9  /* ncclProfilerProxyStepSendWait: the network send is
				   * posted; the step stops when the network completes it */

typedef void (*ts_nccl_logger)(int, unsigned long, const char *, int, const char *, ...);

typedef struct {
	uint64_t type;
	void *parent;
	int rank;
	union {
		struct { int graph_captured, group_depth; } group_api;
		struct { const char *func; size_t count; const char *dtype; int root;
			 void *stream; bool graph_captured; } coll_api;
		struct { const char *func; size_t count; const char *dtype; void *stream;
			 bool graph_captured; } p2p_api;
		struct { void *stream; } kernel_launch;
		struct { uint64_t seq; const char *func; const void *sendbuf; void *recvbuf;
			 size_t count; int root; const char *dtype; uint8_t nchannels;
			 uint8_t nwarps; const char *algo; const char *proto;
			 void *parent_group; } coll;
		struct { const char *func; void *buf; const char *dtype; size_t count; int peer;
			 uint8_t nchannels; void *parent_group; } p2p;
		struct { int pid; uint8_t channel; int peer, nsteps, chunk, is_send; } proxy_op;
		struct { int step; } proxy_step;
		struct { uint8_t channel; uint64_t ptimer; } kernel_ch;
		struct { int64_t id; void *data; } net;
		char pad[88]; /* NCCL's union is coll's 88 bytes: a copy never reads past it */
	};
} ts_prof_descr_v5;

typedef union {
	struct { size_t size; } proxy_step;
	struct { uint64_t ptimer; } kernel_ch;
	char pad[16];
} ts_prof_state_args_v5;

typedef struct {
	const char *name;
	int (*init)(void **ctx, uint64_t comm_id, int *mask, const char *comm_name, int nnodes,
		    int nranks, int rank, ts_nccl_logger log);
	int (*start_event)(void *ctx, void **handle, ts_prof_descr_v5 *d);
	int (*stop_event)(void *handle);
	int (*record_event_state)(void *handle, int state, ts_prof_state_args_v5 *args);
	int (*finalize)(void *ctx);
} ts_profiler_v5;

/* v4 (NCCL 2.26, 2.27): an 8-bit type, no API events, init takes the hash later. */
typedef struct {
	uint8_t type;
	void *parent;
	int rank;
	union {
		struct { uint64_t seq; const char *func; const void *sendbuf; void *recvbuf;
			 size_t count; int root; const char *dtype; uint8_t nchannels;
			 uint8_t nwarps; const char *algo; const char *proto; } coll;
		struct { const char *func; void *buf; const char *dtype; size_t count; int peer;
			 uint8_t nchannels; } p2p;
		struct { int pid; uint8_t channel; int peer, nsteps, chunk, is_send; } proxy_op;
		struct { int step; } proxy_step;
		struct { uint8_t channel; uint64_t ptimer; } kernel_ch;
		struct { int64_t id; void *data; } net;
	};
} ts_prof_descr_v4;

typedef union {
	struct { size_t size; } proxy_step;
	struct { int appended; } proxy_ctrl;
	struct { void *data; } net;
	struct { uint64_t ptimer; } kernel_ch;
} ts_prof_state_args_v4;

typedef struct {
	const char *name;
	int (*init)(void **ctx, int *mask, const char *comm_name, uint64_t comm_id, int nnodes,
		    int nranks, int rank, ts_nccl_logger log);
	int (*start_event)(void *ctx, void **handle, ts_prof_descr_v4 *d);
	int (*stop_event)(void *handle);
	int (*record_event_state)(void *handle, int state, ts_prof_state_args_v4 *args);
	int (*finalize)(void *ctx);
} ts_profiler_v4;

/* v1 to v3 (NCCL 2.23 to 2.25): the same table; init knows no communicator. */
typedef struct {
	const char *name;
	int (*init)(void **ctx, int *mask);
	int (*start_event)(void *ctx, void **handle, void *d);
	int (*stop_event)(void *handle);
	int (*record_event_state)(void *handle, int state, void *args);
	int (*finalize)(void *ctx);
} ts_profiler_v1;

TS_HIDDEN int ts_prof_init(void **ctx, uint64_t comm_id, int *mask, const char *comm_name,
			   int nnodes, int nranks, int rank, ts_nccl_logger log);
TS_HIDDEN int ts_prof_start(void *ctx, void **handle, ts_prof_descr_v5 *d);
TS_HIDDEN int ts_prof_stop(void *handle);
TS_HIDDEN int ts_prof_record(void *handle, int state, ts_prof_state_args_v5 *args);
TS_HIDDEN int ts_prof_finalize(void *ctx);

#endif
