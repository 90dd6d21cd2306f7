// SPDX-License-Identifier: Apache-2.0
/* TEST DOUBLE. A stand-in for the CUDA driver, runtime, cuBLAS and NCCL, built only for
 * the preload library's CI tests (there is no GPU in CI). It exports the few symbols the
 * hooks reach, under the vendors' library names (libcuda.so.1, libcudart.so.13,
 * libcublas.so.13, libnccl.so.2) because the hooks find real libraries by those names.
 * Never install or ship it.
 *
 * The device is a virtual clock per stream: each launch adds 1 ms, an event
 * records its stream's clock, and elapsed time is the difference, so device times in
 * the tests are exact; a graph replay runs its kernels (1 ms each) on its stream. A stalled stream stops completing work (a hang); a capturing
 * stream says so to cuStreamIsCapturing. These tsd_ functions steer and observe it. */
#ifndef TSD_DOUBLE_H
#define TSD_DOUBLE_H

#include <stdint.h>

struct tsd_stats {
	uint64_t launches;                /* kernels that reached the driver */
	uint64_t events_created;
	uint64_t event_records;
	uint64_t records_while_capturing; /* must stay 0: it would break a graph capture */
	uint64_t allocs, frees;
	uint64_t host_funcs;
};

/* libcuda.so.1 */
void tsd_set_stalled(void *stream, int on);
uint64_t tsd_stream_launches(void *stream);
uint64_t tsd_stream_records(void *stream);
void tsd_get_stats(struct tsd_stats *out);
int tsd_probe(void); /* 2 here; 1 in libcudart: tells which object a lookup found */
/* A graph of that many kernel and memcpy nodes, and a child graph node when child is
 * not NULL. Captures make graphs too: of the kernels launched into the stream. */
void *tsd_graph_new(uint32_t kernels, uint32_t copies, void *child);

/* libcudart.so.13: what dlsym(RTLD_NEXT, "tsd_probe") finds from inside libcudart. */
int tsd_next_probe(void);

/* libtsd_user.so, a stand-in for a framework library (libtorch_cuda) that links cuBLAS
 * and NCCL and is itself opened RTLD_LOCAL, so NCCL and cuBLAS sit in a local scope. */
void *tsd_user_comm(int nranks);
int tsd_user_allreduce(void *comm, void *stream, uint64_t count);       /* float32 */
int tsd_user_group_allreduce(void *comm, void *stream, int ops, uint64_t count);
int tsd_user_bcast(void *comm, void *stream, uint64_t bytes);           /* int8 */
int tsd_user_allgather(void *comm, void *stream, uint64_t count);       /* float32 */
int tsd_user_gemm(void *stream, int m, int n, int k);                   /* cublasGemmEx */

#endif
