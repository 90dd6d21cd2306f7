// SPDX-License-Identifier: Apache-2.0
/* TEST DOUBLE. A stand-in for the Ascend ACL runtime (libascendcl.so) and HCCL
 * (libhccl.so), built only for the preload library's CI tests and the NPU e2e job (there
 * is no NPU here). It exports the symbols the hooks reach, under CANN's library names,
 * because the hooks find the real libraries by those names. Never install or ship it.
 *
 * The device runs in real time: each stream is a queue whose work finishes at
 * monotonic-clock instants (a kernel takes tsd_npu_kernel_ns after the stream is free
 * and the launch was made), events are complete once their instant has passed, and a
 * synchronize waits for it. A collective finishes xfer after the last member reached
 * it: members in other processes publish when their stream reached each op in a shared
 * file ($TSD_NPU_SHM, made by the launcher); without one, every other member is taken
 * to be there already. A stalled stream's
 * collectives never finish: a member never arrives (a hang). */
#ifndef TSD_NPU_DOUBLE_H
#define TSD_NPU_DOUBLE_H

#include <stddef.h>
#include <stdint.h>

struct tsd_npu_stats {
	uint64_t launches, events_created, event_records, colls, allocs, frees, syncs;
	uint64_t records_while_capturing; /* must stay 0 */
};

/* libascendcl.so */
void tsd_npu_set_kernel_ns(uint64_t ns);
void tsd_npu_set_stalled(void *stream, int on);
void tsd_npu_get_stats(struct tsd_npu_stats *out);
/* Appends a collective of the communicator in shared slot `slot`: it finishes xfer_ns
 * after all nranks members reached their seq-th op on it. */
void tsd_npu_enqueue_coll(void *stream, unsigned slot, uint64_t seq, uint32_t nranks,
			  uint32_t rank, uint64_t xfer_ns);
/* Size of the shared file a launcher makes for $TSD_NPU_SHM. */
size_t tsd_npu_shm_size(void);

#endif
