// SPDX-License-Identifier: Apache-2.0
/* trainscope-loadgen: simulated relays for jobs of up to tens of thousands of ranks.
 *
 * Each rank is a producer of its own (producer id, batch sequence) making real
 * trainscope.v1.Batch messages, encoded by the relay's own encoder: a Hello first, then
 * a Step per step with its phases, collectives by size, the communicator and GEMMs, and
 * a final batch. A pod's relay sends its ranks' batches of a step as one Bundle on the
 * pod's subject (the relay's bundler), or with --wire rank each on the rank's subject.
 * Synchronous data parallelism: every rank of a step ends together; a slow rank
 * computes longer and the others wait in their collective. Faults: --slow
 * RANK:FACTOR[:FROM] (compute), and jitter. */
#include "injector/relay/batch.h"
#include "injector/relay/bundle.h"
#include "hash.h"
#include "log.h"
#include "natsw.h"
#include "tsclock.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_SLOW 16

struct slow {
	int rank;
	double factor;
	uint64_t from;
};

struct gen {
	struct tsn_opts nats;
	const char *ns, *job;
	int ranks, jobs, ranks_per_node;
	uint64_t steps;
	double step_ms, rate, jitter;
	bool live;          /* steps in real time: each published as it ends */
	enum ts_wire wire;
	struct ts_bundler bundler; /* the pod wire's: one Bundle per pod and step */
	struct slow slow[MAX_SLOW];
	int nslow;
	unsigned seed;
	uint64_t t0;        /* the first step's start, CLOCK_REALTIME */
	uint64_t *seq;      /* per job and rank */
	double *start_ms;   /* each step's start after t0: the sum of the steps before */
	uint64_t published, bytes; /* batches, and their encoded bytes */
};

static int parse_slow(struct gen *g, const char *arg)
{
	struct slow *s = &g->slow[g->nslow];
	unsigned long long from = 0;
	int n;

	if (g->nslow == MAX_SLOW)
		return -E2BIG;
	n = sscanf(arg, "%d:%lf:%llu", &s->rank, &s->factor, &from);
	if (n < 2 || s->rank < 0 || s->factor <= 0)
		return -EINVAL;
	s->from = from;
	g->nslow++;
	return 0;
}

#define HEAD                                                                           \
	"usage: trainscope-loadgen [options]\n"                                          \
	"Publishes the records of simulated training jobs to NATS JetStream, as the\n"   \
	"relays of that many ranks would (one producer per rank, a relay per pod).\n"    \
	"Prints what it published; exits 1 when JetStream did not store all of it.\n\n"

static int slow_opt(void *s, const char *arg, char *err, size_t n)
{
	if (!parse_slow(s, arg))
		return 0;
	snprintf(err, n, "want RANK:FACTOR[:FROM], at most %d", MAX_SLOW);
	return -EINVAL;
}

static int wire_opt(void *s, const char *arg, char *err, size_t n)
{
	if (!ts_wire_parse(arg, &((struct gen *)s)->wire))
		return 0;
	snprintf(err, n, "want pod or rank");
	return -EINVAL;
}

#define F(f) offsetof(struct gen, f)
#define XSTR(x) #x
#define STR_OF(x) XSTR(x)
static const struct ts_opt options[] = {
	{ "ranks", 'n', TS_OPT_INT, F(ranks), 1, 1 << 20, "N", NULL,
	  "ranks per job (default 1024)", NULL },
	{ "jobs", 'j', TS_OPT_INT, F(jobs), 1, 1000, "N", NULL,
	  "jobs at once, named JOB-0.. when more than one (default 1)", NULL },
	{ "steps", 0, TS_OPT_I64, F(steps), 1, 1e12, "N", NULL, "steps per job (default 200)",
	  NULL },
	{ "step-ms", 0, TS_OPT_DOUBLE, F(step_ms), 1e-3, 1e7, "MS", NULL,
	  "a step's time (default 100)", NULL },
	{ "rate", 0, TS_OPT_DOUBLE, F(rate), 0, 1e9, "R", NULL, "steps per second to publish, "
	  "paced (default 0: as fast as the server acknowledges); step times stay --step-ms",
	  NULL },
	{ "live", 0, TS_OPT_TRUE, F(live), 0, 0, NULL, NULL, "steps happen now: each step's "
	  "batches are published when it ends (--step-ms apart), as relays would; the "
	  "analyzer's lag behind the job is then real", NULL },
	{ "jitter", 0, TS_OPT_DOUBLE, F(jitter), 0, 10, "F", NULL,
	  "relative noise on each rank's compute (default 0.02)", NULL },
	{ "slow", 0, TS_OPT_CALL, 0, 0, 0, "R:F[:S]", NULL, "rank R computes F times longer from "
	  "step S (default 0); up to " STR_OF(MAX_SLOW) " of them", slow_opt },
	{ "namespace", 0, TS_OPT_STR, F(ns), 0, 0, "NS", NULL, "(default loadgen)", NULL },
	{ "job", 0, TS_OPT_STR, F(job), 0, 0, "NAME", NULL, "(default big)", NULL },
	{ "ranks-per-node", 0, TS_OPT_INT, F(ranks_per_node), 1, 1 << 20, "N", NULL,
	  "pods and nodes hold this many ranks (default 8)", NULL },
	{ "wire", 0, TS_OPT_CALL, 0, 0, 0, "pod|rank", NULL, "a Bundle of its ranks' batches per "
	  "pod and step, as relays send them (default), or a message per rank", wire_opt },
	{ "seed", 0, TS_OPT_INT, F(seed), 0, 1 << 30, "N", NULL, "noise seed (default 1)", NULL },
};

static int parse_args(struct gen *g, int argc, char **argv)
{
	const struct ts_opt_group groups[] = { TS_OPTS_GROUP(tsn_opt_table, &g->nats),
					       TS_OPTS_GROUP(options, g) };
	int rc;

	*g = (struct gen){ .ns = "loadgen", .job = "big", .ranks = 1024, .jobs = 1,
			   .ranks_per_node = 8, .steps = 200, .step_ms = 100, .jitter = 0.02, .seed = 1 };
	tsn_opts_from_env(&g->nats, "trainscope-loadgen");
	if ((rc = ts_opts_parse(groups, 2, "trainscope-loadgen", HEAD, 0, argc, argv)) <= 0)
		exit(rc ? 2 : 0);
	tsn_opts_finish(&g->nats);
	return 0;
}

/* A deterministic uniform in [-1, 1) per (job, rank, step). */
static double noise(const struct gen *g, int job, int rank, uint64_t step)
{
	uint64_t x = ts_splitmix64(((uint64_t)g->seed << 40) ^ ((uint64_t)job << 32) ^
				   ((uint64_t)rank << 20) ^ step);

	return (double)(x >> 11) / (double)(1ull << 52) - 1.0;
}

static double slow_factor(const struct gen *g, int rank, uint64_t step)
{
	for (int i = 0; i < g->nslow; i++)
		if (g->slow[i].rank == rank && step >= g->slow[i].from)
			return g->slow[i].factor;
	return 1.0;
}

static void ident(const struct gen *g, int job, int rank, struct ts_ident *id)
{
	int node = rank / g->ranks_per_node;

	memset(id, 0, sizeof(*id));
	snprintf(id->ns, sizeof(id->ns), "%s", g->ns);
	if (g->jobs > 1)
		snprintf(id->job, sizeof(id->job), "%s-%d", g->job, job);
	else
		snprintf(id->job, sizeof(id->job), "%s", g->job);
	snprintf(id->pod, sizeof(id->pod), "%s-worker-%d", id->job, node);
	snprintf(id->node, sizeof(id->node), "node-%d", node);
	snprintf(id->container, sizeof(id->container), "trainer");
	id->rank = rank;
	id->local_rank = rank % g->ranks_per_node;
	id->world_size = g->ranks;
	id->pid = 1000 + id->local_rank;
	id->dev_index = id->local_rank;
	snprintf(id->dev_uuid, sizeof(id->dev_uuid), "GPU-%08x-loadgen", (unsigned)(job * 1048576 + rank));
}

/* One rank's step: compute (slow ranks longer), then the all-reduce that ends the step
 * when the slowest rank arrives. */
static void step_sum(const struct gen *g, int job, int rank, uint64_t step, double slowest,
		     struct ts_step_sum *s)
{
	double ms = g->step_ms, compute = 0.6 * ms * (1 + g->jitter * noise(g, job, rank, step));
	uint64_t start = g->t0 + (uint64_t)(g->start_ms[step] * 1e6);

	compute *= slow_factor(g, rank, step);
	memset(s, 0, sizeof(*s));
	s->step = step;
	s->start_ns = start;
	s->end_ns = start + (uint64_t)(slowest * 1e6);
	s->dataloader_ns = (uint64_t)(0.05 * ms * 1e6);
	s->launch_ns = (uint64_t)(0.05 * ms * 1e6);
	s->compute_ns = s->compute_wall_ns = (uint64_t)(compute * 1e6);
	s->have_device = true;
	uint64_t busy = s->dataloader_ns + s->launch_ns + s->compute_ns;
	s->collective_ns = s->end_ns - start > busy ? s->end_ns - start - busy : 0;
	s->ncoll = 1;
	s->coll[0] = (struct ts_coll_acc){ .op = 1, .bucket = 26, .count = 4, .bytes = 4ull << 26,
					   .time_ns = s->collective_ns };
	s->ncomm = 1;
	s->comm[0] = (struct ts_comm_acc){ .id = 0x5eed0000ull + (uint64_t)job, .count = 4,
					   .nranks = (uint32_t)g->ranks, .bytes = 4ull << 26,
					   .time_ns = s->collective_ns };
	s->ngemm = 1;
	s->gemm[0] = (struct ts_gemm_acc){ .bucket = 40, .count = 64, .time_ns = s->compute_ns,
					   .flops = 64.0 * (1ull << 40) };
	s->launches = 400;
	s->comm_busy_ns = s->collective_ns;
}

/* The step time every rank of the job sees: the slowest rank's compute, and the rest. */
static double job_step_ms(const struct gen *g, uint64_t step)
{
	double worst = 1.0;

	for (int i = 0; i < g->nslow; i++)
		if (g->slow[i].rank < g->ranks && step >= g->slow[i].from && g->slow[i].factor > worst)
			worst = g->slow[i].factor;
	return g->step_ms + 0.6 * g->step_ms * (1 + g->jitter) * (worst - 1.0);
}

/* The rank's batch (s: its step; NULL: its final batch) on its subject, or into its
 * pod's Bundle (sent by pod_done). */
static int publish(struct gen *g, struct tsn *n, int job, int rank, const struct ts_step_sum *s,
		   bool first, bool final)
{
	struct ts_ident id;
	struct ts_batch_hdr h = { .id = &id, .pod_uid = "" };
	char subject[256], leaf[16];
	uint8_t *buf = NULL;
	size_t len = 0;
	uint64_t *seq = &g->seq[(size_t)job * (size_t)g->ranks + (size_t)rank];
	int rc;

	ident(g, job, rank, &id);
	/* unique per job and rank: Nats-Msg-Id is "<producer>-<seq>", and a run that reused
	 * another's ids within the stream's duplicate window would be dropped as resends */
	h.producer_id = ts_fnv1a(id.ns, strlen(id.ns)) ^ ts_mix64(ts_fnv1a(id.job, strlen(id.job))) ^
			((uint64_t)g->seed << 48) ^ ((uint64_t)rank << 8);
	h.seq = ++*seq;
	h.hello = first;
	h.start_real_ns = g->t0;
	h.final = final;
	if ((rc = ts_batch_encode(&h, s, s ? 1 : 0, &buf, &len)))
		return rc;
	g->published++;
	g->bytes += len;
	if (g->wire == TS_WIRE_POD) {
		if (ts_subject(subject, sizeof(subject), id.ns, id.job, "pod", id.pod) < 0) {
			free(buf);
			return -ENAMETOOLONG;
		}
		return ts_bundler_add(&g->bundler, subject, buf, len, s ? 1 : 0);
	}
	snprintf(leaf, sizeof(leaf), "%d", rank);
	if (ts_subject(subject, sizeof(subject), id.ns, id.job, "rank", leaf) < 0)
		rc = -ENAMETOOLONG;
	else
		rc = tsn_publish_seq(n, subject, buf, len, h.producer_id, h.seq);
	free(buf);
	return rc;
}

/* After rank's batch: its pod's Bundle goes once the pod's last rank is in it. */
static int pod_done(struct gen *g, int rank)
{
	if (g->wire != TS_WIRE_POD ||
	    ((rank + 1) % g->ranks_per_node && rank + 1 < g->ranks))
		return 0;
	return ts_bundler_flush(&g->bundler);
}

/* Keeps the outbox small (it drops its oldest past its bound) and paces to --rate. */
static int throttle(struct gen *g, struct tsn *n, uint64_t done_steps, uint64_t began_ns)
{
	struct tsn_stats st;

	tsn_pump(n);
	tsn_get_stats(n, &st);
	if (st.outbox_bytes > 8u << 20 && tsn_flush(n, 60000))
		return -ETIMEDOUT;
	if (g->rate > 0) {
		uint64_t due = began_ns + (uint64_t)((double)done_steps / g->rate * 1e9);
		while (ts_mono_ns() < due) {
			tsn_pump(n);
			struct timespec ts = { 0, 2000000 };
			nanosleep(&ts, NULL); /* pacing to the asked rate */
		}
	}
	return 0;
}

static int run(struct gen *g, struct tsn *n)
{
	struct ts_step_sum s;
	uint64_t began = ts_mono_ns();
	int rc = 0;

	for (uint64_t step = 0; step < g->steps && !rc; step++) {
		if (g->live) { /* published once the step has ended */
			step_sum(g, 0, 0, step, job_step_ms(g, step), &s);
			while (ts_real_ns() < s.end_ns) {
				tsn_pump(n);
				struct timespec ts = { 0, 1000000 };
				nanosleep(&ts, NULL);
			}
		}
		for (int job = 0; job < g->jobs && !rc; job++) {
			double slowest = job_step_ms(g, step);
			for (int rank = 0; rank < g->ranks && !rc; rank++) {
				step_sum(g, job, rank, step, slowest, &s);
				if (!(rc = publish(g, n, job, rank, &s, step == 0, false)))
					rc = pod_done(g, rank);
			}
		}
		if (!rc)
			rc = throttle(g, n, step + 1, began);
		if (!rc && (step + 1) % 50 == 0)
			ts_info("loadgen: %" PRIu64 " of %" PRIu64 " steps, %" PRIu64 " batches",
				step + 1, g->steps, g->published);
	}
	for (int job = 0; job < g->jobs && !rc; job++)
		for (int rank = 0; rank < g->ranks && !rc; rank++)
			if (!(rc = publish(g, n, job, rank, NULL, false, true)))
				rc = pod_done(g, rank);
	return rc;
}

int main(int argc, char **argv)
{
	struct gen g;
	struct tsn *n = NULL;
	struct tsn_stats st;
	int rc;

	if (parse_args(&g, argc, argv))
		return 2;
	g.seq = calloc((size_t)g.jobs * (size_t)g.ranks, sizeof(*g.seq));
	g.start_ms = calloc(g.steps + 1, sizeof(*g.start_ms));
	for (uint64_t k = 0; g.start_ms && k < g.steps; k++)
		g.start_ms[k + 1] = g.start_ms[k] + job_step_ms(&g, k);
	/* the job ran in the past (every span lies before now), or runs now */
	g.t0 = ts_real_ns();
	if (!g.live && g.start_ms)
		g.t0 -= (uint64_t)(g.start_ms[g.steps] * 1e6) + 1000000000ull;
	if (!g.seq || !g.start_ms || tsn_open(&n, &g.nats)) {
		fprintf(stderr, "trainscope-loadgen: cannot start (out of memory or bad NATS options)\n");
		return 2;
	}
	if ((rc = tsn_ensure_stream(n)))
		fprintf(stderr, "trainscope-loadgen: the TRAINSCOPE stream is not there and cannot "
			"be made: is NATS with JetStream at %s?\n", g.nats.url);
	/* one bundler for every pod: its ids new at each run, as a relay's at each start */
	ts_bundler_init(&g.bundler, &(struct ts_bundler_opts){
		.producer_id = ts_mix64(ts_real_ns() ^ (uint64_t)getpid() << 32),
		.max_bytes = ts_bundle_bound(tsn_max_payload(n)), .send = ts_bundle_send_nats, .ctx = n });
	uint64_t began = ts_mono_ns();
	if (!rc && (rc = run(&g, n)))
		fprintf(stderr, "trainscope-loadgen: publishing failed: %s\n", strerror(-rc));
	if (!rc && (rc = tsn_flush(n, 120000)))
		fprintf(stderr, "trainscope-loadgen: JetStream did not acknowledge everything in 120 s\n");
	double secs = (double)(ts_mono_ns() - began) / 1e9;
	tsn_get_stats(n, &st);
	printf("loadgen: %d job(s) x %d ranks x %" PRIu64 " steps: %" PRIu64 " batches in %" PRIu64
	       " messages (--wire %s), %.1f MB, %.1f s (%.0f rank-steps/s); acked %" PRIu64
	       ", dropped %" PRIu64 "\n",
	       g.jobs, g.ranks, g.steps, g.published,
	       g.wire == TS_WIRE_POD ? g.bundler.st.bundles : g.published,
	       g.wire == TS_WIRE_POD ? "pod" : "rank", (double)g.bytes / 1e6, secs,
	       (double)g.jobs * g.ranks * (double)g.steps / (secs > 0 ? secs : 1), st.acked, st.dropped);
	rc = rc || st.dropped || g.bundler.st.lost;
	ts_bundler_free(&g.bundler);
	tsn_close(n);
	free(g.seq);
	free(g.start_ms);
	return rc ? 1 : 0;
}
