// SPDX-License-Identifier: Apache-2.0
/* The ring: order, bounds, and exact accounting under multi-threaded stress. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ring.h"

static struct ts_ring *ring_alloc(uint32_t cap)
{
	struct ts_ring *r = aligned_alloc(64, (ts_ring_bytes(cap) + 63) & ~(size_t)63);

	assert_non_null(r);
	memset(r, 0, ts_ring_bytes(cap));
	assert_int_equal(ts_ring_init(r, cap, NULL), 0);
	return r;
}

static void test_rejects_bad_capacity(void **state)
{
	struct ts_ring *r = ring_alloc(8);

	(void)state;
	assert_int_equal(ts_ring_init(r, 6, NULL), -EINVAL);
	assert_int_equal(ts_ring_init(r, 1, NULL), -EINVAL);
	free(r);
}

static void test_fifo_and_full(void **state)
{
	struct ts_ring *r = ring_alloc(8);
	struct ts_rec rec = { .type = TS_REC_STEP_END }, out;

	(void)state;
	assert_int_equal(ts_ring_pop(r, &out), 0);
	for (uint64_t i = 0; i < 8; i++) {
		rec.mark.step = i;
		assert_int_equal(ts_ring_push(r, &rec), 0);
	}
	rec.mark.step = 99;
	assert_int_equal(ts_ring_push(r, &rec), -ENOSPC);
	assert_int_equal(atomic_load(&r->dropped), 1);
	for (uint64_t i = 0; i < 8; i++) {
		assert_int_equal(ts_ring_pop(r, &out), 1);
		assert_int_equal(out.mark.step, i);
	}
	assert_int_equal(ts_ring_pop(r, &out), 0);
	/* wraps around after draining */
	for (uint64_t i = 0; i < 20; i++) {
		rec.mark.step = 100 + i;
		assert_int_equal(ts_ring_push(r, &rec), 0);
		assert_int_equal(ts_ring_pop(r, &out), 1);
		assert_int_equal(out.mark.step, 100 + i);
	}
	free(r);
}

#define PRODUCERS 4
#define PER_PRODUCER 200000

struct stress {
	struct ts_ring *r;
	int id;
	uint64_t attempted, refused;
	_Atomic int *running;
};

static void *producer(void *arg)
{
	struct stress *s = arg;
	struct ts_rec rec = { .type = TS_REC_REGION };

	for (uint64_t i = 0; i < PER_PRODUCER; i++) {
		rec.kind = (uint16_t)s->id;
		rec.raw[0] = i; /* the ring moves any record: a count in its first word */
		s->attempted++;
		if (ts_ring_push(s->r, &rec))
			s->refused++;
	}
	atomic_fetch_sub(s->running, 1);
	return NULL;
}

/* written + dropped = attempted, exactly; each producer's records arrive in order. */
static void test_stress_exact_accounting(void **state)
{
	struct ts_ring *r = ring_alloc(1024);
	struct stress s[PRODUCERS];
	pthread_t t[PRODUCERS];
	_Atomic int running = PRODUCERS;
	int64_t last[PRODUCERS];
	uint64_t drained = 0, attempted = 0, refused = 0;
	struct ts_rec out;

	(void)state;
	for (int i = 0; i < PRODUCERS; i++) {
		s[i] = (struct stress){ r, i, 0, 0, &running };
		last[i] = -1;
		assert_int_equal(pthread_create(&t[i], NULL, producer, &s[i]), 0);
	}
	for (;;) {
		int alive = atomic_load(&running);
		while (ts_ring_pop(r, &out)) {
			assert_true(out.kind < PRODUCERS);
			assert_true((int64_t)out.raw[0] > last[out.kind]);
			last[out.kind] = (int64_t)out.raw[0];
			drained++;
		}
		if (!alive)
			break;
	}
	for (int i = 0; i < PRODUCERS; i++) {
		pthread_join(t[i], NULL);
		attempted += s[i].attempted;
		refused += s[i].refused;
	}
	assert_int_equal(attempted, (uint64_t)PRODUCERS * PER_PRODUCER);
	assert_int_equal(refused, atomic_load(&r->dropped));
	assert_int_equal(drained, atomic_load(&r->head));
	assert_int_equal(drained + atomic_load(&r->dropped), attempted);
	assert_true(refused > 0); /* a 1024-slot ring cannot keep up with four producers */
	free(r);
}

static void test_file_roundtrip_and_liveness(void **state)
{
	char dir[] = "/tmp/ts-ring-test-XXXXXX", path[4096];
	struct ts_ident id = { .ns = "ns1", .job = "j1", .rank = 3, .world_size = 8 };
	struct ts_ring *w, *r;
	struct ts_rec rec = { .type = TS_REC_STEP_BEGIN, .mark.step = 7 }, out;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(ts_ring_create(dir, 64, &id, &w, &fd, path, sizeof(path)), 0);
	assert_int_equal(ts_ring_open(path, &r), 0);
	assert_string_equal(r->id.job, "j1");
	assert_int_equal(r->id.rank, 3);
	assert_int_equal(ts_ring_push(w, &rec), 0);
	assert_int_equal(ts_ring_pop(r, &out), 1);
	assert_int_equal(out.mark.step, 7);
	assert_int_equal(ts_ring_producer_alive(path), 1);
	/* the mapping holds the open file, so the lock goes with both, as at process exit */
	ts_ring_unmap(w);
	close(fd);
	assert_int_equal(ts_ring_producer_alive(path), 0);
	ts_ring_unmap(r);
	/* a truncated file is refused */
	assert_int_equal(truncate(path, 100), 0);
	assert_int_equal(ts_ring_open(path, &r), -EBADMSG);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rejects_bad_capacity),
		cmocka_unit_test(test_fifo_and_full),
		cmocka_unit_test(test_stress_exact_accounting),
		cmocka_unit_test(test_file_roundtrip_and_liveness),
	};
	return cmocka_run_group_tests_name("ring", tests, NULL, NULL);
}
