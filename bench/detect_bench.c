// SPDX-License-Identifier: Apache-2.0
/* make detect-bench: the analyzer's detection quality on a fixed matrix of synthetic
 * jobs fed straight into its library (analysis/detect/job.h), with the seed of every run
 * fixed. Synchronous steps: each rank works (dataloader, launch, compute, checkpoint),
 * then all meet in one all-reduce that ends when the slowest arrives, so the waiting
 * ranks show the slow one's excess as collective time. Per scenario it prints recall
 * (the faulty rank named), the cause it got, runs that named a false rank, and the
 * detection latency in steps after the onset. The matrix was written before tuning;
 * misses are reported, not dropped. */
#include "detect_bench_impl.h"
#include "analysis/detect/stats.h"
#include "log.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_RUNS 32

static const char *const fault_names[] = { "healthy", "compute", "storage", "host", "network",
					   "hang", "starved" };
static const char *const fault_cause[] = { "", "Compute", "Storage", "HostCPU",
					   "Communication", "", "HostCPU" };

struct outcome {
	bool named, cause_ok, false_rank, failslow;
	bool faint;             /* the fault cost the job under verdict.min_slowdown */
	int latency;            /* steps from onset to naming; -1: never */
	long onset_err;         /* the onset the analyzer dated minus the true one */
	bool culprit_ok, false_net;
	int from;               /* the first step a rank can be named at: the onset, or the
				 * first full window after the warm-up */
	bool lost_valid;
	double lost[3], truth[3]; /* ranks, stages, data: the analyzer's last window, and
				   * the what-ifs replayed over the same steps */
};

/* A hang: the faulty rank stops entering the all-reduce at `onset`; the others' hang
 * watches report it, one by one. */
static void hang(struct ts_job *j, const struct scenario *sc, struct outcome *o, uint64_t now)
{
	int bad = faulty_rank(sc);

	for (int k = 0; k < sc->world; k++)
		if (k != bad)
			ts_job_rank_hang(j, k, "AllReduce", sc->gloo ? 0 : comm_id(0, 0),
					 (uint64_t)sc->onset * 3 + 1, 310 * 1000 * MS, "");
	ts_job_tick(j, now + 400ull * 1000 * MS);
	const struct ts_job_result *r = ts_job_result(j);
	o->culprit_ok = r->state == TS_STATE_HANG && r->nculprits == 1 && r->culprits[0] == bad;
	o->named = o->culprit_ok;
	o->cause_ok = o->culprit_ok;
	o->latency = o->culprit_ok ? 0 : -1;
	for (int i = 0; i < r->nculprits; i++)
		o->false_rank |= r->culprits[i] != bad;
}

/* The network verdict says what the fault was: the job, the node, or the node pair. */
static bool net_right(const struct scenario *sc, const struct ts_net_verdict *v)
{
	char x[64], y[64];

	snprintf(x, sizeof(x), "node-%d", sc->net_node - 1);
	snprintf(y, sizeof(y), "node-%d", sc->net_peer - 1);
	if (!sc->net_node)
		return v->scope == TS_NET_JOB;
	if (!sc->net_peer)
		return v->scope == TS_NET_NODE && !strcmp(v->nodes[0], x);
	return v->scope == TS_NET_LINK && ((!strcmp(v->nodes[0], x) && !strcmp(v->nodes[1], y)) ||
					   (!strcmp(v->nodes[0], y) && !strcmp(v->nodes[1], x)));
}

/* A rank the run may name: the faulty one, or under a node's or link's network fault
 * a rank on that node or link. */
static bool rank_right(const struct scenario *sc, int k, int step)
{
	if (sc->fault == F_NONE || step < sc->onset)
		return false;
	if (sc->fault != F_NETWORK)
		return k == faulty_rank(sc);
	return sc->net_node && (node_of(k) == sc->net_node - 1 ||
				(sc->net_peer && node_of(k) == sc->net_peer - 1));
}

static void judge_step(const struct scenario *sc, const struct ts_job_result *r, int st,
		       struct outcome *o)
{
	const struct ts_net_verdict *v = &r->net;
	bool net = sc->fault == F_NETWORK;

	o->failslow |= r->state == TS_STATE_FAILSLOW;
	if (v->scope != TS_NET_NONE && (!net || st < sc->onset))
		o->false_net = true; /* a network alarm with none to find */
	if (net && v->scope != TS_NET_NONE && st >= sc->onset)
		o->cause_ok = true;
	if (net && !o->named && st >= sc->onset && net_right(sc, v)) {
		o->named = true;
		o->latency = (int)r->last_step - o->from;
		o->onset_err = (long)v->onset_step - sc->onset;
	}
	for (int i = 0; i < r->nslow; i++) {
		const struct ts_slow_rank *s = &r->slow[i];
		if (!rank_right(sc, s->rank, st)) {
			o->false_rank = true;
			continue;
		}
		if (!o->named && !net) {
			o->named = true;
			o->latency = (int)r->last_step - o->from;
			o->onset_err = (long)s->onset_step - sc->onset;
			o->cause_ok = !strcmp(s->cause, fault_cause[sc->fault]);
		}
	}
}

/* The analyzer's lost time at the end against the what-ifs replayed over its window. */
static void lost_truth(const struct ts_job_result *r, double (*cf)[V_COUNT], int steps,
		       struct outcome *o)
{
	const struct ts_lost_time *l = &r->lost;
	double sum = 0, part[3] = { 0, 0, 0 };

	if (!l->valid || l->to_step >= (uint64_t)steps)
		return;
	for (uint64_t s = l->from_step; s <= l->to_step; s++) {
		sum += cf[s][V_ACTUAL];
		part[0] += cf[s][V_ACTUAL] - cf[s][V_NO_FAULT];
		part[2] += cf[s][V_NO_FAULT] - cf[s][V_NO_VAR];
		part[1] += cf[s][V_NO_VAR] - cf[s][V_BALANCED];
	}
	o->lost_valid = sum > 0;
	o->lost[0] = l->ranks, o->lost[1] = l->stages, o->lost[2] = l->data;
	for (int i = 0; i < 3; i++)
		o->truth[i] = sum > 0 ? part[i] / sum : 0;
}

/* What the fault cost the job: its median step from 10 steps after the onset over the
 * same steps' median without the fault, less 1 (real_bench measures a recording's so). */
static double fault_cost(const struct scenario *sc, double (*cf)[V_COUNT], int steps)
{
	static double a[1024], b[1024], tmp[1024];
	int n = 0;

	for (int s = sc->onset + 10; s < steps; s++)
		a[n] = cf[s][V_ACTUAL], b[n++] = cf[s][V_NO_FAULT];
	double base = n ? ts_median(b, (size_t)n, tmp) : 0;
	return base > 0 ? ts_median(a, (size_t)n, tmp) / base - 1 : 0;
}

static int run_one(const struct scenario *sc, const struct ts_params *base, uint64_t seed,
		   struct outcome *o)
{
	static struct topo t;
	static double cf[1024][V_COUNT], clock[MAX_WORLD];
	struct ts_params p;
	struct ts_job *j;
	int steps = sc->fault == F_HANG ? sc->onset : sc->steps;
	uint64_t now = 0;

	memset(o, 0, sizeof(*o));
	o->latency = -1;
	p = *base;
	o->from = sc->onset > p.fs.task_stable_step + p.space_window ?
		sc->onset : p.fs.task_stable_step + p.space_window;
	if (steps > 1024 || ts_job_new(&j, "bench", sc->name, sc->world, &p))
		return -ENOMEM;
	sim_topo_init(&t, sc);
	sim_groups(j, sc, &t);
	memset(clock, 0, sizeof(clock));
	for (int st = 0; st < steps; st++) {
		now = 1000000 * MS + (uint64_t)(sim_feed(j, sc, &t, st, &seed, cf[st], clock) * MS);
		ts_job_tick(j, now);
		judge_step(sc, ts_job_result(j), st, o);
	}
	lost_truth(ts_job_result(j), cf, steps, o);
	/* the floors' contract (verdict.*): a fault the job hardly felt is not named */
	o->faint = p.verdict.wait_floor > 0 && sc->fault != F_NONE && sc->fault != F_HANG &&
		   fault_cost(sc, cf, steps) < p.verdict.min_slowdown;
	if (sc->fault == F_HANG)
		hang(j, sc, o, now);
	ts_job_free(j);
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* "a (t)": the analyzer's mean share against the truth's, in percent. */
static void lost_cell(const struct outcome *o, int n, int i)
{
	double a = 0, t = 0;
	int got = 0;

	for (int r = 0; r < n; r++)
		if (o[r].lost_valid)
			a += o[r].lost[i], t += o[r].truth[i], got++;
	if (got)
		printf("%4.1f (%4.1f) | ", 100 * a / got, 100 * t / got);
	else
		printf("         - | ");
}

/* The whole matrix's runs, for the summary: fault runs found and missed, faint or not. */
struct tally {
	int runs, found, faint, faint_found, healthy, healthy_named;
};

static void report(const struct scenario *sc, const struct outcome *o, int n, double secs,
		   struct tally *t)
{
	int named = 0, cause = 0, falses = 0, fnet = 0, slow = 0, lat[MAX_RUNS], nl = 0, faint = 0;
	long onset_err = 0;
	char size[16] = "-";

	for (int i = 0; i < n; i++) {
		named += o[i].named, falses += o[i].false_rank, fnet += o[i].false_net;
		slow += o[i].failslow, faint += o[i].faint;
		cause += (o[i].named || sc->fault == F_NETWORK) && o[i].cause_ok;
		bool ok = o[i].named && o[i].cause_ok && !o[i].false_rank;
		if (sc->fault == F_NONE)
			t->healthy++, t->healthy_named += o[i].false_rank || o[i].false_net;
		else if (o[i].faint)
			t->faint++, t->faint_found += ok;
		else
			t->runs++, t->found += ok;
		if (o[i].latency >= 0)
			lat[nl++] = o[i].latency, onset_err += labs(o[i].onset_err);
	}
	qsort(lat, (size_t)nl, sizeof(int), cmp_int);
	if (sc->fault != F_NONE && sc->fault != F_HANG)
		snprintf(size, sizeof(size), "%.0f%%", 100 * sc->size);
	bool faulty = sc->fault != F_NONE;
	printf("| %-34s | %5d | %-8s | %5s | %4d | ", sc->name, sc->world, fault_names[sc->fault],
	       size, n);
	if (faulty)
		printf("%4.2f | %4.2f | ", (double)named / n,
		       sc->fault == F_NETWORK ? (double)cause / n : named ? (double)cause / named : 0);
	else
		printf("   - |    - | ");
	if (faulty) /* a slow rank makes the job fail-slow: said for healthy jobs only */
		printf("%3d | %3d |   - | ", falses, fnet);
	else
		printf("%3d | %3d | %3d | ", falses, fnet, slow);
	if (nl && sc->fault != F_HANG)
		printf("%3d | %3d | %4.1f | ", lat[nl / 2], lat[(nl * 9) / 10 < nl ? (nl * 9) / 10 : nl - 1],
		       (double)onset_err / nl);
	else
		printf("  - |   - |    - | ");
	for (int i = 0; i < 3; i++)
		lost_cell(o, n, i);
	printf("%3d | %5.1f |\n", faint, secs);
	fflush(stdout);
}

#define HEALTHY(nm, w, lay, stg, ext, ck, wide, runs) \
	{ nm, w, lay, stg, ext, F_NONE, 0, PERSISTENT, 200, 0, 400, runs, 0.02, ck, wide, 0, 0 }
#define FAULT(nm, w, lay, stg, ext, f, sz, shp, on, dur, runs) \
	{ nm, w, lay, stg, ext, f, sz, shp, on, dur, 300, runs, 0.02, 0, 0, 0, 0 }
#define NOISY(nm, w, f, sz, jit, rate, spike, runs) \
	{ nm, w, NULL, 1, 0, f, sz, PERSISTENT, 100, 0, 400, runs, jit, 0, 0, rate, spike }
/* the layout run but not announced: peers learned from the communicators */
#define HEALTHY_C(nm, w, lay, stg, ext, runs) \
	{ nm, w, lay, stg, ext, F_NONE, 0, PERSISTENT, 200, 0, 400, runs, 0.02, 0, 0, 0, 0, 0, 0, true }
#define FAULT_C(nm, w, lay, stg, ext, f, sz, runs) \
	{ nm, w, lay, stg, ext, f, sz, PERSISTENT, 100, 0, 300, runs, 0.02, 0, 0, 0, 0, 0, 0, true }
/* node, peer: 0 job-wide; else node n - 1's network, or the link between two nodes */
#define NET(nm, w, lay, sz, node, peer, runs) \
	{ nm, w, lay, 1, 0, F_NETWORK, sz, PERSISTENT, 100, 0, 300, runs, 0.02, 0, 0, 0, 0, node, peer }

/* The knobs added for issue 33, named: layout, stages, extra, fault, size, onset, every,
 * seqvar, agent, silent (communicators only) */
#define SC(nm, w, lay, stg, ext, f, sz, on, ev, sv, ag, sil, n)                             \
	{ .name = nm, .world = w, .layout = lay, .stages = stg, .stage_extra = ext, .fault = f, \
	  .size = sz, .shape = PERSISTENT, .onset = on, .steps = f == F_NONE ? 400 : 300,      \
	  .runs = n, .jitter = 0.02, .every = ev, .seqvar = sv, .agent = ag, .silent = sil }

static const struct scenario matrix[] = {
	HEALTHY("healthy", 16, NULL, 1, 0, 0, 0, 20),
	HEALTHY("healthy", 64, NULL, 1, 0, 0, 0, 10),
	HEALTHY("healthy", 1024, NULL, 1, 0, 0, 0, 3),
	HEALTHY("healthy, checkpoint every 50", 64, NULL, 1, 0, 50, 0, 10),
	HEALTHY("healthy, job-wide 30% slower", 64, NULL, 1, 0, 0, 0.3, 10),
	NOISY("healthy, 5% jitter", 64, F_NONE, 0, 0.05, 0, 0, 10),
	NOISY("healthy, 1% of steps +30% (pauses)", 64, F_NONE, 0, 0.02, 0.01, 0.3, 10),
	NOISY("healthy, 5% of steps +100% (pauses)", 64, F_NONE, 0, 0.02, 0.05, 1.0, 10),
	HEALTHY("pp4-dp4, last stage +25%", 16, "pp4-dp4", 4, 0.25, 0, 0, 20),
	HEALTHY("tp2-pp4-dp8, last stage +25%", 64, "tp2-pp4-dp8", 4, 0.25, 0, 0, 10),
	HEALTHY_C("pp4-dp4, +25%, communicators only", 16, "pp4-dp4", 4, 0.25, 10),
	HEALTHY_C("tp2-pp4-dp8, +25%, communicators only", 64, "tp2-pp4-dp8", 4, 0.25, 10),
	FAULT("compute 3%", 16, NULL, 1, 0, F_COMPUTE, 0.03, PERSISTENT, 100, 0, 20),
	FAULT("compute 5%", 16, NULL, 1, 0, F_COMPUTE, 0.05, PERSISTENT, 100, 0, 20),
	FAULT("compute 5%", 64, NULL, 1, 0, F_COMPUTE, 0.05, PERSISTENT, 100, 0, 20),
	FAULT("compute 10%", 16, NULL, 1, 0, F_COMPUTE, 0.10, PERSISTENT, 100, 0, 20),
	FAULT("compute 10%", 64, NULL, 1, 0, F_COMPUTE, 0.10, PERSISTENT, 100, 0, 20),
	FAULT("compute 10%", 1024, NULL, 1, 0, F_COMPUTE, 0.10, PERSISTENT, 100, 0, 3),
	NOISY("compute 10%, 5% jitter", 16, F_COMPUTE, 0.10, 0.05, 0, 0, 20),
	NOISY("compute 10%, 1% of steps +30%", 64, F_COMPUTE, 0.10, 0.02, 0.01, 0.3, 10),
	FAULT("compute 20%", 16, NULL, 1, 0, F_COMPUTE, 0.20, PERSISTENT, 100, 0, 20),
	FAULT("compute 50%", 16, NULL, 1, 0, F_COMPUTE, 0.50, PERSISTENT, 100, 0, 20),
	FAULT("compute 10% from step 0", 16, NULL, 1, 0, F_COMPUTE, 0.10, PERSISTENT, 0, 0, 20),
	FAULT("compute 20% for 10 steps", 16, NULL, 1, 0, F_COMPUTE, 0.20, TRANSIENT, 100, 10, 20),
	FAULT("compute to 20% over 100 steps", 16, NULL, 1, 0, F_COMPUTE, 0.20, GRADUAL, 100, 100, 20),
	FAULT("storage 10%", 16, NULL, 1, 0, F_STORAGE, 0.10, PERSISTENT, 100, 0, 20),
	FAULT("storage 30%", 64, NULL, 1, 0, F_STORAGE, 0.30, PERSISTENT, 100, 0, 10),
	FAULT("host 10%", 16, NULL, 1, 0, F_HOST, 0.10, PERSISTENT, 100, 0, 20),
	FAULT("host 30%", 64, NULL, 1, 0, F_HOST, 0.30, PERSISTENT, 100, 0, 10),
	FAULT("pp4-dp4: compute 10% in a stage", 16, "pp4-dp4", 4, 0.25, F_COMPUTE, 0.10, PERSISTENT, 100, 0, 20),
	FAULT("tp2-pp4-dp8: compute 5% in a stage", 64, "tp2-pp4-dp8", 4, 0.25, F_COMPUTE, 0.05, PERSISTENT, 100, 0, 10),
	FAULT_C("pp4-dp4: compute 10% in a stage, communicators only", 16, "pp4-dp4", 4, 0.25,
		F_COMPUTE, 0.10, 20),
	FAULT_C("tp2-pp4-dp8: compute 5% in a stage, communicators only", 64, "tp2-pp4-dp8", 4,
		0.25, F_COMPUTE, 0.05, 10),
	FAULT("pp4-dp1: compute 10% (no peer)", 4, "pp4-dp1", 4, 0.25, F_COMPUTE, 0.10, PERSISTENT, 100, 0, 20),
	HEALTHY("tp8-pp2-dp4 on 8 nodes", 64, "tp8-pp2-dp4", 1, 0, 0, 0, 10),
	FAULT("tp8-pp2-dp4: compute 10%", 64, "tp8-pp2-dp4", 1, 0, F_COMPUTE, 0.10, PERSISTENT, 100, 0, 10),
	NET("network 30% job-wide", 16, NULL, 0.30, 0, 0, 10),
	NET("tp8-pp2-dp4: network 30% job-wide", 64, "tp8-pp2-dp4", 0.30, 0, 0, 10),
	NET("tp8-pp2-dp4: node 3's network 10%", 64, "tp8-pp2-dp4", 0.10, 4, 0, 10),
	NET("tp8-pp2-dp4: node 3's network 30%", 64, "tp8-pp2-dp4", 0.30, 4, 0, 10),
	NET("tp8-pp2-dp4: link node 2 - 3 30%", 64, "tp8-pp2-dp4", 0.30, 3, 4, 10),
	NET("one communicator: node 1's network 30%", 16, NULL, 0.30, 2, 0, 10),
	NET("tp8-pp4-dp32: node 77's network 30%", 1024, "tp8-pp4-dp32", 0.30, 78, 0, 3),
	SC("storage +250% every other step", 2, NULL, 1, 0, F_STORAGE, 2.5, 100, 2, 0, false, false, 10),
	SC("storage +250% every other step", 16, NULL, 1, 0, F_STORAGE, 2.5, 100, 2, 0, false, false, 10),
	SC("host-starved, device estimate grows", 2, NULL, 1, 0, F_STARVED, 0.6, 100, 0, 0, true, false, 10),
	SC("host-starved, device estimate grows", 16, NULL, 1, 0, F_STARVED, 0.6, 100, 0, 0, true, false, 10),
	SC("compute 5% from step 0", 16, NULL, 1, 0, F_COMPUTE, 0.05, 0, 0, 0, false, false, 20),
	SC("pp4-dp4: compute 135% from step 0", 16, "pp4-dp4", 4, 0, F_COMPUTE, 1.35, 0, 0, 0, false, false, 10),
	SC("pp4-dp2, last stage +62%", 8, "pp4-dp2", 4, 0.62, F_NONE, 0, 200, 0, 0, false, false, 10),
	SC("pp4-dp2, last stage +62%, communicators only", 8, "pp4-dp2", 4, 0.62, F_NONE, 0, 200, 0, 0, false, true, 10),
	SC("pp2-dp32: sequence imbalance 15%", 64, "pp2-dp32", 2, 0, F_NONE, 0, 200, 0, 0.15, false, false, 10),
	SC("pp2-dp32: sequence imbalance 15%, communicators only", 64, "pp2-dp32", 2, 0, F_NONE, 0, 200, 0, 0.15, false, true, 10),
	SC("pp2-dp32: sequence imbalance 15% + compute 10%", 64, "pp2-dp32", 2, 0, F_COMPUTE, 0.10, 100, 0, 0.15, false, false, 10),
	SC("pp4-dp2, last stage +62% + sequence imbalance 15%", 8, "pp4-dp2", 4, 0.62, F_NONE, 0, 200, 0, 0.15, false, false, 10),
	{ .name = "tp8-pp2-dp4: link node 2 - 3 30%, sequence imbalance 15%", .world = 64,
	  .layout = "tp8-pp2-dp4", .stages = 1, .fault = F_NETWORK, .size = 0.30, .onset = 100,
	  .steps = 300, .runs = 10, .jitter = 0.02, .net_node = 3, .net_peer = 4, .seqvar = 0.15 },
	{ .name = "pp4-dp4, last stage +25%, nothing announced", .world = 16, .layout = "pp4-dp4",
	  .stages = 4, .stage_extra = 0.25, .fault = F_NONE, .onset = 200, .steps = 400, .runs = 10,
	  .jitter = 0.02, .silent = true, .gloo = true },
	{ .name = "compute 30%, its transfers 30% slower (shared GPU)", .world = 16, .stages = 1,
	  .fault = F_COMPUTE, .size = 0.30, .onset = 100, .steps = 300, .runs = 10,
	  .jitter = 0.02, .shared_gpu = true },
	{ .name = "tp8-pp2-dp4: compute 30%, its transfers 30% slower", .world = 64,
	  .layout = "tp8-pp2-dp4", .stages = 1, .fault = F_COMPUTE, .size = 0.30, .onset = 100,
	  .steps = 300, .runs = 10, .jitter = 0.02, .shared_gpu = true },
	{ .name = "pp4-dp4, +25%, nothing announced: compute 10% in a stage", .world = 16,
	  .layout = "pp4-dp4", .stages = 4, .stage_extra = 0.25, .fault = F_COMPUTE, .size = 0.10,
	  .onset = 100, .steps = 300, .runs = 10, .jitter = 0.02, .silent = true, .gloo = true },
	{ .name = "nothing announced: compute 20% from step 0", .world = 16, .stages = 1,
	  .fault = F_COMPUTE, .size = 0.20, .onset = 0, .steps = 300, .runs = 10, .jitter = 0.02,
	  .gloo = true },
	FAULT("hang: one rank never enters", 8, NULL, 1, 0, F_HANG, 0, PERSISTENT, 60, 0, 5),
	{ .name = "hang, gloo: one rank never enters", .world = 8, .stages = 1, .fault = F_HANG,
	  .onset = 60, .steps = 300, .runs = 5, .jitter = 0.02, .gloo = true },
	FAULT("hang: one rank never enters", 1024, NULL, 1, 0, F_HANG, 0, PERSISTENT, 60, 0, 2),
};

static void usage(FILE *f)
{
	fprintf(f, "usage: detect_bench [--quick] [--filter TEXT] [--config FILE]\n"
		   "  Runs the analyzer's detection matrix (synthetic jobs, fixed seeds) and prints\n"
		   "  recall, cause, false-rank runs and detection latency (steps after the onset).\n"
		   "  --quick        at most 3 runs a scenario, worlds up to 64\n"
		   "  --filter TEXT  only scenarios whose name contains TEXT\n"
		   "  --config FILE  the analyzer's configuration (as trainscope-analyzer --config\n"
		   "                 takes it) instead of its defaults; TRAINSCOPE_ANALYZER_*\n"
		   "                 variables apply as they do to the analyzer\n"
		   "  Exit status 1 when a healthy scenario named a rank.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "quick", no_argument, 0, 'q' },
					      { "filter", required_argument, 0, 'f' },
					      { "config", required_argument, 0, 'c' },
					      { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
	const char *filter = NULL, *config = NULL;
	bool quick = false, false_alarm = false;
	struct tally tally = { 0 };
	struct ts_params base;
	char err[256];
	int c;

	while ((c = getopt_long(argc, argv, "qf:c:h", opts, NULL)) != -1) {
		if (c == 'q')
			quick = true;
		else if (c == 'f')
			filter = optarg;
		else if (c == 'c')
			config = optarg;
		else {
			usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	setenv("TRAINSCOPE_LOG", "warn", 0);
	ts_log_init("detect-bench");
	ts_params_defaults(&base);
	if (ts_params_load(&base, config, config ? NULL : "", err, sizeof(err))) {
		fprintf(stderr, "detect_bench: %s\n", err);
		return 2;
	}
	base.hang_timeout_s = 300; /* the simulated clock's steps, not the analyzer's default */
	printf("| scenario | ranks | fault | size | runs | recall | cause ok | false-rank runs | "
	       "false-network runs | fail-slow runs | median steps | p90 steps | onset error | lost: ranks %% "
	       "(truth) | stages %% (truth) | variation %% (truth) | faint runs | seconds |\n");
	printf("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (size_t i = 0; i < sizeof(matrix) / sizeof(matrix[0]); i++) {
		const struct scenario *sc = &matrix[i];
		struct outcome o[MAX_RUNS];
		int runs = quick && sc->runs > 3 ? 3 : sc->runs;
		struct timespec a, b;
		if ((filter && !strstr(sc->name, filter)) || (quick && sc->world > 64))
			continue;
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (int r = 0; r < runs; r++)
			if (run_one(sc, &base, 1000u + (uint64_t)r * 7919u, &o[r])) {
				fprintf(stderr, "detect_bench: out of memory\n");
				return 2;
			}
		clock_gettime(CLOCK_MONOTONIC, &b);
		report(sc, o, runs, (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9,
		       &tally);
		for (int r = 0, said = 0; r < runs && sc->fault == F_NONE; r++)
			if ((o[r].false_rank || o[r].false_net) && !said++) {
				fprintf(stderr, "detect_bench: healthy scenario '%s' (%d ranks) named "
					"a rank\n", sc->name, sc->world);
				false_alarm = true;
			}
	}
	printf("\nfault runs: %d of %d with the right rank and cause; faint (the job slowed under "
	       "verdict.min_slowdown, not counted): %d of %d found; healthy runs: %d of %d with "
	       "nothing named\n", tally.found, tally.runs, tally.faint_found, tally.faint,
	       tally.healthy - tally.healthy_named, tally.healthy);
	return false_alarm ? 1 : 0;
}
