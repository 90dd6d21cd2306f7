// SPDX-License-Identifier: Apache-2.0
/* NCCL communicators as every member knows them. A process holds its own pointer to a
 * communicator; NCCL names it by the unique id all members share. The table maps the
 * pointer to a hash of that id and numbers the communicator's operations, so that every
 * member gives the same collective the same (communicator, seq): what the analyzer needs
 * to tell the ranks waiting in a hung collective from the one that never entered it. */
#ifndef TS_COMMS_H
#define TS_COMMS_H

#include <stdatomic.h>
#include <stdint.h>
#include "lib.h"

struct ts_comm {
	_Atomic uintptr_t key;   /* the process's pointer; 0 free, 1 gone */
	_Atomic uint64_t id;     /* the same on every member */
	_Atomic uint32_t nranks;
	_Atomic uint64_t seq;    /* operations issued on it */
};

/* A communicator made through the hooks: its entry, and a TS_REC_COMM record. */
TS_HIDDEN void ts_comm_made(void *comm, uint64_t id, uint32_t nranks, uint32_t rank);
/* ts_comm_made for a communicator made from unique ids (not split from another): one
 * of the whole job tells a process that has no rank yet its rank (ts_lib_learn_rank). */
TS_HIDDEN void ts_comm_made_root(void *comm, uint64_t id, uint32_t nranks, uint32_t rank);
/* The entry of a communicator in use; one made elsewhere (before the preload, or by a
 * path not hooked) gets one on first use, named by fallback_id. NULL when the table is
 * full. A few loads, no lock, no allocation: safe on the collective's path. */
TS_HIDDEN struct ts_comm *ts_comm_find(void *comm, uint64_t fallback_id, uint32_t nranks);
/* The communicator was destroyed: its entry is not reused (a pointer NCCL hands out
 * again is a new communicator, found anew). */
TS_HIDDEN void ts_comm_gone(void *comm);
/* The id of a communicator split from parent with color (the same on all members). */
TS_HIDDEN uint64_t ts_comm_split_id(uint64_t parent, int color);
/* The hash of an ncclUniqueId's bytes. */
TS_HIDDEN uint64_t ts_comm_uid_hash(const void *uid, size_t n);

#endif
