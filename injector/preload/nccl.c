// SPDX-License-Identifier: Apache-2.0
/* NCCL API hooks. libnccl is often loaded in a local scope, so the real functions come
 * from dlopen(RTLD_NOLOAD). Only the outermost call counts (ncclBcast calls
 * ncclBroadcast); inside ncclGroupStart/End the work launches at the outermost GroupEnd,
 * which is what the fallback times (coll.c, shared with HCCL). With NCCL's profiler plugin active (ncclprof.c) the
 * hooks only count: the plugin gives per-channel device time without events. */
#include "nccl.h"
#include "coll.h"
#include "comms.h"
#include "cudefs.h"
#include "gpu.h"
#include "real.h"
#include "trainscope.h"

#include <string.h>

unsigned ts_nccl_type_size(int dtype)
{
	static const unsigned size[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };

	return dtype >= 0 && dtype < (int)(sizeof(size) / sizeof(size[0])) ? size[dtype] : 0;
}

unsigned ts_nccl_type_size_named(const char *t)
{
	if (!t)
		return 1;
	if (strstr(t, "64"))
		return 8;
	if (strstr(t, "32"))
		return 4;
	if (strstr(t, "16"))
		return 2;
	return 1; /* the 8-bit integers and floats */
}

uint64_t ts_nccl_bytes(unsigned op, uint64_t count, unsigned elem, uint32_t nranks)
{
	bool per_rank = op == TRAINSCOPE_COLL_ALL_GATHER || op == TRAINSCOPE_COLL_REDUCE_SCATTER ||
			op == TRAINSCOPE_COLL_ALL_TO_ALL || op == TRAINSCOPE_COLL_GATHER ||
			op == TRAINSCOPE_COLL_SCATTER;

	return count * elem * (per_rank && nranks ? nranks : 1);
}

unsigned ts_nccl_op_from_name(const char *f)
{
	static const struct {
		const char *name;
		unsigned op;
	} ops[] = {
		{ "AllReduce", TRAINSCOPE_COLL_ALL_REDUCE },
		{ "AllGather", TRAINSCOPE_COLL_ALL_GATHER },
		{ "ReduceScatter", TRAINSCOPE_COLL_REDUCE_SCATTER },
		{ "Broadcast", TRAINSCOPE_COLL_BROADCAST },
		{ "Bcast", TRAINSCOPE_COLL_BROADCAST },
		{ "Reduce", TRAINSCOPE_COLL_REDUCE },
		{ "AlltoAll", TRAINSCOPE_COLL_ALL_TO_ALL },
		{ "AllToAll", TRAINSCOPE_COLL_ALL_TO_ALL },
		{ "Send", TRAINSCOPE_COLL_SEND_RECV },
		{ "Recv", TRAINSCOPE_COLL_SEND_RECV },
		{ "SendRecv", TRAINSCOPE_COLL_SEND_RECV },
		{ "Gather", TRAINSCOPE_COLL_GATHER },
		{ "Scatter", TRAINSCOPE_COLL_SCATTER },
	};

	if (!f)
		return 0;
	if (!strncmp(f, "nccl", 4))
		f += 4;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(f, ops[i].name))
			return ops[i].op;
	return 0;
}

unsigned ts_nccl_algo(const char *a)
{
	static const char *const names[] = { "Tree", "Ring", "CollNetDirect", "CollNetChain",
					     "NVLS", "NVLSTree", "PAT" };

	for (unsigned i = 0; a && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(a, names[i]))
			return i + 1;
	return 0;
}

typedef ncclResult_t (*count_fn)(ncclComm_t, int *);
static _Atomic(void *) real_count;

static uint32_t comm_ranks(void *comm)
{
	count_fn f = (count_fn)ts_real(&real_count, "libnccl", "ncclCommCount");
	int n = 0;

	return f && f(comm, &n) == 0 && n > 0 ? (uint32_t)n : 1;
}

static const struct ts_coll_lib nccl = { .sk = TS_SK_CUDA, .ranks = comm_ranks };

#define NCCL_REAL(name, ...)                                                                \
	static _Atomic(void *) real;                                                         \
	ncclResult_t (*f)(__VA_ARGS__) = ts_real(&real, "libnccl", name);                    \
	if (unlikely(!f)) {                                                                  \
		ts_missing(name);                                                            \
		return TS_NCCL_INTERNAL_ERROR;                                               \
	}

#define NCCL_CALL(op, count, dtype, comm, stream, call)                                    \
	struct ts_coll_call c;                                                               \
	ts_coll_enter(&c, &nccl, op, count, ts_nccl_type_size(dtype), comm, stream);         \
	ncclResult_t r = f call;                                                             \
	ts_coll_leave(&c);                                                                   \
	return r;

TS_EXPORT ncclResult_t ncclAllReduce(const void *s, void *r_, size_t n, int t, int op,
				     ncclComm_t comm, CUstream st)
{
	NCCL_REAL("ncclAllReduce", const void *, void *, size_t, int, int, ncclComm_t, CUstream)
	NCCL_CALL(TRAINSCOPE_COLL_ALL_REDUCE, n, t, comm, st, (s, r_, n, t, op, comm, st))
}

TS_EXPORT ncclResult_t ncclBroadcast(const void *s, void *r_, size_t n, int t, int root,
				     ncclComm_t comm, CUstream st)
{
	NCCL_REAL("ncclBroadcast", const void *, void *, size_t, int, int, ncclComm_t, CUstream)
	NCCL_CALL(TRAINSCOPE_COLL_BROADCAST, n, t, comm, st, (s, r_, n, t, root, comm, st))
}

TS_EXPORT ncclResult_t ncclBcast(void *b, size_t n, int t, int root, ncclComm_t comm,
				 CUstream st)
{
	NCCL_REAL("ncclBcast", void *, size_t, int, int, ncclComm_t, CUstream)
	NCCL_CALL(TRAINSCOPE_COLL_BROADCAST, n, t, comm, st, (b, n, t, root, comm, st))
}

TS_EXPORT ncclResult_t ncclReduce(const void *s, void *r_, size_t n, int t, int op, int root,
				  ncclComm_t comm, CUstream st)
{
	NCCL_REAL("ncclReduce", const void *, void *, size_t, int, int, int, ncclComm_t,
		  CUstream)
	NCCL_CALL(TRAINSCOPE_COLL_REDUCE, n, t, comm, st,
		  (s, r_, n, t, op, root, comm, st))
}

TS_EXPORT ncclResult_t ncclAllGather(const void *s, void *r_, size_t n, int t, ncclComm_t comm,
				     CUstream st)
{
	NCCL_REAL("ncclAllGather", const void *, void *, size_t, int, ncclComm_t, CUstream)
	NCCL_CALL(TRAINSCOPE_COLL_ALL_GATHER, n, t, comm, st, (s, r_, n, t, comm, st))
}

TS_EXPORT ncclResult_t ncclReduceScatter(const void *s, void *r_, size_t n, int t, int op,
					 ncclComm_t comm, CUstream st)
{
	NCCL_REAL("ncclReduceScatter", const void *, void *, size_t, int, int, ncclComm_t,
		  CUstream)
	NCCL_CALL(TRAINSCOPE_COLL_REDUCE_SCATTER, n, t, comm, st,
		  (s, r_, n, t, op, comm, st))
}

TS_EXPORT ncclResult_t ncclAlltoAll(const void *s, void *r_, size_t n, int t, ncclComm_t comm,
				    CUstream st)
{
	NCCL_REAL("ncclAlltoAll", const void *, void *, size_t, int, ncclComm_t, CUstream)
	NCCL_CALL(TRAINSCOPE_COLL_ALL_TO_ALL, n, t, comm, st, (s, r_, n, t, comm, st))
}

TS_EXPORT ncclResult_t ncclGather(const void *s, void *r_, size_t n, int t, int root,
				  ncclComm_t comm, CUstream st)
{
	NCCL_REAL("ncclGather", const void *, void *, size_t, int, int, ncclComm_t, CUstream)
	NCCL_CALL(TRAINSCOPE_COLL_GATHER, n, t, comm, st, (s, r_, n, t, root, comm, st))
}

TS_EXPORT ncclResult_t ncclScatter(const void *s, void *r_, size_t n, int t, int root,
				   ncclComm_t comm, CUstream st)
{
	NCCL_REAL("ncclScatter", const void *, void *, size_t, int, int, ncclComm_t, CUstream)
	NCCL_CALL(TRAINSCOPE_COLL_SCATTER, n, t, comm, st, (s, r_, n, t, root, comm, st))
}

TS_EXPORT ncclResult_t ncclSend(const void *s, size_t n, int t, int peer, ncclComm_t comm,
				CUstream st)
{
	NCCL_REAL("ncclSend", const void *, size_t, int, int, ncclComm_t, CUstream)
	NCCL_CALL(TRAINSCOPE_COLL_SEND_RECV, n, t, comm, st, (s, n, t, peer, comm, st))
}

TS_EXPORT ncclResult_t ncclRecv(void *b, size_t n, int t, int peer, ncclComm_t comm,
				CUstream st)
{
	NCCL_REAL("ncclRecv", void *, size_t, int, int, ncclComm_t, CUstream)
	NCCL_CALL(TRAINSCOPE_COLL_SEND_RECV, n, t, comm, st, (b, n, t, peer, comm, st))
}

/* ---- communicators: their shared names (comms.h) -------------------------------- */

typedef struct {
	char internal[128];
} ts_nccl_uid;

/* A communicator came out of an init: done, or (non-blocking, config.blocking = 0) still
 * being made in the background, its size and rank already known. */
#define TS_NCCL_IN_PROGRESS 7
static bool init_made(ncclResult_t r, const ncclComm_t *comm)
{
	return (r == 0 || r == TS_NCCL_IN_PROGRESS) && comm && *comm;
}

TS_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ts_nccl_uid id, int rank)
{
	NCCL_REAL("ncclCommInitRank", ncclComm_t *, int, ts_nccl_uid, int)
	TS_COLL_NESTED(ncclResult_t, (comm, nranks, id, rank))
	if (outer && r == 0 && comm && *comm)
		ts_comm_made_root(*comm, ts_comm_uid_hash(&id, sizeof(id)), (uint32_t)nranks,
			     (uint32_t)rank);
	return r;
}

TS_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ts_nccl_uid id,
					      int rank, void *config)
{
	NCCL_REAL("ncclCommInitRankConfig", ncclComm_t *, int, ts_nccl_uid, int, void *)
	TS_COLL_NESTED(ncclResult_t, (comm, nranks, id, rank, config))
	if (outer && init_made(r, comm))
		ts_comm_made_root(*comm, ts_comm_uid_hash(&id, sizeof(id)), (uint32_t)nranks,
			     (uint32_t)rank);
	return r;
}

/* NCCL 2.23+: every member passes the same nids unique ids (one per root); with one id
 * the communicator's id is the one ncclCommInitRank gives. */
TS_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nids,
						ts_nccl_uid *ids, void *config)
{
	NCCL_REAL("ncclCommInitRankScalable", ncclComm_t *, int, int, int, ts_nccl_uid *, void *)
	TS_COLL_NESTED(ncclResult_t, (comm, nranks, rank, nids, ids, config))
	if (outer && init_made(r, comm) && ids && nids > 0)
		ts_comm_made_root(*comm, ts_comm_uid_hash(ids, (size_t)nids * sizeof(*ids)),
			     (uint32_t)nranks, (uint32_t)rank);
	return r;
}

typedef ncclResult_t (*user_rank_fn)(ncclComm_t, int *);
static _Atomic(void *) real_user_rank;

TS_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
				     void *config)
{
	NCCL_REAL("ncclCommSplit", ncclComm_t, int, int, ncclComm_t *, void *)
	TS_COLL_NESTED(ncclResult_t, (comm, color, key, newcomm, config))
	if (outer && r == 0 && newcomm && *newcomm) {
		struct ts_comm *parent = ts_comm_find(comm, ts_coll_comm_hash(comm), 0);
		user_rank_fn ur = (user_rank_fn)ts_real(&real_user_rank, "libnccl", "ncclCommUserRank");
		int rank = key;
		uint64_t pid = parent ? atomic_load(&parent->id) : ts_coll_comm_hash(comm);
		if (ur)
			ur(*newcomm, &rank);
		ts_comm_made(*newcomm, ts_comm_split_id(pid ? pid : ts_coll_comm_hash(comm), color),
			     comm_ranks(*newcomm), (uint32_t)rank);
	}
	return r;
}

TS_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	NCCL_REAL("ncclCommDestroy", ncclComm_t)
	ts_comm_gone(comm);
	return f(comm);
}

TS_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	NCCL_REAL("ncclCommAbort", ncclComm_t)
	ts_comm_gone(comm);
	return f(comm);
}

TS_EXPORT ncclResult_t ncclGroupStart(void)
{
	NCCL_REAL("ncclGroupStart", void)
	ts_coll_group_start();
	return f();
}

TS_EXPORT ncclResult_t ncclGroupEnd(void)
{
	NCCL_REAL("ncclGroupEnd", void)
	bool outer;
	int slot = ts_coll_group_end_enter(&outer);
	ncclResult_t r = f();
	ts_coll_group_end_leave(slot, outer);
	return r;
}
