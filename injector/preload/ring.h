// SPDX-License-Identifier: Apache-2.0
/* A bounded lock-free multi-producer single-consumer ring of fixed-size records in a
 * shared-memory file: producers are the threads of one training process, the consumer
 * is the relay. Slots carry a sequence number (Vyukov's bounded queue), so a producer
 * never waits for another and a full ring is a counted drop. */
#ifndef TS_RING_H
#define TS_RING_H

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "ident.h"

#define TS_RING_MAGIC 0x31474e4952535400ull /* "\0TSRING1" */
#define TS_RING_VERSION 2 /* 2: ts_ident.groups */
#define TS_RING_SUFFIX ".ring"

enum ts_rec_type {
	TS_REC_STEP_BEGIN = 1, /* a = step */
	TS_REC_STEP_END = 2,   /* a = step */
	TS_REC_REGION = 3,     /* kind = region, t_ns = start, dur_ns */
	TS_REC_DEVICE = 4,     /* kind = region, a = device busy ns */
	TS_REC_COLL = 5,       /* kind = op | algo << 8, t_ns = start, dur_ns, a = bytes,
				* b = step + 1 (0: the open step), c = comm hash, d = seq,
				* reserved = ranks in the communicator */
	TS_REC_STEP_CTR = 6,   /* before STEP_END: a = launches, b = host ns in CUDA calls,
				* c = sync wait ns, d = memory live, dur_ns = memory peak,
				* kind = allocation failures, reserved = API calls */
	TS_REC_GPU_STEP = 7,   /* a = step, b = compute-stream busy ns, c = comm-stream busy
				* ns, d = sampled kernels, dur_ns = their device ns */
	TS_REC_GEMM = 8,       /* a = step, b = flops, dur_ns = device ns (sampled) */
	TS_REC_HANG = 9,       /* kind = op (0: a kernel), dur_ns = pending, a = comm hash,
				* b = seq, c = step; stacks in the ring's .stacks file */
	TS_REC_EXCEPTION = 10, /* the traceback is in the ring's .exc file */
	TS_REC_GROUPS = 11,    /* the ring's .groups file changed */
	TS_REC_COMM = 12,      /* an NCCL communicator made: a = its hash (the same on every
				* member), b = members, c = this rank in it */
	TS_REC_GRAPH_COLL = 13, /* collectives a CUDA graph's replay ran, untimed (the replay
				 * is): kind = op, a = their bytes, b = step + 1, c = comm
				 * hash, d = how many, reserved = ranks in the communicator */
	TS_REC_PEER = 14,       /* network sends to one peer since the last such record (NCCL's
				 * profiler): c = comm hash, reserved = the peer's rank in it,
				 * a = bytes, dur_ns = summed send time, d = sends */
	TS_REC_IDENT = 15,      /* the rank learned after the ring was made (the header's id
				 * says it too, written before): kind = enum ts_ident_how,
				 * a = rank, b = world size, c = local rank, d = device index
				 * (both as int64, -1 unknown) */
};

/* Who told the process its rank late. */
enum ts_ident_how { TS_IDENT_PROGRAM = 1, TS_IDENT_COMM = 2 };

/* Files beside a ring that carry text the fixed-size records cannot. */
#define TS_SIDE_STACKS ".stacks"
#define TS_SIDE_EXC ".exc"
#define TS_SIDE_GROUPS ".groups"

struct ts_rec {
	uint16_t type;
	uint16_t kind;
	uint32_t reserved;
	uint64_t t_ns; /* CLOCK_MONOTONIC */
	uint64_t dur_ns;
	uint64_t a, b, c, d;
};

struct ts_slot {
	_Atomic uint64_t seq;
	struct ts_rec rec;
};

struct ts_ring {
	uint64_t magic;
	uint32_t version;
	uint32_t capacity;       /* slots, a power of two */
	uint32_t slot_size;
	uint32_t reserved;
	int64_t mono_to_real_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC at creation */
	uint64_t start_real_ns;
	struct ts_ident id;
	_Alignas(64) _Atomic uint64_t head; /* reservations = records written */
	_Alignas(64) _Atomic uint64_t tail; /* consumer position */
	_Alignas(64) _Atomic uint64_t dropped;
	_Atomic uint32_t closed;            /* the producer process has exited */
	_Alignas(64) struct ts_slot slots[];
};

size_t ts_ring_bytes(uint32_t capacity);

/* Lays out a ring in mem (ts_ring_bytes(capacity) bytes, zeroed). capacity must be a
 * power of two >= 2. Returns 0 or -EINVAL. */
int ts_ring_init(struct ts_ring *r, uint32_t capacity, const struct ts_ident *id);

/* Producer side, any thread. Returns 0, or -ENOSPC when full (the drop is counted). */
static inline int ts_ring_push(struct ts_ring *r, const struct ts_rec *rec)
{
	uint64_t mask = r->capacity - 1;
	uint64_t pos = atomic_load_explicit(&r->head, memory_order_relaxed);
	struct ts_slot *s;

	for (;;) {
		s = &r->slots[pos & mask];
		uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
		int64_t diff = (int64_t)(seq - pos);
		if (diff == 0) {
			if (atomic_compare_exchange_weak_explicit(&r->head, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed))
				break;
		} else if (diff < 0) {
			atomic_fetch_add_explicit(&r->dropped, 1, memory_order_relaxed);
			return -ENOSPC;
		} else {
			pos = atomic_load_explicit(&r->head, memory_order_relaxed);
		}
	}
	s->rec = *rec;
	atomic_store_explicit(&s->seq, pos + 1, memory_order_release);
	return 0;
}

/* Consumer side, one thread. Returns 1 with *out filled, or 0 when nothing is ready
 * (empty, or the next slot is reserved and not yet written). */
static inline int ts_ring_pop(struct ts_ring *r, struct ts_rec *out)
{
	uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
	struct ts_slot *s = &r->slots[pos & (r->capacity - 1)];

	if (atomic_load_explicit(&s->seq, memory_order_acquire) != pos + 1)
		return 0;
	*out = s->rec;
	atomic_store_explicit(&s->seq, pos + r->capacity, memory_order_release);
	atomic_store_explicit(&r->tail, pos + 1, memory_order_relaxed);
	return 1;
}

/* The mode of the files a producer makes in dir: 0660 when dir is setgid (its group, the
 * relay's, must read and write them whatever the producer's uid), 0600 otherwise. */
int ts_ring_file_mode(const char *dir);
/* Creates <dir>/<pid>-<nonce>.ring, mode ts_ring_file_mode(dir) (written under a temporary
 * name, then renamed so a watcher never sees a half-made header) and maps it. *lock_fd
 * holds a shared flock for the producer's lifetime. Returns 0 or -errno. */
int ts_ring_create(const char *dir, uint32_t capacity, const struct ts_ident *id,
		   struct ts_ring **out, int *lock_fd, char *path, size_t pathlen);
/* 1 while a process holds the ring's lock, 0 once every producer has exited. */
int ts_ring_producer_alive(const char *path);
/* Maps an existing ring file read-write after checking its header. */
int ts_ring_open(const char *path, struct ts_ring **out);
void ts_ring_unmap(struct ts_ring *r);

#endif
