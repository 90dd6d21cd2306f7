// SPDX-License-Identifier: Apache-2.0
/* A collective call as the NCCL and HCCL hooks share it: counted, numbered per
 * communicator (comms.h), sized, and timed with an event pair on its stream, or folded
 * into the open group (ncclGroupStart/End, HcclGroupStart/End) and timed there. */
#ifndef TS_COLL_H
#define TS_COLL_H

#include <stdbool.h>
#include "gpu.h"

/* What differs between the libraries: whose streams they take, how a communicator
 * found on first use tells its size. */
struct ts_coll_lib {
	unsigned sk; /* enum ts_skind */
	uint32_t (*ranks)(void *comm);
	/* its device work starts through no hooked launch (HCCL's tasks go to the device
	 * by the runtime's private paths): the call itself marks its stream as one that
	 * communicates, as NCCL's kernel launches do */
	bool unseen_launches;
};

struct ts_coll_call {
	uint64_t t0;
	int slot;
	bool outer;
	CUstream stream;
	const struct ts_coll_lib *lib;
	struct ts_op_meta meta;
};

/* Before the real call. The op is sized as nccl-tests sizes it from count elements of
 * elem bytes; elem 0: count is the op's bytes already. */
TS_HIDDEN void ts_coll_enter(struct ts_coll_call *c, const struct ts_coll_lib *lib, unsigned op,
			     uint64_t count, unsigned elem, void *comm, CUstream stream);
TS_HIDDEN void ts_coll_leave(struct ts_coll_call *c);

/* A communicator call (init, split) made inside another call of the same library is
 * the library's own: `outer` says whether this one is the caller's. Declares r, the
 * real function f's result. */
#define TS_COLL_NESTED(result_type, call)    \
	bool outer = ts_tls.coll_depth == 0; \
	ts_tls.coll_depth++;                 \
	result_type r = f call;              \
	ts_tls.coll_depth--;

/* A stand-in name for a communicator seen only by its pointer (no init was hooked). */
TS_HIDDEN uint64_t ts_coll_comm_hash(void *comm);

/* Around the library's group calls: start, and end before and after the real call
 * (the group's work launches inside the outermost end). */
TS_HIDDEN void ts_coll_group_start(void);
TS_HIDDEN int ts_coll_group_end_enter(bool *outer);
TS_HIDDEN void ts_coll_group_end_leave(int slot, bool outer);

#endif
