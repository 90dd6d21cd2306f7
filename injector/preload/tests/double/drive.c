// SPDX-License-Identifier: Apache-2.0
#define TRAINSCOPE_WEAK
#include "drive.h"
#include "trainscope.h"

#include <stdio.h>
#include <time.h>

int tsd_open_ring(struct tsd_seen *s)
{
	char path[4096];

	return trainscope_side_path && !trainscope_side_path(TS_RING_SUFFIX, path, sizeof(path)) &&
			       !ts_ring_open(path, &s->ring)
		       ? 0
		       : -1;
}

static void keep(struct ts_rec *arr, int *n, int cap, const struct ts_rec *r)
{
	if (*n < cap)
		arr[(*n)++] = *r;
}

/* A collective in the order it was issued (its host start), not completed: the preload's
 * poller finds finished ops in slot order, so on a slow machine a later op on the same
 * stream can be found done before an earlier one that finished first. */
static void keep_issued(struct ts_rec *arr, int *n, int cap, const struct ts_rec *r)
{
	int i = *n;

	if (*n >= cap)
		return;
	for (; i > 0 && arr[i - 1].t_ns > r->t_ns; i--)
		arr[i] = arr[i - 1];
	arr[i] = *r;
	(*n)++;
}

void tsd_drain(struct tsd_seen *s)
{
	struct ts_rec r;

	while (ts_ring_pop(s->ring, &r)) {
		switch (r.type) {
		case TS_REC_GPU_STEP: keep(s->gpu_step, &s->gpu_steps, TSD_MAXREC, &r); break;
		case TS_REC_COLL: keep_issued(s->coll, &s->ncoll, TSD_MAXREC, &r); break;
		case TS_REC_GRAPH_COLL: keep(s->gcoll, &s->ngcoll, TSD_MAXREC, &r); break;
		case TS_REC_PEER: keep(s->peer, &s->npeer, 8, &r); break;
		case TS_REC_GEMM: keep(s->gemm, &s->ngemm, TSD_MAXREC, &r); break;
		case TS_REC_HANG: keep(s->hang, &s->nhang, 4, &r); break;
		case TS_REC_COMM: keep(s->comm, &s->ncomm, 8, &r); break;
		case TS_REC_IDENT: s->nident++; break;
		case TS_REC_STEP_CTR:
			s->ctr_launches += r.ctr.launches;
			s->ctr_api += r.api_calls;
			s->ctr_steps++;
			s->ctr_unclocked += r.ctr.launches && !r.ctr.call_ns;
			break;
		}
	}
}

uint64_t tsd_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

void tsd_kv(const char *key, int i, const char *field, uint64_t v)
{
	if (i < 0)
		printf("%s %llu\n", key, (unsigned long long)v);
	else
		printf("%s.%d.%s %llu\n", key, i, field, (unsigned long long)v);
}
