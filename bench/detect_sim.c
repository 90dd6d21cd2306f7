// SPDX-License-Identifier: Apache-2.0
/* The detection bench's synthetic job (detect_bench_impl.h): each rank's phases in a
 * step under the scenario's fault and noise, the collectives that make ranks wait for the
 * last, the node agent's views, and the step replayed under the what-ifs. */
#include "detect_bench_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const int fault_metric[] = { -1, TS_M_COMPUTE, TS_M_DATALOADER, TS_M_LAUNCH, -1, -1, -1 };

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

static int group_key(const struct topo *t, int d, int k)
{
	return k - (k / t->stride[d] % t->size[d]) * t->stride[d];
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

void sim_topo_init(struct topo *t, const struct scenario *sc)
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

/* What the node agent's NVML says of each rank's GPU: a compute fault is another
 * tenant's process on it (the neighbour the real corpus records), as long as it lasts. */
static void gpus(struct ts_job *j, const struct scenario *sc, double f)
{
	for (int k = 0; k < sc->world; k++) {
		bool shared = sc->fault == F_COMPUTE && k == faulty_rank(sc) && f > 0;
		struct ts_device_view v = { .valid = true, .sm_clock_mhz = 1980,
					    .other_procs = shared };
		ts_job_rank(j, k)->device_index = k;
		ts_job_device_view(j, ts_job_rank(j, k)->node, k, &v);
	}
}

double sim_feed(struct ts_job *j, const struct scenario *sc, const struct topo *t, int step,
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
	gpus(j, sc, f);
	for (int k = 0; k < sc->world; k++) {
		rs[k].end_ns = t0 + (uint64_t)(at[k] * MS);
		clock[k] = at[k];
		ts_job_add_step(j, k, sc->world, &rs[k]);
	}
	return last;
}

void sim_groups(struct ts_job *j, const struct scenario *sc, const struct topo *t)
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
