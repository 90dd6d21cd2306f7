// SPDX-License-Identifier: Apache-2.0
/* HCCL API hooks (libhccl, Ascend NPUs), the NCCL hooks' twin: communicators made by
 * every init path are announced with an id all members share; every collective and
 * point-to-point call is counted, numbered per communicator, sized as nccl-tests sizes
 * it and timed on its ACL stream, or inside its group (coll.c). libhccl is found like
 * libnccl, RTLD_NEXT first, then by name among the loaded objects. */
#include "hccl_defs.h"
#include "coll.h"
#include "comms.h"
#include "real.h"
#include "trainscope.h"

#include <string.h>

#define X(name, params)                                \
	typedef ts_hccl_result(*name##_fn) params;     \
	TS_EXPORT ts_hccl_result name params;
TS_HCCL_FNS(X)
#undef X

/* Bytes of one element of an HcclDataType; 0 for an unknown type. */
static unsigned type_size(ts_hccl_dtype t)
{
	/* INT8 INT16 INT32 FP16 FP32 INT64 UINT64 UINT8 UINT16 UINT32 FP64 BFP16 INT128, -,
	 * HIF8 FP8E4M3 FP8E5M2 FP8E8M0 */
	static const unsigned size[] = { 1, 2, 4, 2, 4, 8, 8, 1, 2, 4, 8, 2, 16, 0, 1, 1, 1, 1 };

	return t >= 0 && t < (int)(sizeof(size) / sizeof(size[0])) ? size[t] : 0;
}

#define HCCL_REAL(name)                                                         \
	static _Atomic(void *) real;                                             \
	name##_fn f = (name##_fn)ts_real(&real, "libhccl", #name);               \
	if (unlikely(!f)) {                                                      \
		ts_missing(#name);                                               \
		return TS_HCCL_E_INTERNAL;                                       \
	}

static _Atomic(void *) real_size, real_rank, real_name;

static uint32_t comm_ranks(void *comm)
{
	HcclGetRankSize_fn f = (HcclGetRankSize_fn)ts_real(&real_size, "libhccl", "HcclGetRankSize");
	uint32_t n = 0;

	return f && f(comm, &n) == TS_HCCL_SUCCESS && n > 0 ? n : 1;
}

static uint32_t comm_rank(void *comm, uint32_t dflt)
{
	HcclGetRankId_fn f = (HcclGetRankId_fn)ts_real(&real_rank, "libhccl", "HcclGetRankId");
	uint32_t r = dflt;

	return f && f(comm, &r) == TS_HCCL_SUCCESS ? r : dflt;
}

static const struct ts_coll_lib hccl = { .sk = TS_SK_ACL, .ranks = comm_ranks,
					 .unseen_launches = true };

#define HCCL_CALL(op, count, elem, comm, stream, call)                                  \
	struct ts_coll_call c;                                                           \
	ts_coll_enter(&c, &hccl, op, count, elem, comm, (CUstream)(stream));            \
	ts_hccl_result r = f call;                                                       \
	ts_coll_leave(&c);                                                               \
	return r;

TS_EXPORT ts_hccl_result HcclAllReduce(void *s, void *d, uint64_t n, ts_hccl_dtype t,
				       ts_hccl_redop op, ts_hccl_comm comm, ts_acl_stream st)
{
	HCCL_REAL(HcclAllReduce)
	HCCL_CALL(TRAINSCOPE_COLL_ALL_REDUCE, n, type_size(t), comm, st, (s, d, n, t, op, comm, st))
}

TS_EXPORT ts_hccl_result HcclBroadcast(void *b, uint64_t n, ts_hccl_dtype t, uint32_t root,
				       ts_hccl_comm comm, ts_acl_stream st)
{
	HCCL_REAL(HcclBroadcast)
	HCCL_CALL(TRAINSCOPE_COLL_BROADCAST, n, type_size(t), comm, st, (b, n, t, root, comm, st))
}

TS_EXPORT ts_hccl_result HcclReduceScatter(void *s, void *d, uint64_t n, ts_hccl_dtype t,
					   ts_hccl_redop op, ts_hccl_comm comm, ts_acl_stream st)
{
	HCCL_REAL(HcclReduceScatter)
	HCCL_CALL(TRAINSCOPE_COLL_REDUCE_SCATTER, n, type_size(t), comm, st,
		  (s, d, n, t, op, comm, st))
}

/* The uneven variants are sized by this rank's share, as if every rank's were alike. */
TS_EXPORT ts_hccl_result HcclReduceScatterV(void *s, const void *counts, const void *displs,
					    void *d, uint64_t n, ts_hccl_dtype t, ts_hccl_redop op,
					    ts_hccl_comm comm, ts_acl_stream st)
{
	HCCL_REAL(HcclReduceScatterV)
	HCCL_CALL(TRAINSCOPE_COLL_REDUCE_SCATTER, n, type_size(t), comm, st,
		  (s, counts, displs, d, n, t, op, comm, st))
}

TS_EXPORT ts_hccl_result HcclScatter(void *s, void *d, uint64_t n, ts_hccl_dtype t, uint32_t root,
				     ts_hccl_comm comm, ts_acl_stream st)
{
	HCCL_REAL(HcclScatter)
	HCCL_CALL(TRAINSCOPE_COLL_SCATTER, n, type_size(t), comm, st, (s, d, n, t, root, comm, st))
}

TS_EXPORT ts_hccl_result HcclAllGather(void *s, void *d, uint64_t n, ts_hccl_dtype t,
				       ts_hccl_comm comm, ts_acl_stream st)
{
	HCCL_REAL(HcclAllGather)
	HCCL_CALL(TRAINSCOPE_COLL_ALL_GATHER, n, type_size(t), comm, st, (s, d, n, t, comm, st))
}

TS_EXPORT ts_hccl_result HcclAllGatherV(void *s, uint64_t n, void *d, const void *counts,
					const void *displs, ts_hccl_dtype t, ts_hccl_comm comm,
					ts_acl_stream st)
{
	HCCL_REAL(HcclAllGatherV)
	HCCL_CALL(TRAINSCOPE_COLL_ALL_GATHER, n, type_size(t), comm, st,
		  (s, n, d, counts, displs, t, comm, st))
}

TS_EXPORT ts_hccl_result HcclReduce(void *s, void *d, uint64_t n, ts_hccl_dtype t,
				    ts_hccl_redop op, uint32_t root, ts_hccl_comm comm,
				    ts_acl_stream st)
{
	HCCL_REAL(HcclReduce)
	HCCL_CALL(TRAINSCOPE_COLL_REDUCE, n, type_size(t), comm, st,
		  (s, d, n, t, op, root, comm, st))
}

TS_EXPORT ts_hccl_result HcclAlltoAll(const void *s, uint64_t sn, ts_hccl_dtype st_,
				      const void *d, uint64_t dn, ts_hccl_dtype dt,
				      ts_hccl_comm comm, ts_acl_stream st)
{
	HCCL_REAL(HcclAlltoAll)
	HCCL_CALL(TRAINSCOPE_COLL_ALL_TO_ALL, sn, type_size(st_), comm, st,
		  (s, sn, st_, d, dn, dt, comm, st))
}

/* Bytes this rank sends in an all-to-all-v: its per-peer counts (uint64) summed over
 * the communicator's size as the table knows it; 0 when it does not yet. */
static uint64_t v_bytes(const void *counts, ts_hccl_comm comm, ts_hccl_dtype t)
{
	struct ts_comm *cm = ts_comm_find(comm, ts_coll_comm_hash(comm), 0);
	uint32_t n = cm ? atomic_load_explicit(&cm->nranks, memory_order_relaxed) : 0;
	const uint64_t *c = counts;
	uint64_t sum = 0;

	for (uint32_t i = 0; c && i < n; i++)
		sum += c[i];
	return sum * type_size(t);
}

TS_EXPORT ts_hccl_result HcclAlltoAllV(const void *s, const void *sc, const void *sd,
				       ts_hccl_dtype st_, const void *d, const void *dc,
				       const void *dd, ts_hccl_dtype dt, ts_hccl_comm comm,
				       ts_acl_stream st)
{
	HCCL_REAL(HcclAlltoAllV)
	HCCL_CALL(TRAINSCOPE_COLL_ALL_TO_ALL, v_bytes(sc, comm, st_), 0, comm, st,
		  (s, sc, sd, st_, d, dc, dd, dt, comm, st))
}

/* The count matrix holds every rank's row; reading it all costs O(ranks^2) on the
 * caller's path, so the op goes unsized (0 bytes). */
TS_EXPORT ts_hccl_result HcclAlltoAllVC(const void *s, const void *matrix, ts_hccl_dtype st_,
					const void *d, ts_hccl_dtype dt, ts_hccl_comm comm,
					ts_acl_stream st)
{
	HCCL_REAL(HcclAlltoAllVC)
	HCCL_CALL(TRAINSCOPE_COLL_ALL_TO_ALL, 0, 0, comm, st, (s, matrix, st_, d, dt, comm, st))
}

TS_EXPORT ts_hccl_result HcclSend(void *b, uint64_t n, ts_hccl_dtype t, uint32_t peer,
				  ts_hccl_comm comm, ts_acl_stream st)
{
	HCCL_REAL(HcclSend)
	HCCL_CALL(TRAINSCOPE_COLL_SEND_RECV, n, type_size(t), comm, st, (b, n, t, peer, comm, st))
}

TS_EXPORT ts_hccl_result HcclRecv(void *b, uint64_t n, ts_hccl_dtype t, uint32_t peer,
				  ts_hccl_comm comm, ts_acl_stream st)
{
	HCCL_REAL(HcclRecv)
	HCCL_CALL(TRAINSCOPE_COLL_SEND_RECV, n, type_size(t), comm, st, (b, n, t, peer, comm, st))
}

static uint64_t batch_bytes(const ts_hccl_sr_item *it, uint32_t n)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; it && i < n; i++)
		sum += it[i].count * type_size(it[i].dtype);
	return sum;
}

TS_EXPORT ts_hccl_result HcclBatchSendRecv(ts_hccl_sr_item *items, uint32_t n,
					   ts_hccl_comm comm, ts_acl_stream st)
{
	HCCL_REAL(HcclBatchSendRecv)
	HCCL_CALL(TRAINSCOPE_COLL_SEND_RECV, batch_bytes(items, n), 0, comm, st,
		  (items, n, comm, st))
}

/* A barrier is an all-reduce of nothing, as HCCL runs it. */
TS_EXPORT ts_hccl_result HcclBarrier(ts_hccl_comm comm, ts_acl_stream st)
{
	HCCL_REAL(HcclBarrier)
	HCCL_CALL(TRAINSCOPE_COLL_ALL_REDUCE, 0, 0, comm, st, (comm, st))
}

TS_EXPORT ts_hccl_result HcclGroupStart(void)
{
	HCCL_REAL(HcclGroupStart)
	ts_coll_group_start();
	return f();
}

TS_EXPORT ts_hccl_result HcclGroupEnd(void)
{
	HCCL_REAL(HcclGroupEnd)
	bool outer;
	int slot = ts_coll_group_end_enter(&outer);
	ts_hccl_result r = f();
	ts_coll_group_end_leave(slot, outer);
	return r;
}

/* ---- communicators: their shared names (comms.h) -------------------------------- */

static void made(ts_hccl_comm comm, uint64_t id, uint32_t nranks, uint32_t rank)
{
	ts_comm_made_root(comm, id, nranks ? nranks : comm_ranks(comm), rank);
}

/* A communicator made from a rank table file: HCCL names it alike on every member
 * ("hccl_world_group" unless configured); without the name, the file's path. */
static uint64_t name_id(ts_hccl_comm comm, const char *path)
{
	HcclGetCommName_fn f = (HcclGetCommName_fn)ts_real(&real_name, "libhccl", "HcclGetCommName");
	char name[TS_HCCL_COMM_NAME_MAX + 1] = { 0 };

	if (f && f(comm, name) == TS_HCCL_SUCCESS && name[0])
		return ts_comm_uid_hash(name, strlen(name));
	return ts_comm_uid_hash(path ? path : "", path ? strlen(path) : 0);
}

TS_EXPORT ts_hccl_result HcclCommInitRootInfo(uint32_t n, const ts_hccl_root_info *root,
					      uint32_t rank, ts_hccl_comm *comm)
{
	HCCL_REAL(HcclCommInitRootInfo)
	TS_COLL_NESTED(ts_hccl_result, (n, root, rank, comm))
	if (outer && r == TS_HCCL_SUCCESS && comm && *comm && root)
		made(*comm, ts_comm_uid_hash(root, sizeof(*root)), n, rank);
	return r;
}

TS_EXPORT ts_hccl_result HcclCommInitRootInfoConfig(uint32_t n, const ts_hccl_root_info *root,
						    uint32_t rank, const ts_hccl_config *cfg,
						    ts_hccl_comm *comm)
{
	HCCL_REAL(HcclCommInitRootInfoConfig)
	TS_COLL_NESTED(ts_hccl_result, (n, root, rank, cfg, comm))
	if (outer && r == TS_HCCL_SUCCESS && comm && *comm && root)
		made(*comm, ts_comm_uid_hash(root, sizeof(*root)), n, rank);
	return r;
}

/* Every member passes the same nroot root infos. */
TS_EXPORT ts_hccl_result HcclCommInitRootInfoScalable(uint32_t n, uint32_t nroot,
						      const ts_hccl_root_info *roots,
						      uint32_t rank, uint32_t next,
						      const ts_hccl_config *cfg, ts_hccl_comm *comm)
{
	HCCL_REAL(HcclCommInitRootInfoScalable)
	TS_COLL_NESTED(ts_hccl_result, (n, nroot, roots, rank, next, cfg, comm))
	if (outer && r == TS_HCCL_SUCCESS && comm && *comm && roots && nroot)
		made(*comm, ts_comm_uid_hash(roots, (size_t)nroot * sizeof(*roots)), n, rank);
	return r;
}

TS_EXPORT ts_hccl_result HcclCommInitClusterInfo(const char *path, uint32_t rank,
						 ts_hccl_comm *comm)
{
	HCCL_REAL(HcclCommInitClusterInfo)
	TS_COLL_NESTED(ts_hccl_result, (path, rank, comm))
	if (outer && r == TS_HCCL_SUCCESS && comm && *comm)
		made(*comm, name_id(*comm, path), 0, comm_rank(*comm, rank));
	return r;
}

TS_EXPORT ts_hccl_result HcclCommInitClusterInfoConfig(const char *path, uint32_t rank,
						       ts_hccl_config *cfg, ts_hccl_comm *comm)
{
	HCCL_REAL(HcclCommInitClusterInfoConfig)
	TS_COLL_NESTED(ts_hccl_result, (path, rank, cfg, comm))
	if (outer && r == TS_HCCL_SUCCESS && comm && *comm)
		made(*comm, name_id(*comm, path), 0, comm_rank(*comm, rank));
	return r;
}

/* Members name the sub-communicator by its parent and the id they all pass. */
TS_EXPORT ts_hccl_result HcclCreateSubCommConfig(ts_hccl_comm *comm, uint32_t n, uint32_t *ids,
						 uint64_t sub_id, uint32_t sub_rank,
						 ts_hccl_config *cfg, ts_hccl_comm *sub)
{
	HCCL_REAL(HcclCreateSubCommConfig)
	TS_COLL_NESTED(ts_hccl_result, (comm, n, ids, sub_id, sub_rank, cfg, sub))
	if (outer && r == TS_HCCL_SUCCESS && comm && sub && *sub) {
		struct ts_comm *p = ts_comm_find(*comm, ts_coll_comm_hash(*comm), 0);
		uint64_t pid = p ? atomic_load(&p->id) : 0;
		made(*sub, ts_comm_split_id(pid ? pid : ts_coll_comm_hash(*comm),
					    (int)(sub_id ^ (sub_id >> 32))),
		     n, sub_rank);
	}
	return r;
}

/* One process driving ndev devices: communicator i is rank i of them all. */
TS_EXPORT ts_hccl_result HcclCommInitAll(uint32_t ndev, int32_t *devices, ts_hccl_comm *comms)
{
	HCCL_REAL(HcclCommInitAll)
	TS_COLL_NESTED(ts_hccl_result, (ndev, devices, comms))
	if (outer && r == TS_HCCL_SUCCESS && comms && devices) {
		uint64_t id = ts_comm_uid_hash(devices, ndev * sizeof(*devices)) ^
			      ts_comm_uid_hash(&comms, sizeof(comms));
		for (uint32_t i = 0; i < ndev; i++)
			if (comms[i])
				made(comms[i], id | 1, ndev, i);
	}
	return r;
}

TS_EXPORT ts_hccl_result HcclCommDestroy(ts_hccl_comm comm)
{
	HCCL_REAL(HcclCommDestroy)
	ts_comm_gone(comm);
	return f(comm);
}
