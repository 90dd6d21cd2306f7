// SPDX-License-Identifier: Apache-2.0
/* NCCL's ops as trainscope's collective ops, and the sizes nccl-tests counts. */
#ifndef TS_NCCL_H
#define TS_NCCL_H

#include <stdint.h>
#include "lib.h"

/* Bytes of one element of an ncclDataType_t; 0 for an unknown type. */
TS_HIDDEN unsigned ts_nccl_type_size(int dtype);
/* The same, from the name the profiler plugin gets ("ncclFloat32", "ncclBfloat16"...). */
TS_HIDDEN unsigned ts_nccl_type_size_named(const char *dtype);
/* The bytes nccl-tests sizes an op by: all-gather, reduce-scatter, all-to-all, gather
 * and scatter take a per-rank count, and count the whole buffer. */
TS_HIDDEN uint64_t ts_nccl_bytes(unsigned op, uint64_t count, unsigned elem, uint32_t nranks);
/* An NCCL function name ("AllReduce", "ncclAllReduce", "Send"...) → enum trainscope_coll_op. */
TS_HIDDEN unsigned ts_nccl_op_from_name(const char *func);
/* The algorithm name ("Ring", "Tree", ...) as a small number for records; 0 unknown. */
TS_HIDDEN unsigned ts_nccl_algo(const char *algo);

#endif
