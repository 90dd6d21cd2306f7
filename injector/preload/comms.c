// SPDX-License-Identifier: Apache-2.0
#include "comms.h"
#include "ring.h"

#define COMMS 512 /* a power of two; torch makes a few per process group */

static struct ts_comm table[COMMS];

static size_t slot_of(uintptr_t p)
{
	return (size_t)(((uint64_t)p * 0x9e3779b97f4a7c15ull) >> 32) & (COMMS - 1);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	return x ^ (x >> 29);
}

uint64_t ts_comm_uid_hash(const void *uid, size_t n)
{
	const unsigned char *b = uid;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return mix(h) | 1; /* never 0: 0 reads as "no communicator" */
}

uint64_t ts_comm_split_id(uint64_t parent, int color)
{
	return mix(parent ^ mix((uint64_t)(uint32_t)color + 0x632be59bd9b4e019ull)) | 1;
}

/* The entry for comm, made (with id) when absent and create is set. */
static struct ts_comm *lookup(void *comm, bool create, uint64_t id, uint32_t nranks)
{
	uintptr_t key = (uintptr_t)comm;
	size_t s = slot_of(key);

	if (key <= 1)
		return NULL;
	for (size_t i = 0; i < COMMS; i++, s = (s + 1) & (COMMS - 1)) {
		struct ts_comm *e = &table[s];
		uintptr_t cur = atomic_load_explicit(&e->key, memory_order_acquire);
		if (cur == key)
			return e;
		if (cur != 0)
			continue;
		if (!create)
			return NULL;
		/* slots are never reused, so a fresh one is all zeros: claim it, then name
		 * it; a reader that comes between sees id 0 and falls back */
		if (atomic_compare_exchange_strong(&e->key, &cur, key)) {
			atomic_store_explicit(&e->nranks, nranks, memory_order_relaxed);
			atomic_store_explicit(&e->id, id, memory_order_release);
			return e;
		}
		if (cur == key) /* another thread made it first */
			return e;
	}
	return NULL;
}

struct ts_comm *ts_comm_find(void *comm, uint64_t fallback_id, uint32_t nranks)
{
	return lookup(comm, true, fallback_id, nranks);
}

void ts_comm_made(void *comm, uint64_t id, uint32_t nranks, uint32_t rank)
{
	struct ts_comm *e = lookup(comm, true, id, nranks);
	struct ts_rec r = { .type = TS_REC_COMM,
			    .comm = { .hash = id, .members = nranks, .rank = rank } };

	if (e) { /* a pointer seen before its creation returned keeps its count */
		atomic_store(&e->id, id);
		atomic_store(&e->nranks, nranks);
	}
	ts_emit(&r);
}

void ts_comm_made_root(void *comm, uint64_t id, uint32_t nranks, uint32_t rank)
{
	ts_comm_made(comm, id, nranks, rank);
	if (nranks > 0 && nranks <= INT32_MAX && rank < nranks)
		ts_lib_learn_rank((int32_t)rank, (int32_t)nranks, -1, TS_IDENT_COMM);
}

void ts_comm_gone(void *comm)
{
	struct ts_comm *e = lookup(comm, false, 0, 0);

	if (e)
		atomic_store(&e->key, (uintptr_t)1);
}
