// SPDX-License-Identifier: Apache-2.0
/* make detect-bench: the analyzer's detection quality on a fixed matrix of synthetic
 * jobs fed straight into its library (analysis/job.h), with the seed of every run
 * fixed. Synchronous steps: each rank works (dataloader, launch, compute, checkpoint),
 * then all meet in one all-reduce that ends when the slowest arrives, so the waiting
 * ranks show the slow one's excess as collective time. Per scenario it prints recall
 * (the faulty rank named), the cause it got, runs that named a false rank, and the
 * detection latency in steps after the onset. The matrix was written before tuning;
 * misses are reported, not dropped. */
#include "analysis/job.h"
#include "analysis/peers.h"
#include "log.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MS 1000000ull
#define MAX_RUNS 32

enum fault { F_NONE, F_COMPUTE, F_STORAGE, F_HOST, F_NETWORK, F_HANG, F_STARVED };
static const char *const fault_names[] = { "healthy", "compute", "storage", "host", "network",
					   "hang", "starved" };
static const char *const fault_cause[] = { "", "Compute", "Storage", "HostCPU",
					   "Communication", "", "HostCPU" };
static const int fault_metric[] = { -1, TS_M_COMPUTE, TS_M_DATALOADER, TS_M_LAUNCH, -1, -1, -1 };

enum shape { PERSISTENT, TRANSIENT, GRADUAL };

struct scenario {
	const char *name;
	int world;
	const char *layout;     /* TRAINSCOPE_GROUPS the ranks run (and announce); NULL: none */
	int stages;             /* pipeline stages by rank / (world / stages); last heavier */
	double stage_extra;     /* the last stage's extra work by design */
	enum fault fault;
	double size;            /* the faulty rank's work grows by this share */
	enum shape shape;
	int onset, duration;    /* transient: steps; gradual: steps to full size */
	int steps, runs;
	double jitter;          /* per-step noise (sd, share) of every rank's work */
	int ckpt_every;         /* all ranks checkpoint every N steps (0: never) */
	double jobwide;         /* the whole job slows by this share from `onset` */
	double spike_rate;      /* share of rank-steps a pause (GC, page faults) hits */
	double spike_size;      /* ... making that rank's work this much longer */
	int net_node, net_peer; /* network: 0 job-wide, else node n - 1's NIC (and peer:
				 * the link between them) transfers `size` slower */
	bool silent;            /* the ranks run `layout` but announce only communicators */
	int every;              /* the fault hits every N-th step only (loader workers that
				 * alternate); 0: every step */
	double seqvar;          /* per-step work of each replica varies by this share (sd):
				 * sequence-length imbalance, moving among replicas */
	bool agent;             /* the node agent reports run-queue delay (a starved rank's
				 * preemptor too) */
	bool gloo;              /* no communicator is announced (gloo, a custom barrier) */
	bool shared_gpu;        /* the faulty rank's communicators' transfers slow with its
				 * compute (another process on its GPU runs NCCL's kernels
				 * slower too): still one cause */
};

struct outcome {
	bool named, cause_ok, false_rank, failslow;
	int latency;            /* steps from onset to naming; -1: never */
	long onset_err;         /* the onset the analyzer dated minus the true one */
	bool culprit_ok, false_net;
	int from;               /* the first step a rank can be named at: the onset, or the
				 * first full window after the warm-up */
	bool lost_valid;
	double lost[3], truth[3]; /* ranks, stages, data: the analyzer's last window, and
				   * the what-ifs replayed over the same steps */
};

/* splitmix64: rand_r's 32-bit LCG repeats itself at power-of-two lags, and a rank's
 * draws are world * 8 calls apart, which made 1,024-rank noise autocorrelated. */
static double uniform(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

static double gauss(uint64_t *seed)
{
	return sqrt(-2 * log(uniform(seed))) * cos(2 * M_PI * uniform(seed));
}

static double fault_now(const struct scenario *sc, int step)
{
	if (sc->fault == F_NONE || sc->fault == F_HANG || step < sc->onset)
		return 0;
	if (sc->shape == TRANSIENT && step >= sc->onset + sc->duration)
		return 0;
	if (sc->every > 1 && step % sc->every)
		return 0;
	if (sc->shape == GRADUAL && step < sc->onset + sc->duration)
		return sc->size * (step - sc->onset + 1) / sc->duration;
	return sc->size;
}

static int faulty_rank(const struct scenario *sc)
{
	return sc->world / 2 + 1 < sc->world ? sc->world / 2 + 1 : 0;
}

/* The rank's pipeline stage: its pp coordinate under the layout the ranks announce,
 * else contiguous blocks of ranks. */
static int stage_of(const struct scenario *sc, int k)
{
	struct ts_layout l;
	char err[128];
	int stage;

	if (sc->stages <= 1)
		return 0;
	if (!sc->layout || ts_layout_parse(&l, sc->layout, err, sizeof(err)))
		return k / (sc->world / sc->stages);
	stage = ts_layout_coord(&l, k, "pp");
	return stage < 0 ? 0 : stage;
}

/* Communicators: one per group of each layout dimension (the ranks that differ only in
 * it), or one over all ranks with no layout; ranks fill nodes of RANKS_PER_NODE. A step
 * runs them in order, each a blocking collective: it ends for all its members when the
 * last has entered, plus its transfer time. */
#define RANKS_PER_NODE 8
#define MAX_WORLD 4096

struct topo {
	int nd, size[TS_LAYOUT_MAX_DIMS], stride[TS_LAYOUT_MAX_DIMS];
	bool p2p[TS_LAYOUT_MAX_DIMS]; /* pipeline neighbours send and receive */
	bool slow[TS_LAYOUT_MAX_DIMS][MAX_WORLD]; /* [dim][group key] under the fault */
	double done[TS_LAYOUT_MAX_DIMS][MAX_WORLD];
};

static int node_of(int k)
{
	return k / RANKS_PER_NODE;
}

static int group_key(const struct topo *t, int d, int k)
{
	return k - (k / t->stride[d] % t->size[d]) * t->stride[d];
}

static uint64_t comm_id(int d, int key)
{
	return 0xc0ffee0000000000ull | (uint64_t)(d + 1) << 32 | (uint32_t)key;
}

/* The fault's communicators: those across nodes (job-wide), through the node, or
 * between the two nodes. */
static bool net_hit(const struct scenario *sc, const struct topo *t, int d, int key)
{
	bool x = false, y = false, across = false;

	for (int i = 0; i < t->size[d]; i++) {
		int n = node_of(key + i * t->stride[d]);
		across |= n != node_of(key);
		x |= n == sc->net_node - 1, y |= n == sc->net_peer - 1;
	}
	if (!sc->net_node)
		return across;
	return sc->net_peer ? x && y : x && across;
}

static void topo_init(struct topo *t, const struct scenario *sc)
{
	struct ts_layout l;
	char err[128];

	memset(t, 0, sizeof(*t));
	if (sc->layout && !ts_layout_parse(&l, sc->layout, err, sizeof(err))) {
		for (int d = 0, stride = 1; d < l.ndims; stride *= l.size[d], d++)
			if (l.size[d] > 1)
				t->p2p[t->nd] = !strcmp(l.name[d], "pp"),
				t->size[t->nd] = l.size[d], t->stride[t->nd++] = stride;
	} else {
		t->nd = 1, t->size[0] = sc->world, t->stride[0] = 1;
	}
	for (int d = 0; d < t->nd; d++)
		for (int k = 0; k < sc->world; k++)
			if (group_key(t, d, k) == k)
				t->slow[d][k] = sc->fault == F_NETWORK && net_hit(sc, t, d, k);
}

/* A step's draws for one rank, so that the what-ifs (truth) replay the same step. */
struct draw {
	double noise[3];   /* dataloader, launch, compute */
	double spike, ckpt, var; /* a pause's extra share, the checkpoint, the replica's
				  * per-step work factor (sequence length) */
};

enum variant { V_ACTUAL, V_NO_FAULT, V_NO_VAR, V_BALANCED, V_COUNT };
static const double dl_ms = 4, launch_ms = 3, compute_ms = 60, ckpt_ms = 120, coll_ms = 12;

/* The replica a rank is in: its dp coordinate, else itself. */
static int replica_of(const struct scenario *sc, int k)
{
	struct ts_layout l;
	char err[128];
	int dp;

	if (!sc->layout || ts_layout_parse(&l, sc->layout, err, sizeof(err)))
		return k;
	dp = ts_layout_coord(&l, k, "dp");
	return dp < 0 ? k : dp;
}

/* Rank k's phases (ms) in a step under a what-if: each variant drops what the one
 * before it dropped too (the fault, then per-step variation, then stage imbalance). */
static void phases(const struct scenario *sc, int k, int step, const struct draw *d,
		   enum variant v, double ph[4])
{
	int stage = stage_of(sc, k);
	double extra = v >= V_BALANCED ? sc->stage_extra / (sc->stages > 1 ? sc->stages : 1)
		     : stage == sc->stages - 1 ? sc->stage_extra : 0;
	double wide = step >= sc->onset ? 1 + sc->jobwide : 1;
	double work = (1 + extra) * wide * (v >= V_NO_VAR ? 1 : d->var);
	double f = v >= V_NO_FAULT || k != faulty_rank(sc) ? 0 : fault_now(sc, step);
	bool var = v < V_NO_VAR;

	ph[0] = dl_ms * work * (1 + (var ? d->noise[0] : 0));
	ph[1] = launch_ms * work * (1 + (var ? d->noise[1] : 0));
	ph[2] = compute_ms * work * (1 + (var ? d->noise[2] : 0) + (var ? d->spike : 0));
	ph[3] = d->ckpt;
	if (f > 0 && sc->fault == F_STARVED) { /* the device waits for the host: both grow */
		ph[2] += 0.7 * f * (dl_ms + launch_ms + compute_ms) * work;
		ph[1] += 0.3 * f * (dl_ms + launch_ms + compute_ms) * work;
	} else if (f > 0 && fault_metric[sc->fault] >= 0) {
		ph[fault_metric[sc->fault] == TS_M_DATALOADER ? 0 : fault_metric[sc->fault] ==
		   TS_M_LAUNCH ? 1 : 2] += f * (dl_ms + launch_ms + compute_ms) * work;
	}
}

/* The communicators in order, from each rank's busy time at[]: each ends when its last
 * member entered, plus its transfer tr[d][key]. rs (may be NULL) gets each rank's
 * time per communicator. Returns the step's end (ms). */
static double comms(const struct scenario *sc, const struct topo *t, double *at,
		    double tr[][MAX_WORLD], struct ts_rank_step *rs)
{
	static double done[TS_LAYOUT_MAX_DIMS][MAX_WORLD];
	double end = 0;

	for (int d = 0; d < t->nd; d++) {
		for (int k = 0; k < sc->world; k++)
			done[d][group_key(t, d, k)] = 0;
		for (int k = 0; k < sc->world; k++) {
			double *g = &done[d][group_key(t, d, k)];
			*g = fmax(*g, at[k]);
		}
		for (int k = 0; k < sc->world; k++)
			if (group_key(t, d, k) == k)
				done[d][k] += tr[d][k];
		for (int k = 0; k < sc->world; k++) {
			double e = done[d][group_key(t, d, k)];
			if (rs) {
				struct ts_rank_step *r = &rs[k];
				r->comm[r->ncomm++] = (struct ts_comm_time){
					.id = sc->gloo ? 0 : comm_id(d, group_key(t, d, k)),
					.nranks = (uint32_t)t->size[d], .count = 1, .p2p = t->p2p[d],
					.ms = e - at[k], .mb = 64 };
				r->m[TS_M_COLLECTIVE] += e - at[k];
			}
			at[k] = e;
		}
	}
	for (int k = 0; k < sc->world; k++)
		end = fmax(end, at[k]);
	return end;
}

/* What the node agent says of each rank: its run-queue delay, and the starved rank's
 * preemptor. */
static void agent(struct ts_job *j, const struct scenario *sc, int step, uint64_t t_ns,
		  uint64_t *seed)
{
	for (int k = 0; k < sc->world; k++) {
		struct ts_host_view v = { .valid = true, .time_ns = t_ns };
		bool starved = k == faulty_rank(sc) && fault_now(sc, step) > 0;
		v.runq_ms_per_s = 2 * (1 + 0.3 * fabs(gauss(seed))) + (starved ? 1100 : 0);
		v.offcpu_ms_per_s = 50 * (1 + 0.05 * gauss(seed));
		v.oncpu_ms_per_s = 950;
		if (starved)
			snprintf(v.top_comm, sizeof(v.top_comm), "stress-ng"), v.top_pid = 4242,
			v.top_ms_per_s = 1100;
		ts_job_host_view(j, k, &v);
	}
}

/* One step of every rank into the job; its step time under each what-if into cf (each
 * from all ranks starting together). In the job the ranks run on from where each
 * ended its last step: one that ended early waits for the others in the step's first
 * collective, as in a real synchronous job, so a late rank costs every rank's step.
 * clock[] holds each rank's time (ms); returns the step's last end. */
static double feed(struct ts_job *j, const struct scenario *sc, const struct topo *t, int step,
		   uint64_t *seed, double cf[V_COUNT], double *clock)
{
	static struct ts_rank_step rs[MAX_WORLD];
	static struct draw dr[MAX_WORLD];
	static double at[MAX_WORLD], rvar[MAX_WORLD], tr[TS_LAYOUT_MAX_DIMS][MAX_WORLD];
	double f = fault_now(sc, step), ph[4], last;
	const uint64_t t0 = 1000000 * MS;

	for (int k = 0; k < sc->world; k++) /* a replica's sequences are its own */
		rvar[k] = sc->seqvar > 0 ? fmax(0.5, 1 + sc->seqvar * gauss(seed)) : 1;
	for (int k = 0; k < sc->world; k++) {
		struct draw *d = &dr[k];
		for (int i = 0; i < 3; i++)
			d->noise[i] = sc->jitter * gauss(seed);
		d->spike = sc->spike_rate > 0 && uniform(seed) < sc->spike_rate ? sc->spike_size : 0;
		d->ckpt = sc->ckpt_every && step % sc->ckpt_every == 0 ?
			ckpt_ms * (1 + sc->jitter * gauss(seed)) : 0;
		d->var = rvar[replica_of(sc, k)];
	}
	for (int d = 0; d < t->nd; d++)
		for (int k = 0; k < sc->world; k++)
			if (group_key(t, d, k) == k) {
				double x = coll_ms / t->nd * (1 + sc->jitter * gauss(seed));
				bool slow = t->slow[d][k] || (sc->shared_gpu &&
					group_key(t, d, faulty_rank(sc)) == k);
				tr[d][k] = slow && f > 0 ? x * (1 + f) : x;
			}
	for (int v = V_COUNT - 1; v >= 0; v--) {
		for (int k = 0; k < sc->world; k++) {
			phases(sc, k, step, &dr[k], (enum variant)v, ph);
			at[k] = ph[0] + ph[1] + ph[2] + ph[3];
		}
		cf[v] = comms(sc, t, at, tr, NULL);
	}
	for (int k = 0; k < sc->world; k++) {
		struct ts_rank_step *r = &rs[k];
		phases(sc, k, step, &dr[k], V_ACTUAL, ph);
		memset(r, 0, sizeof(*r));
		r->step = (uint64_t)step;
		r->m[TS_M_DATALOADER] = ph[0], r->m[TS_M_LAUNCH] = ph[1];
		r->m[TS_M_COMPUTE] = ph[2], r->m[TS_M_CHECKPOINT] = ph[3];
		r->start_ns = t0 + (uint64_t)(clock[k] * MS);
		at[k] = clock[k] + ph[0] + ph[1] + ph[2] + ph[3];
	}
	last = comms(sc, t, at, tr, rs);
	if (sc->agent)
		agent(j, sc, step, t0 + (uint64_t)(last * MS), seed);
	for (int k = 0; k < sc->world; k++) {
		rs[k].end_ns = t0 + (uint64_t)(at[k] * MS);
		clock[k] = at[k];
		ts_job_add_step(j, k, sc->world, &rs[k]);
	}
	return last;
}

/* What each rank's relay says in its Hello: the layout and its communicators; and the
 * node it runs on. */
static void groups(struct ts_job *j, const struct scenario *sc, const struct topo *t)
{
	char lay[80], comm[TS_LAYOUT_MAX_DIMS][80];
	const char *g[TS_LAYOUT_MAX_DIMS + 1];

	snprintf(lay, sizeof(lay), "layout:%s", sc->layout ? sc->layout : "");
	for (int k = 0; k < sc->world; k++) {
		int n = 0;
		for (int d = 0; d < t->nd && !sc->gloo; d++) {
			int key = group_key(t, d, k);
			snprintf(comm[d], sizeof(comm[d]), "nccl:%llx:%d:%d",
				 (unsigned long long)comm_id(d, key), t->size[d],
				 (k - key) / t->stride[d]);
			g[n++] = comm[d];
		}
		if (sc->layout && !sc->silent)
			g[n++] = lay;
		ts_job_rank_groups(j, k, g, (size_t)n);
		snprintf(ts_job_rank(j, k)->node, sizeof(ts_job_rank(j, k)->node), "node-%d",
			 node_of(k));
	}
}

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
	topo_init(&t, sc);
	groups(j, sc, &t);
	memset(clock, 0, sizeof(clock));
	for (int st = 0; st < steps; st++) {
		now = 1000000 * MS + (uint64_t)(feed(j, sc, &t, st, &seed, cf[st], clock) * MS);
		ts_job_tick(j, now);
		judge_step(sc, ts_job_result(j), st, o);
	}
	lost_truth(ts_job_result(j), cf, steps, o);
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

static void report(const struct scenario *sc, const struct outcome *o, int n, double secs)
{
	int named = 0, cause = 0, falses = 0, fnet = 0, slow = 0, lat[MAX_RUNS], nl = 0;
	long onset_err = 0;
	char size[16] = "-";

	for (int i = 0; i < n; i++) {
		named += o[i].named, falses += o[i].false_rank, fnet += o[i].false_net;
		slow += o[i].failslow;
		cause += (o[i].named || sc->fault == F_NETWORK) && o[i].cause_ok;
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
	printf("%5.1f |\n", secs);
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
	       "(truth) | stages %% (truth) | variation %% (truth) | seconds |\n");
	printf("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
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
		report(sc, o, runs, (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
		for (int r = 0, said = 0; r < runs && sc->fault == F_NONE; r++)
			if ((o[r].false_rank || o[r].false_net) && !said++) {
				fprintf(stderr, "detect_bench: healthy scenario '%s' (%d ranks) named "
					"a rank\n", sc->name, sc->world);
				false_alarm = true;
			}
	}
	return false_alarm ? 1 : 0;
}
