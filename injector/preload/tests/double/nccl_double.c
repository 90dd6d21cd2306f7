// SPDX-License-Identifier: Apache-2.0
/* TEST DOUBLE of NCCL (libnccl.so.2): see double.h. A collective is one kernel on the
 * caller's stream, launched through the driver; inside ncclGroupStart/End the kernels
 * wait for the outermost ncclGroupEnd, as NCCL's do. ncclBcast calls ncclBroadcast
 * through its exported symbol, so a hook sees a collective inside a collective. */
#include "double.h"
#include "cudefs.h"

#include <dlfcn.h>
#include <stdlib.h>

typedef CUresult (*getproc_fn)(const char *, void **, int, uint64_t);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			      unsigned, unsigned, CUstream, void **, void **);

struct comm {
	int nranks, rank;
};

/* ncclUniqueId: 128 bytes, passed by value */
typedef struct {
	char internal[128];
} uid_t_;

static __thread struct {
	int depth, pending;
	CUstream stream;
} group;

static ncclResult_t kernel(CUstream s)
{
	static launch_fn f;

	if (!f) {
		getproc_fn gp = (getproc_fn)dlsym(RTLD_DEFAULT, "cuGetProcAddress");
		if (!gp || gp("cuLaunchKernel", (void **)&f, 11000, 0))
			abort();
	}
	return f(NULL, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL) ? TS_NCCL_INTERNAL_ERROR : 0;
}

static ncclResult_t coll(CUstream s)
{
	if (!group.depth)
		return kernel(s);
	group.pending++;
	group.stream = s;
	return 0;
}

void *tsd_nccl_comm(int nranks)
{
	struct comm *c = calloc(1, sizeof(*c));

	if (c)
		c->nranks = nranks;
	return c;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, uid_t_ id, int rank)
{
	struct comm *c = tsd_nccl_comm(nranks);

	(void)id;
	if (!c)
		return TS_NCCL_INTERNAL_ERROR;
	c->rank = rank;
	*comm = c;
	return 0;
}

/* Non-blocking, as with config.blocking = 0: the communicator is handed out while it is
 * still being made. */
ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nids,
				      uid_t_ *ids, void *config)
{
	(void)nids, (void)ids, (void)config;
	return ncclCommInitRank(comm, nranks, (uid_t_){ { 0 } }, rank) ? TS_NCCL_INTERNAL_ERROR
								       : 7 /* ncclInProgress */;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
			   void *config)
{
	(void)color, (void)config;
	/* the double's split keeps half of the ranks */
	return ncclCommInitRank(newcomm, (((struct comm *)comm)->nranks + 1) / 2, (uid_t_){ { 0 } },
				key);
}

ncclResult_t ncclCommUserRank(ncclComm_t comm, int *rank)
{
	*rank = ((struct comm *)comm)->rank;
	return 0;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	free(comm);
	return 0;
}

ncclResult_t ncclCommCount(ncclComm_t comm, int *n)
{
	*n = ((struct comm *)comm)->nranks;
	return 0;
}

ncclResult_t ncclGroupStart(void)
{
	group.depth++;
	return 0;
}

ncclResult_t ncclGroupEnd(void)
{
	ncclResult_t r = 0;

	if (group.depth > 0 && --group.depth == 0)
		for (; group.pending > 0 && !r; group.pending--)
			r = kernel(group.stream);
	return r;
}

ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, int t, int op, ncclComm_t comm,
			   CUstream st)
{
	(void)s, (void)r, (void)n, (void)t, (void)op, (void)comm;
	return coll(st);
}

ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, int t, int root, ncclComm_t comm,
			   CUstream st)
{
	(void)s, (void)r, (void)n, (void)t, (void)root, (void)comm;
	return coll(st);
}

ncclResult_t ncclBcast(void *b, size_t n, int t, int root, ncclComm_t comm, CUstream st)
{
	return ncclBroadcast(b, b, n, t, root, comm, st);
}

ncclResult_t ncclAllGather(const void *s, void *r, size_t n, int t, ncclComm_t comm,
			   CUstream st)
{
	(void)s, (void)r, (void)n, (void)t, (void)comm;
	return coll(st);
}
