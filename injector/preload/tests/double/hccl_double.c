// SPDX-License-Identifier: Apache-2.0
/* TEST DOUBLE of HCCL (libhccl.so): see npu_double.h. A communicator is its size, its
 * rank and a slot in the shared arrival table (from its root info, so that every member
 * finds the same one); each collective is queued on the ACL double's stream and takes
 * 100 us plus 1 ns a byte after its last member arrives. */
#include "npu_double.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int HcclResult;
#define OK 0
#define E_PARA 1

struct comm {
	uint32_t nranks, rank;
	unsigned slot;
	uint64_t seq;
	char name[128];
};

static unsigned slot_of(const void *b, size_t n)
{
	const unsigned char *p = b;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return (unsigned)(h >> 33);
}

static HcclResult new_comm(uint32_t n, uint32_t rank, unsigned slot, const char *name,
			   void **out)
{
	struct comm *c = calloc(1, sizeof(*c));

	if (!c || !out || rank >= n)
		return free(c), E_PARA;
	*c = (struct comm){ .nranks = n, .rank = rank, .slot = slot };
	snprintf(c->name, sizeof(c->name), "%s", name);
	*out = c;
	return OK;
}

/* Every rank of a job makes the same root info: the job's name ($TSD_NPU_JOB). */
HcclResult HcclGetRootInfo(void *root)
{
	const char *job = getenv("TSD_NPU_JOB");

	memset(root, 0, 4108);
	snprintf(root, 4108, "tsd-root:%s", job ? job : "local");
	return OK;
}

HcclResult HcclCommInitRootInfo(uint32_t n, const void *root, uint32_t rank, void **comm)
{
	return new_comm(n, rank, slot_of(root, 4108), root, comm);
}

HcclResult HcclCommInitRootInfoConfig(uint32_t n, const void *root, uint32_t rank,
				      const void *cfg, void **comm)
{
	(void)cfg;
	return HcclCommInitRootInfo(n, root, rank, comm);
}

HcclResult HcclCommInitClusterInfo(const char *path, uint32_t rank, void **comm)
{
	const char *ws = getenv("WORLD_SIZE");

	(void)path;
	return new_comm(ws ? (uint32_t)atoi(ws) : 1, rank, 7, "hccl_world_group", comm);
}

HcclResult HcclCreateSubCommConfig(void **comm, uint32_t n, uint32_t *ids, uint64_t sub_id,
				   uint32_t sub_rank, void *cfg, void **sub)
{
	char name[64];

	(void)ids, (void)cfg;
	if (!comm || !*comm)
		return E_PARA;
	snprintf(name, sizeof(name), "sub-%llu", (unsigned long long)sub_id);
	return new_comm(n, sub_rank, ((struct comm *)*comm)->slot + 1 + (unsigned)sub_id, name, sub);
}

HcclResult HcclCommDestroy(void *comm)
{
	free(comm);
	return OK;
}

HcclResult HcclGetRankSize(void *comm, uint32_t *n)
{
	if (!comm)
		return E_PARA;
	*n = ((struct comm *)comm)->nranks;
	return OK;
}

HcclResult HcclGetRankId(void *comm, uint32_t *r)
{
	if (!comm)
		return E_PARA;
	*r = ((struct comm *)comm)->rank;
	return OK;
}

HcclResult HcclGetCommName(void *comm, char *name)
{
	if (!comm)
		return E_PARA;
	memcpy(name, ((struct comm *)comm)->name, 128);
	return OK;
}

/* ---- collectives: queued on the stream, finished by the last member's arrival ------- */

/* Inside HcclGroupStart/End the work is queued at the outermost end, as one. */
static __thread struct {
	int depth;
	struct comm *comm;
	void *stream;
	uint64_t bytes;
} group;

static HcclResult coll(void *comm, void *stream, uint64_t bytes)
{
	struct comm *c = comm;

	if (!c)
		return E_PARA;
	if (group.depth) {
		group.comm = c;
		group.stream = stream;
		group.bytes += bytes;
		return OK;
	}
	tsd_npu_enqueue_coll(stream, c->slot, ++c->seq, c->nranks, c->rank, 100000 + bytes);
	return OK;
}

HcclResult HcclAllReduce(void *s, void *d, uint64_t n, int t, int op, void *comm, void *st)
{
	(void)s, (void)d, (void)t, (void)op;
	return coll(comm, st, n * 4);
}

HcclResult HcclBroadcast(void *b, uint64_t n, int t, uint32_t root, void *comm, void *st)
{
	(void)b, (void)t, (void)root;
	return coll(comm, st, n);
}

HcclResult HcclReduceScatter(void *s, void *d, uint64_t n, int t, int op, void *comm, void *st)
{
	(void)s, (void)d, (void)t, (void)op;
	return coll(comm, st, n * 4);
}

HcclResult HcclAllGather(void *s, void *d, uint64_t n, int t, void *comm, void *st)
{
	(void)s, (void)d, (void)t;
	return coll(comm, st, n * 4);
}

HcclResult HcclAlltoAll(const void *s, uint64_t sn, int stype, const void *d, uint64_t dn,
			int dtype, void *comm, void *st)
{
	(void)s, (void)stype, (void)d, (void)dn, (void)dtype;
	return coll(comm, st, sn);
}

HcclResult HcclAlltoAllV(const void *s, const void *sc, const void *sd, int stype,
			 const void *d, const void *dc, const void *dd, int dtype, void *comm,
			 void *st)
{
	(void)s, (void)sc, (void)sd, (void)stype, (void)d, (void)dc, (void)dd, (void)dtype;
	return coll(comm, st, 0);
}

HcclResult HcclSend(void *b, uint64_t n, int t, uint32_t peer, void *comm, void *st)
{
	(void)b, (void)t, (void)peer;
	return coll(comm, st, n);
}

HcclResult HcclRecv(void *b, uint64_t n, int t, uint32_t peer, void *comm, void *st)
{
	(void)b, (void)t, (void)peer;
	return coll(comm, st, n);
}

HcclResult HcclBatchSendRecv(void *items, uint32_t n, void *comm, void *st)
{
	(void)items, (void)n;
	return coll(comm, st, 0);
}

HcclResult HcclBarrier(void *comm, void *st)
{
	return coll(comm, st, 0);
}

HcclResult HcclGroupStart(void)
{
	if (!group.depth++)
		group.comm = NULL, group.bytes = 0;
	return OK;
}

HcclResult HcclGroupEnd(void)
{
	if (group.depth <= 0)
		return E_PARA;
	if (--group.depth == 0 && group.comm)
		return coll(group.comm, group.stream, group.bytes);
	return OK;
}
