// SPDX-License-Identifier: Apache-2.0
/* make bench: the core pipeline's costs, measured side by side in one run and printed
 * next to the budgets of docs/design.md. Medians of repeated rounds. */
#include <dlfcn.h>
#include <pthread.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/detect/job.h"
#include "analysis/detect/snapdiff.h"
#include "hash.h"
#include "injector/relay/agg.h"
#include "injector/relay/batch.h"
#include "ring.h"
#include "trainscope.h"

#define ROUNDS 7

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return v[n / 2];
}

__attribute__((noinline)) static void empty_call(uint64_t x)
{
	__asm__ volatile("" ::"r"(x));
}

struct drainer {
	struct ts_ring *ring;
	volatile int stop;
};

static void *drain(void *arg)
{
	struct drainer *d = arg;
	struct ts_rec r;

	while (!d->stop)
		while (ts_ring_pop(d->ring, &r))
			;
	return NULL;
}

static struct ts_ring *find_ring(const char *dir)
{
	char cmd[256], path[512];
	struct ts_ring *r = NULL;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "ls %s/*.ring 2>/dev/null | head -1", dir);
	f = popen(cmd, "r");
	if (f && fgets(path, sizeof(path), f)) {
		path[strcspn(path, "\n")] = 0;
		ts_ring_open(path, &r);
	}
	if (f)
		pclose(f);
	return r;
}

static void row(const char *what, double value, const char *unit, const char *budget)
{
	printf("| %-46s | %14.1f %-10s | %-22s |\n", what, value, unit, budget);
}

/* ns per call: empty call, step_end (one record), region pair, full-ring drop. */
static void bench_hooks(const char *lib)
{
	char dir[] = "/tmp/ts-bench-XXXXXX";
	void (*step_end)(uint64_t), (*rb)(enum trainscope_region), (*re)(enum trainscope_region);
	double e[ROUNDS], s[ROUNDS], p[ROUNDS], dr[ROUNDS];
	const uint64_t N = 2000000;
	struct drainer d = { 0 };
	pthread_t t;
	void *h;

	if (!mkdtemp(dir))
		return;
	setenv("TRAINSCOPE_RING_DIR", dir, 1);
	setenv("TRAINSCOPE_RING_SLOTS", "65536", 1);
	if (!(h = dlopen(lib, RTLD_NOW))) {
		fprintf(stderr, "bench: %s\n", dlerror());
		exit(1);
	}
	*(void **)&step_end = dlsym(h, "trainscope_step_end");
	*(void **)&rb = dlsym(h, "trainscope_region_begin");
	*(void **)&re = dlsym(h, "trainscope_region_end");
	step_end(0); /* creates the ring */
	d.ring = find_ring(dir);
	pthread_create(&t, NULL, drain, &d);
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t t0 = now_ns();
		for (uint64_t i = 0; i < N; i++)
			empty_call(i);
		uint64_t t1 = now_ns();
		for (uint64_t i = 0; i < N; i++)
			step_end(i);
		uint64_t t2 = now_ns();
		for (uint64_t i = 0; i < N / 2; i++) {
			rb(TRAINSCOPE_REGION_COMPUTE);
			re(TRAINSCOPE_REGION_COMPUTE);
		}
		uint64_t t3 = now_ns();
		e[r] = (double)(t1 - t0) / N;
		s[r] = (double)(t2 - t1) / N;
		p[r] = (double)(t3 - t2) / (N / 2);
	}
	d.stop = 1;
	pthread_join(t, NULL);
	for (int r = 0; r < ROUNDS; r++) { /* nobody drains now: the drop path */
		uint64_t t0 = now_ns();
		for (uint64_t i = 0; i < N; i++)
			step_end(i);
		dr[r] = (double)(now_ns() - t0) / N;
	}
	row("empty function call (reference)", median(e, ROUNDS), "ns/call", "-");
	row("trainscope_step_end: one record into the ring", median(s, ROUNDS), "ns/call",
	    "<= 50 ns (untimed)");
	row("region begin+end pair: one timed record", median(p, ROUNDS), "ns/pair", "<= 1000 ns (timed)");
	row("step_end with the ring full: drop and count", median(dr, ROUNDS), "ns/call", "-");
	if (system("rm -rf /tmp/ts-bench-*") != 0)
		fprintf(stderr, "bench: could not clean /tmp/ts-bench-*\n");
}

struct prod {
	struct ts_ring *r;
	uint64_t n, dropped;
};

static void *produce(void *arg)
{
	struct prod *p = arg;
	struct ts_rec rec = { .type = TS_REC_REGION };

	for (uint64_t i = 0; i < p->n; i++) {
		rec.raw[0] = i; /* the ring moves any record: a count in its first word */
		while (ts_ring_push(p->r, &rec))
			p->dropped++; /* retry: throughput of delivered records */
	}
	return NULL;
}

static double ring_rate(int producers)
{
	uint32_t cap = 65536;
	struct ts_ring *r = aligned_alloc(64, (ts_ring_bytes(cap) + 63) & ~(size_t)63);
	struct prod p[4];
	pthread_t t[4];
	uint64_t total = 4000000, got = 0, t0;
	struct ts_rec rec;

	ts_ring_init(r, cap, NULL);
	t0 = now_ns();
	for (int i = 0; i < producers; i++) {
		p[i] = (struct prod){ r, total / (uint64_t)producers, 0 };
		pthread_create(&t[i], NULL, produce, &p[i]);
	}
	while (got < total)
		got += (uint64_t)ts_ring_pop(r, &rec);
	for (int i = 0; i < producers; i++)
		pthread_join(t[i], NULL);
	free(r);
	return (double)total / ((double)(now_ns() - t0) / 1e9);
}

/* The relay's CPU path without the network: fold records into steps, encode batches. */
static double relay_rate(void)
{
	struct ts_ident id = { .ns = "b", .job = "b", .world_size = 8 };
	struct ts_step_sum steps[256], s;
	struct ts_agg a;
	uint64_t records = 0, t0 = now_ns();
	int n = 0;

	ts_agg_init(&a, 0);
	for (uint64_t step = 0; step < 400000; step++) {
		struct ts_rec recs[6] = {
			{ .type = TS_REC_STEP_BEGIN, .t_ns = step * 100, .mark.step = step },
			{ .type = TS_REC_REGION, .kind = TRAINSCOPE_REGION_DATALOADER, .t_ns = step * 100, .dur_ns = 10 },
			{ .type = TS_REC_REGION, .kind = TRAINSCOPE_REGION_COMPUTE, .t_ns = step * 100 + 10, .dur_ns = 50 },
			{ .type = TS_REC_DEVICE, .kind = TRAINSCOPE_REGION_COMPUTE, .device.busy_ns = 45 },
			{ .type = TS_REC_COLL, .kind = TRAINSCOPE_COLL_ALL_REDUCE, .t_ns = step * 100 + 60, .dur_ns = 30, .coll.bytes = 1 << 20 },
			{ .type = TS_REC_STEP_END, .t_ns = step * 100 + 95, .mark.step = step },
		};
		for (int i = 0; i < 6; i++, records++)
			if (ts_agg_add(&a, &recs[i], &s))
				steps[n++] = s;
		if (n == 256) {
			struct ts_batch_hdr h = { .id = &id, .producer_id = 1, .seq = step };
			uint8_t *buf;
			size_t len;
			if (ts_batch_encode(&h, steps, n, &buf, &len) == 0)
				free(buf);
			n = 0;
		}
	}
	return (double)records / ((double)(now_ns() - t0) / 1e9);
}

/* Step st of rank r: 2 % noise and one rank 30 % slower, as a job with a straggler. */
static void feed_rank(struct ts_job *j, int world, int r, int st)
{
	uint64_t h = ((uint64_t)r * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)st << 32);
	double noise = 1 + 0.02 * ((double)((h * 0xbf58476d1ce4e5b9ull) >> 40) /
				   (double)(1 << 24) * 2 - 1);
	uint64_t t = 1000 + (uint64_t)st * 1000000000ull;
	struct ts_rank_step rs = { .step = (uint64_t)st, .start_ns = t, .end_ns = t + 60000000,
				   .m = { 30 * noise * (r == 4321 ? 1.3 : 1), 5, 0.5, 20 * noise, 0 } };

	ts_job_add_step(j, r, world, &rs);
}

/* Steps [from, to) at 1 step/s, and the first half of step to's ranks: a save finds a
 * step in flight, as it does in a live job. */
static void feed_until(struct ts_job *j, int world, int from, int to)
{
	for (int st = from; st <= to; st++) {
		for (int r = st == from && from ? world / 2 : 0; r < (st == to ? world / 2 : world); r++)
			feed_rank(j, world, r, st);
		ts_job_tick(j, (uint64_t)st * 1000000000ull + 500000000);
	}
}

/* The job saved whole, as the single-blob snapshot did: its bytes and CPU (the copy,
 * and the hash the bucket's head holds). */
static double save_whole(struct ts_job *j, struct ts_buf *out)
{
	struct ts_snap s = { .out = out };
	uint64_t t0 = now_ns();

	out->len = 0;
	ts_job_save(j, &s);
	volatile uint64_t h = ts_fnv1a(out->data, out->len);
	(void)h;
	return (double)(now_ns() - t0) / 1e6;
}

/* What changed since the last save, against its shadow: its bytes into ops, and CPU
 * (the walk, and the object's hash). */
static double save_delta(struct ts_job *j, struct ts_image *shadow, struct ts_buf *ops)
{
	struct ts_snapdiff d;
	struct ts_snap s;
	uint64_t t0 = now_ns();

	ops->len = 0;
	ts_snapdiff_begin(&s, &d, shadow, ops);
	ts_job_save(j, &s);
	ts_snapdiff_end(&s);
	volatile uint64_t h = ts_fnv1a(ops->data, ops->len);
	(void)h;
	return (double)(now_ns() - t0) / 1e6;
}

/* A job read back from what a restore reads (stored): its hash checked, its segments
 * applied when it is a base and deltas (else it is the whole image), the job loaded. */
static double restore(const struct ts_buf *stored, bool segments, int world)
{
	struct ts_image img = { 0 };
	struct ts_job *j = NULL;
	uint64_t t0 = now_ns();
	volatile uint64_t h = ts_fnv1a(stored->data, stored->len);

	(void)h;
	if (segments)
		ts_snapdiff_apply(&img, stored->data, stored->len);
	struct ts_snap s = { .in = segments ? img.data : (const uint8_t *)stored->data,
			     .len = segments ? img.len : stored->len };
	if (ts_job_load(&j, &s, world, 1))
		fprintf(stderr, "bench: the job did not restore\n");
	double ms = (double)(now_ns() - t0) / 1e6;
	ts_job_free(j);
	ts_image_free(&img);
	return ms;
}

/* The job's base from its shadow, appended to out: ms (the encoding and its hash). */
static double save_base(const struct ts_image *shadow, struct ts_buf *out)
{
	uint64_t t0 = now_ns();

	ts_snapdiff_base(shadow, out);
	volatile uint64_t h = ts_fnv1a(out->data, out->len);
	(void)h;
	return (double)(now_ns() - t0) / 1e6;
}

/* State snapshots of a job of world ranks at 1 step/s saved every 5 s, steady state:
 * the whole state every save (before) against what changed, with a new base once the
 * deltas would pass half of one (after), and a restore of each. */
static void bench_snapshot(int world)
{
	struct ts_buf whole = { 0 }, ops = { 0 }, chain = { 0 };
	double w[ROUNDS], d[ROUNDS], bytes[ROUNDS], bms;
	struct ts_image shadow = { 0 };
	struct ts_params p;
	struct ts_job *j;
	char what[64];
	int st = 40, k;

	ts_params_defaults(&p);
	p.limits.max_world = world > p.limits.max_world ? world : p.limits.max_world;
	if (ts_job_new(&j, "b", "b", world, &p))
		return;
	feed_until(j, world, 0, st);
	save_delta(j, &shadow, &ops);
	bms = save_base(&shadow, &chain);
	size_t base = chain.len;
	for (int r = 0; r < ROUNDS; r++, st += 5) {
		feed_until(j, world, st, st + 5);
		w[r] = save_whole(j, &whole);
		d[r] = save_delta(j, &shadow, &ops);
		bytes[r] = (double)ops.len;
		if (chain.len + ops.len - base <= base / 2)
			ts_buf_append(&chain, ops.data, ops.len);
	}
	double delta = median(bytes, ROUNDS);
	k = (int)((double)base / 2 / delta); /* deltas before a base */
	k = k < 16 ? k : 16;
	snprintf(what, sizeof(what), "snapshot, %d ranks: stored a save, before", world);
	row(what, (double)whole.len / 1e6, "MB", "-");
	row("  ... CPU a save, before (copy, hash)", median(w, ROUNDS), "ms", "-");
	row("  ... a restore, before", restore(&whole, false, world), "ms", "-");
	snprintf(what, sizeof(what), "snapshot, %d ranks: stored a save, after", world);
	row(what, delta / 1e6, "MB", "-");
	row("  ... CPU a save, after (walk, hash)", median(d, ROUNDS), "ms", "-");
	row("  ... a base (zeros left out): its size", (double)base / 1e6, "MB", "-");
	row("  ... a base: once a save in", k + 1, "saves", "-");
	row("  ... a base: its CPU", bms, "ms", "-");
	row("  ... stored a save, after, bases included", (k * delta + (double)base) / (k + 1) / 1e6,
	    "MB", "-");
	row("  ... a restore, after (a base, its deltas)", restore(&chain, true, world), "ms", "-");
	ts_buf_free(&whole), ts_buf_free(&ops), ts_buf_free(&chain);
	ts_image_free(&shadow);
	ts_job_free(j);
}

/* Analyzer: rank-steps/s, and the time to analyse one step of a 16,384-rank job. */
/* Heap bytes in use (glibc): job state measured, next to what limits.memory_mb counts. */
static size_t heap_used(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static void bench_job_memory(void)
{
	struct ts_params p;
	struct ts_job *j;
	size_t before;

	ts_params_defaults(&p);
	before = heap_used();
	if (ts_job_new(&j, "b", "small", 8, &p))
		return;
	row("analyzer: memory of an 8-rank job", (double)(heap_used() - before), "bytes", "-");
	/* its step ring grown to the bound: rank 7 behind by limits.reorder_steps, within
	 * lateness_s (no tick), so every step is held */
	for (int st = 0; st < p.limits.reorder_steps; st++)
		for (int r = 0; r < 7; r++) {
			struct ts_rank_step rs = { .step = (uint64_t)st, .start_ns = 1000, .end_ns = 2000 };
			ts_job_add_step(j, r, 8, &rs);
		}
	row("  ... holding 1,024 steps a late rank lacks", (double)(heap_used() - before),
	    "bytes", "-");
	row("  (limits.memory_mb counts, ts_job_bytes)", (double)ts_job_bytes(&p, 8), "bytes", "-");
	ts_job_free(j);
}

/* One job of world ranks fed steps of 2 % noise with one rank 30 % slower (DBSCAN's
 * spread test passes, so the window's clustering runs as on a job with a straggler).
 * Fills the ingest and analysis time per step, the worst analysis of one step past
 * the warm-up, the heap it holds; returns whether the straggler was named. */
struct job_cost {
	double ingest_ms, tick_ms, worst_ms, heap_per_rank, counted_per_rank;
};

static bool job_cost(int world, int steps, struct job_cost *c)
{
	const int slow = world / 4 + 321;
	struct ts_params p;
	struct ts_job *j;
	uint64_t add = 0, tick = 0;
	size_t before = heap_used();
	int measured = 0;

	ts_params_defaults(&p);
	p.limits.max_world = world;
	memset(c, 0, sizeof(*c));
	if (ts_job_new(&j, "b", "b", world, &p))
		return false;
	for (int st = 0; st < steps; st++) {
		uint64_t t0 = now_ns();
		for (int r = 0; r < world; r++) {
			uint64_t h = ((uint64_t)r * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)st << 32);
			double noise = 1 + 0.02 * ((double)((h * 0xbf58476d1ce4e5b9ull) >> 40) /
						   (double)(1 << 24) * 2 - 1);
			struct ts_rank_step rs = { .step = (uint64_t)st, .start_ns = 1000,
						   .end_ns = 1000 + 60000000,
						   .m = { 30 * noise * (r == slow ? 1.3 : 1), 5, 0.5,
							  20 * noise, 0 } };
			ts_job_add_step(j, r, world, &rs);
		}
		uint64_t t1 = now_ns();
		ts_job_tick(j, 1);
		uint64_t t2 = now_ns();
		if (st < p.fs.task_stable_step + p.space_window)
			continue;
		measured++;
		add += t1 - t0, tick += t2 - t1;
		if ((double)(t2 - t1) / 1e6 > c->worst_ms)
			c->worst_ms = (double)(t2 - t1) / 1e6;
	}
	const struct ts_job_result *res = ts_job_result(j);
	bool named = res->nslow == 1 && res->slow[0].rank == slow;
	c->ingest_ms = (double)add / 1e6 / measured;
	c->tick_ms = (double)tick / 1e6 / measured;
	c->heap_per_rank = (double)(heap_used() - before) / world;
	c->counted_per_rank = (double)ts_job_bytes(&p, world) / world;
	ts_job_free(j);
	return named;
}

static void bench_analyzer(void)
{
	struct job_cost c;
	bool named = job_cost(16384, 40, &c);

	row("  (the straggler named: 1 = yes)", named, "-", "1");
	row("analyzer: rank-steps ingested and analysed",
	    16384 / ((c.ingest_ms + c.tick_ms) / 1e3), "/s/core", ">= 100,000 /s/core");
	row("analyzer: one step of a 16,384-rank job", c.worst_ms, "ms", "<= 100 ms");
	row("analyzer: memory per rank (16,384-rank job)", c.heap_per_rank, "bytes", "-");
	row("  (limits.memory_mb counts, ts_job_bytes)", c.counted_per_rank, "bytes", "-");
}

/* Does one job's cost per step grow faster than its ranks? (issue: one job on more
 * than one core). Per rank-step, ingest and analysis, from 1,024 to 131,072 ranks. */
static void bench_job_scaling(void)
{
	static const int worlds[] = { 1024, 4096, 16384, 65536, 131072 };
	char what[64];

	for (size_t i = 0; i < sizeof(worlds) / sizeof(worlds[0]); i++) {
		struct job_cost c;
		bool named = job_cost(worlds[i], 34, &c);
		double ns_rank = (c.ingest_ms + c.tick_ms) * 1e6 / worlds[i];

		snprintf(what, sizeof(what), "  %d ranks: ns per rank-step%s", worlds[i],
			 named ? "" : " (straggler MISSED)");
		row(what, ns_rank, "ns", "-");
		snprintf(what, sizeof(what), "    ingest / analysis / worst step");
		printf("| %-46s | %7.1f / %6.1f / %6.1f ms | %-22s |\n", what, c.ingest_ms,
		       c.tick_ms, c.worst_ms, "-");
	}
}

int main(int argc, char **argv)
{
	const char *lib = argc > 1 ? argv[1] : "build/lib/libtrainscope.so";

	printf("trainscope core benchmark (%ld CPUs; medians of %d rounds where repeated)\n\n",
	       sysconf(_SC_NPROCESSORS_ONLN), ROUNDS);
	printf("| %-46s | %25s | %-22s |\n", "what", "measured", "budget (design.md)");
	printf("|%.48s|%.27s|%.24s|\n", "------------------------------------------------",
	       "---------------------------", "------------------------");
	bench_hooks(lib);
	row("ring: 1 producer -> consumer", ring_rate(1), "records/s", "-");
	row("ring: 2 producers -> consumer", ring_rate(2), "records/s", "-");
	row("relay: fold + encode (no network)", relay_rate(), "records/s", ">= 1,000,000 /s/core");
	bench_analyzer();
	printf("| %-46s | %25s | %-22s |\n", "analyzer: one job's cost as it grows", "", "linear: flat per rank");
	bench_job_scaling();
	bench_job_memory();
	/* BENCH_SNAP_RANKS=16384,100000: more sizes, by hand (100,000 ranks take 2.5 GB) */
	const char *sizes = getenv("BENCH_SNAP_RANKS");
	for (const char *c = sizes && *sizes ? sizes : "16384"; c && *c; c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL)
		bench_snapshot(atoi(c));
	return 0;
}
