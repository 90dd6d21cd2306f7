// SPDX-License-Identifier: Apache-2.0
/* The few CUDA driver, runtime, cuBLAS and NCCL types the hooks need, declared here by
 * ABI so that the library builds and runs without any CUDA toolkit: everything real
 * is found at run time. Values follow the vendors' public headers. */
#ifndef TS_CUDEFS_H
#define TS_CUDEFS_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;           /* 0 = CUDA_SUCCESS */
typedef int cudaError_t;        /* 0 = cudaSuccess */
typedef int cublasStatus_t;     /* 0 = CUBLAS_STATUS_SUCCESS */
typedef int ncclResult_t;       /* 0 = ncclSuccess */
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUctx_st *CUcontext;
typedef struct CUfunc_st *CUfunction;
typedef uint64_t CUdeviceptr;
typedef uint64_t CUmemHandle;   /* CUmemGenericAllocationHandle */
typedef void *ncclComm_t;
typedef void *cublasHandle_t;
typedef void *cublasLtHandle_t;

#define TS_CUDA_SUCCESS 0
#define TS_CUDA_ERROR_OUT_OF_MEMORY 2
#define TS_CUDA_ERROR_NOT_FOUND 500
#define TS_CUDA_ERROR_NOT_READY 600
#define TS_CUDA_ERROR_NOT_SUPPORTED 801
#define TS_NCCL_INTERNAL_ERROR 3
#define TS_CUBLAS_NOT_INITIALIZED 1
#define TS_CUBLAS_ALLOC_FAILED 3

/* Special stream handles of the driver API. */
#define TS_STREAM_LEGACY ((CUstream)0x1)
#define TS_STREAM_PER_THREAD ((CUstream)0x2)
/* cuGetProcAddress flags */
#define TS_PROC_PER_THREAD_DEFAULT_STREAM (1ull << 1)

#define TS_EVENT_DEFAULT 0x0 /* timing enabled */

typedef struct {
	unsigned x, y, z;
} ts_dim3;

/* CUlaunchConfig, the first argument of cuLaunchKernelEx. */
typedef struct {
	unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem;
	CUstream stream;
	void *attrs;
	unsigned num_attrs;
} ts_launch_config;

/* cudaLaunchConfig_t, the first argument of cudaLaunchKernelExC (CUDA 12+ launch
 * attributes: Triton, CUTLASS, FlashAttention 3). */
typedef struct {
	ts_dim3 grid, block;
	size_t shared_mem;
	CUstream stream;
	void *attrs;
	unsigned num_attrs;
} ts_rt_launch_config;

#endif
