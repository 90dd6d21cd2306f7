// SPDX-License-Identifier: Apache-2.0
/* TEST DOUBLE of a framework library (libtsd_user.so): see double.h. It links the NCCL
 * and cuBLAS doubles and is opened RTLD_LOCAL by the test driver, the way Python opens
 * libtorch_cuda: the preload then has to find NCCL and cuBLAS with RTLD_NOLOAD. */
#include "double.h"
#include "cudefs.h"

#include <stddef.h>

void *tsd_nccl_comm(int nranks);
typedef struct {
	char internal[128];
} uid_t_;
ncclResult_t ncclCommInitRank(ncclComm_t *, int, uid_t_, int);
ncclResult_t ncclCommInitRankScalable(ncclComm_t *, int, int, int, uid_t_ *, void *);
ncclResult_t ncclCommSplit(ncclComm_t, int, int, ncclComm_t *, void *);
ncclResult_t ncclCommDestroy(ncclComm_t);
ncclResult_t ncclAllReduce(const void *, void *, size_t, int, int, ncclComm_t, CUstream);
ncclResult_t ncclBcast(void *, size_t, int, int, ncclComm_t, CUstream);
ncclResult_t ncclAllGather(const void *, void *, size_t, int, ncclComm_t, CUstream);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
cublasStatus_t cublasCreate_v2(cublasHandle_t *);
cublasStatus_t cublasDestroy_v2(cublasHandle_t);
cublasStatus_t cublasSetStream_v2(cublasHandle_t, CUstream);
cublasStatus_t cublasGemmEx(cublasHandle_t, int, int, int, int, int, const void *,
			    const void *, int, int, const void *, int, int, const void *, void *,
			    int, int, int, int);

enum { NCCL_INT8 = 0, NCCL_FLOAT32 = 7, NCCL_SUM = 0, CUDA_R_32F = 0 };

void *tsd_user_comm(int nranks)
{
	return tsd_nccl_comm(nranks);
}

/* A communicator made as torch makes it: every member passes the same unique id. */
void *tsd_user_comm_init(int nranks, int rank, char id_byte)
{
	uid_t_ id = { { 0 } };
	ncclComm_t c = NULL;

	id.internal[0] = id_byte;
	return ncclCommInitRank(&c, nranks, id, rank) ? NULL : c;
}

/* The same by ncclCommInitRankScalable, from two ids, non-blocking. */
void *tsd_user_comm_init_scalable(int nranks, int rank, char id_byte)
{
	uid_t_ ids[2] = { { { 0 } }, { { 0 } } };
	ncclComm_t c = NULL;

	ids[0].internal[0] = id_byte, ids[1].internal[0] = (char)(id_byte + 1);
	return ncclCommInitRankScalable(&c, nranks, rank, 2, ids, NULL) == 7 ? c : NULL;
}

void *tsd_user_comm_split(void *comm, int color, int key)
{
	ncclComm_t c = NULL;

	return ncclCommSplit(comm, color, key, &c, NULL) ? NULL : c;
}

int tsd_user_comm_destroy(void *comm)
{
	return ncclCommDestroy(comm);
}

int tsd_user_allreduce(void *comm, void *stream, uint64_t count)
{
	return ncclAllReduce(NULL, NULL, count, NCCL_FLOAT32, NCCL_SUM, comm, stream);
}

int tsd_user_group_allreduce(void *comm, void *stream, int ops, uint64_t count)
{
	int r = ncclGroupStart();

	for (int i = 0; i < ops && !r; i++)
		r = tsd_user_allreduce(comm, stream, count);
	return ncclGroupEnd() || r;
}

int tsd_user_bcast(void *comm, void *stream, uint64_t bytes)
{
	return ncclBcast(NULL, bytes, NCCL_INT8, 0, comm, stream);
}

int tsd_user_allgather(void *comm, void *stream, uint64_t count)
{
	return ncclAllGather(NULL, NULL, count, NCCL_FLOAT32, comm, stream);
}

int tsd_user_gemm(void *stream, int m, int n, int k)
{
	cublasHandle_t h;
	int r = cublasCreate_v2(&h);

	if (r)
		return r;
	r = cublasSetStream_v2(h, stream) ||
	    cublasGemmEx(h, 0, 0, m, n, k, NULL, NULL, CUDA_R_32F, m, NULL, CUDA_R_32F, k, NULL,
			 NULL, CUDA_R_32F, m, CUDA_R_32F, 0);
	cublasDestroy_v2(h);
	return r;
}
