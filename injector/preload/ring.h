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

/* What a record says; struct ts_rec names each type's fields. */
enum ts_rec_type {
	TS_REC_STEP_BEGIN = 1,  /* mark */
	TS_REC_STEP_END = 2,    /* mark */
	TS_REC_REGION = 3,      /* kind = region, t_ns = start, dur_ns */
	TS_REC_DEVICE = 4,      /* kind = region, device */
	TS_REC_COLL = 5,        /* kind = op | algo << 8, t_ns = start, dur_ns, nranks, coll */
	TS_REC_STEP_CTR = 6,    /* before STEP_END: alloc_failures, api_calls, mem_peak, ctr */
	TS_REC_GPU_STEP = 7,    /* kind = TS_GPU_STEP_UNTIMED or 0, dur_ns = the sampled
				 * kernels' device ns, gpu_step */
	TS_REC_GEMM = 8,        /* dur_ns = device ns (sampled), gemm */
	TS_REC_HANG = 9,        /* kind = op (0: a kernel), dur_ns = pending, hang; stacks in
				 * the ring's .stacks file */
	TS_REC_EXCEPTION = 10,  /* the traceback is in the ring's .exc file */
	TS_REC_GROUPS = 11,     /* the ring's .groups file changed */
	TS_REC_COMM = 12,       /* an NCCL communicator made: comm */
	TS_REC_GRAPH_COLL = 13, /* collectives a CUDA graph's replay ran, untimed (the replay
				 * is): kind = op, nranks, graph_coll */
	TS_REC_PEER = 14,       /* network sends to one peer since the last such record (NCCL's
				 * profiler): peer_rank, dur_ns = summed send time, peer */
	TS_REC_IDENT = 15,      /* the rank learned after the ring was made (the header's id
				 * says it too, written before): kind = enum ts_ident_how, ident */
};

/* A GPU_STEP's kind: the device was not timed in the step (TRAINSCOPE_DEVICE_EVERY), so
 * its compute_ns is no measure; its comm_ns still is (collectives stay timed). */
#define TS_GPU_STEP_UNTIMED 1

/* Who told the process its rank late. */
enum ts_ident_how { TS_IDENT_PROGRAM = 1, TS_IDENT_COMM = 2 };

/* Files beside a ring that carry text the fixed-size records cannot. */
#define TS_SIDE_STACKS ".stacks"
#define TS_SIDE_EXC ".exc"
#define TS_SIDE_GROUPS ".groups"

/* One record, 56 bytes: the type, a header whose fields some types name otherwise, and
 * four 64-bit words each type names (the union below). Names cost nothing in the file:
 * the layout is the ring's format (TS_RING_VERSION), which the asserts after it hold. */
struct ts_rec {
	uint16_t type; /* enum ts_rec_type */
	union {
		uint16_t kind;           /* REGION, DEVICE: enum trainscope_region; COLL:
					  * op | algo << 8; GRAPH_COLL, HANG: the op;
					  * IDENT: enum ts_ident_how; GPU_STEP:
					  * TS_GPU_STEP_UNTIMED or 0 */
		uint16_t alloc_failures; /* STEP_CTR: failed device allocations (saturated) */
	};
	union {                          /* 0 where the type names none */
		uint32_t nranks;         /* COLL, GRAPH_COLL: ranks in the communicator */
		uint32_t peer_rank;      /* PEER: the peer's rank in the communicator */
		uint32_t api_calls;      /* STEP_CTR: calls into the API (saturated) */
	};
	uint64_t t_ns; /* CLOCK_MONOTONIC */
	union {
		uint64_t dur_ns;
		uint64_t mem_peak;       /* STEP_CTR: device memory's peak bytes since the last one */
	};
	union {
		/* The four words as they are, for code that moves records of any type (the
		 * ring, its tests, a record built for whichever type a test names). */
		uint64_t raw[4];
		struct { /* STEP_BEGIN, STEP_END */
			uint64_t step;
		} mark;
		struct { /* DEVICE */
			uint64_t busy_ns; /* the device's busy ns in the region */
		} device;
		struct { /* COLL */
			uint64_t bytes;
			uint64_t step_tag; /* step + 1; 0: the step open when it is read */
			uint64_t comm;     /* the communicator's hash (TS_REC_COMM's) */
			uint64_t seq;      /* the collective's number in the communicator */
		} coll;
		struct { /* STEP_CTR */
			uint64_t launches;
			uint64_t call_ns;  /* host ns in the device runtime's calls */
			uint64_t sync_ns;  /* host ns waiting in synchronisations */
			uint64_t mem_live; /* device memory's live bytes */
		} ctr;
		struct { /* GPU_STEP */
			uint64_t step;
			uint64_t compute_ns; /* the compute stream's busy ns */
			uint64_t comm_ns;    /* the communication stream's busy ns */
			uint64_t ksamples;   /* kernels sampled */
		} gpu_step;
		struct { /* GEMM */
			uint64_t step;
			uint64_t flops;
		} gemm;
		struct { /* HANG */
			uint64_t comm; /* the communicator's hash */
			uint64_t seq;  /* the pending collective's number */
			uint64_t step;
		} hang;
		struct { /* COMM */
			uint64_t hash;    /* the same on every member */
			uint64_t members;
			uint64_t rank;    /* this process's rank in it */
		} comm;
		struct { /* GRAPH_COLL */
			uint64_t bytes;    /* of all of them */
			uint64_t step_tag; /* step + 1, as COLL's */
			uint64_t comm;
			uint64_t count;    /* how many */
		} graph_coll;
		struct { /* PEER */
			uint64_t bytes;
			uint64_t unused;
			uint64_t comm;
			uint64_t sends;
		} peer;
		struct { /* IDENT: -1 unknown for the last two */
			uint64_t rank;
			uint64_t world;
			int64_t local_rank;
			int64_t device; /* the device's index */
		} ident;
	};
};

/* The ring's format: every name at the place its word always had. */
#define TS_REC_AT(field, off) \
	_Static_assert(offsetof(struct ts_rec, field) == (off), "ts_rec." #field " moved")
_Static_assert(sizeof(struct ts_rec) == 56, "struct ts_rec is the ring's 56-byte record");
TS_REC_AT(type, 0);
TS_REC_AT(kind, 2);
TS_REC_AT(alloc_failures, 2);
TS_REC_AT(nranks, 4);
TS_REC_AT(peer_rank, 4);
TS_REC_AT(api_calls, 4);
TS_REC_AT(t_ns, 8);
TS_REC_AT(dur_ns, 16);
TS_REC_AT(mem_peak, 16);
TS_REC_AT(raw, 24);
TS_REC_AT(mark.step, 24);
TS_REC_AT(device.busy_ns, 24);
TS_REC_AT(coll.bytes, 24);
TS_REC_AT(coll.step_tag, 32);
TS_REC_AT(coll.comm, 40);
TS_REC_AT(coll.seq, 48);
TS_REC_AT(ctr.launches, 24);
TS_REC_AT(ctr.call_ns, 32);
TS_REC_AT(ctr.sync_ns, 40);
TS_REC_AT(ctr.mem_live, 48);
TS_REC_AT(gpu_step.step, 24);
TS_REC_AT(gpu_step.compute_ns, 32);
TS_REC_AT(gpu_step.comm_ns, 40);
TS_REC_AT(gpu_step.ksamples, 48);
TS_REC_AT(gemm.step, 24);
TS_REC_AT(gemm.flops, 32);
TS_REC_AT(hang.comm, 24);
TS_REC_AT(hang.seq, 32);
TS_REC_AT(hang.step, 40);
TS_REC_AT(comm.hash, 24);
TS_REC_AT(comm.members, 32);
TS_REC_AT(comm.rank, 40);
TS_REC_AT(graph_coll.bytes, 24);
TS_REC_AT(graph_coll.step_tag, 32);
TS_REC_AT(graph_coll.comm, 40);
TS_REC_AT(graph_coll.count, 48);
TS_REC_AT(peer.bytes, 24);
TS_REC_AT(peer.comm, 40);
TS_REC_AT(peer.sends, 48);
TS_REC_AT(ident.rank, 24);
TS_REC_AT(ident.world, 32);
TS_REC_AT(ident.local_rank, 40);
TS_REC_AT(ident.device, 48);
#undef TS_REC_AT

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
