// SPDX-License-Identifier: Apache-2.0
/* HCCL's types and the prototypes of the HCCL hooks, declared here by ABI: the real
 * hccl.h (torch-npu's torch_npu/include/third_party/hccl/inc/hccl/hccl.h) sizes its
 * arrays with C++ constants and defines a C++ inline function, so it does not compile
 * as C. tests/hccl_abi_check.cc compiles these declarations beside the real header, as
 * C++, and fails the build on any difference in a hook's parameters, a constant or a
 * struct's layout. */
#ifndef TS_HCCL_DEFS_H
#define TS_HCCL_DEFS_H

#include <stdint.h>

typedef int ts_hccl_result;  /* HcclResult */
typedef void *ts_hccl_comm;  /* HcclComm */
typedef int ts_hccl_dtype;   /* HcclDataType */
typedef int ts_hccl_redop;   /* HcclReduceOp */
typedef void *ts_acl_stream; /* aclrtStream */
typedef struct ts_hccl_config ts_hccl_config; /* HcclCommConfig, only passed on */

#define TS_HCCL_SUCCESS 0
#define TS_HCCL_E_INTERNAL 4
#define TS_HCCL_ROOT_INFO_BYTES 4108
#define TS_HCCL_COMM_NAME_MAX 128
#define TS_HCCL_SEND 0
#define TS_HCCL_RECV 1

typedef struct {
	char internal[TS_HCCL_ROOT_INFO_BYTES];
} ts_hccl_root_info; /* HcclRootInfo */

typedef struct {
	int type; /* HcclSendRecvType: TS_HCCL_SEND, TS_HCCL_RECV */
	void *buf;
	uint64_t count;
	ts_hccl_dtype dtype;
	uint32_t remote_rank;
} ts_hccl_sr_item; /* HcclSendRecvItem */

/* Every function the hooks stand in front of or call: X(name, parameter list). All
 * return HcclResult. */
#define TS_HCCL_FNS(X)                                                                        \
	X(HcclCommInitRootInfo, (uint32_t, const ts_hccl_root_info *, uint32_t, ts_hccl_comm *)) \
	X(HcclCommInitRootInfoConfig, (uint32_t, const ts_hccl_root_info *, uint32_t,            \
				       const ts_hccl_config *, ts_hccl_comm *))                  \
	X(HcclCommInitRootInfoScalable, (uint32_t, uint32_t, const ts_hccl_root_info *,          \
					 uint32_t, uint32_t, const ts_hccl_config *,             \
					 ts_hccl_comm *))                                        \
	X(HcclCommInitClusterInfo, (const char *, uint32_t, ts_hccl_comm *))                     \
	X(HcclCommInitClusterInfoConfig, (const char *, uint32_t, ts_hccl_config *,              \
					  ts_hccl_comm *))                                       \
	X(HcclCreateSubCommConfig, (ts_hccl_comm *, uint32_t, uint32_t *, uint64_t, uint32_t,    \
				    ts_hccl_config *, ts_hccl_comm *))                           \
	X(HcclCommInitAll, (uint32_t, int32_t *, ts_hccl_comm *))                                \
	X(HcclCommDestroy, (ts_hccl_comm))                                                       \
	X(HcclGetRankSize, (ts_hccl_comm, uint32_t *))                                           \
	X(HcclGetRankId, (ts_hccl_comm, uint32_t *))                                             \
	X(HcclGetCommName, (ts_hccl_comm, char *))                                               \
	X(HcclAllReduce, (void *, void *, uint64_t, ts_hccl_dtype, ts_hccl_redop, ts_hccl_comm,  \
			  ts_acl_stream))                                                        \
	X(HcclBroadcast, (void *, uint64_t, ts_hccl_dtype, uint32_t, ts_hccl_comm,               \
			  ts_acl_stream))                                                        \
	X(HcclReduceScatter, (void *, void *, uint64_t, ts_hccl_dtype, ts_hccl_redop,            \
			      ts_hccl_comm, ts_acl_stream))                                      \
	X(HcclReduceScatterV, (void *, const void *, const void *, void *, uint64_t,             \
			       ts_hccl_dtype, ts_hccl_redop, ts_hccl_comm, ts_acl_stream))       \
	X(HcclScatter, (void *, void *, uint64_t, ts_hccl_dtype, uint32_t, ts_hccl_comm,         \
			ts_acl_stream))                                                          \
	X(HcclAllGather, (void *, void *, uint64_t, ts_hccl_dtype, ts_hccl_comm, ts_acl_stream)) \
	X(HcclAllGatherV, (void *, uint64_t, void *, const void *, const void *, ts_hccl_dtype,  \
			   ts_hccl_comm, ts_acl_stream))                                         \
	X(HcclReduce, (void *, void *, uint64_t, ts_hccl_dtype, ts_hccl_redop, uint32_t,         \
		       ts_hccl_comm, ts_acl_stream))                                             \
	X(HcclAlltoAll, (const void *, uint64_t, ts_hccl_dtype, const void *, uint64_t,          \
			 ts_hccl_dtype, ts_hccl_comm, ts_acl_stream))                            \
	X(HcclAlltoAllV, (const void *, const void *, const void *, ts_hccl_dtype, const void *, \
			  const void *, const void *, ts_hccl_dtype, ts_hccl_comm,               \
			  ts_acl_stream))                                                        \
	X(HcclAlltoAllVC, (const void *, const void *, ts_hccl_dtype, const void *,              \
			   ts_hccl_dtype, ts_hccl_comm, ts_acl_stream))                          \
	X(HcclSend, (void *, uint64_t, ts_hccl_dtype, uint32_t, ts_hccl_comm, ts_acl_stream))    \
	X(HcclRecv, (void *, uint64_t, ts_hccl_dtype, uint32_t, ts_hccl_comm, ts_acl_stream))    \
	X(HcclBatchSendRecv, (ts_hccl_sr_item *, uint32_t, ts_hccl_comm, ts_acl_stream))         \
	X(HcclBarrier, (ts_hccl_comm, ts_acl_stream))                                            \
	X(HcclGroupStart, (void))                                                                \
	X(HcclGroupEnd, (void))

#endif
