// SPDX-License-Identifier: Apache-2.0
/* Lost time: where a window's step time went, by what-ifs on the job's own dependency
 * structure. A synchronous step ends when its slowest rank has worked (data-parallel
 * collectives wait for the last replica; a pipeline step is bounded by its slowest
 * stage), so with busy(k, t) a rank's own time in step t the step is max_k busy plus
 * transfers, and each what-if replaces busy and takes the max again:
 *
 *   ranks   every rank at its peers' pace: its persistent excess over its peer class
 *           (mean over the window, less the class's typical excess) taken away;
 *   data    per-step variation among the ranks of a class removed (each at its class's
 *           mean that step): sequence-length or data imbalance, and noise;
 *   stages  every class's work the mean of all classes (pipeline stages balanced).
 *
 * They are taken in that order, each from the last, so the three add up. */
#include "job_impl.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const ts_cause_names[TS_CAUSE_COUNT] = { "Compute", "Communication", "HostCPU",
						      "Storage", "Device" };

/* The cause of the time each of the rank's own phases (ts_own_phases) costs. */
static const enum ts_cause own_cause[TS_OWN_PHASES] = { TS_CAUSE_COMPUTE, TS_CAUSE_HOST,
							 TS_CAUSE_STORAGE, TS_CAUSE_STORAGE };
#define NOWN ((size_t)TS_OWN_PHASES)

struct lost_ctx {
	int world, w, nclass;
	float *busy;   /* [world][w]: NAN where the rank's step is missing */
	float *fix;    /* [world][w]: busy less the rank's persistent excess */
	float *ref;    /* [world][w]: each rank's reference for busy (its peers') */
	double *exc;   /* [world][NOWN + 1]: mean excess over the class, per phase and busy */
	double *loss;  /* [world]: ms the rank cost the window */
	double *tmp;   /* 2 * world + 2 * w */
	double *cm, *g; /* [nclass <= world], [w]: see levels() */
};

static float hist_at(const struct ts_job *j, int k, int m, int t)
{
	size_t w = (size_t)j->p.space_window;

	return j->hist[((size_t)k * TS_M_COUNT + (size_t)m) * w + (size_t)t];
}

/* Classes this small compare each rank with the median of the others (job_change.c). */
#define LEAVE_ONE_OUT_MAX 4

/* The median of v ([world][w]) over class cls at slot t, rank skip left out (-1: none);
 * NAN for none. */
static double class_median_at(const struct ts_job *j, struct lost_ctx *c, const float *v,
			      int cls, int t, int skip)
{
	int n = 0;

	for (int i = j->cstart[cls]; i < j->cstart[cls + 1]; i++) {
		float x = v[(size_t)j->order[i] * (size_t)c->w + (size_t)t];
		if (j->order[i] != skip && !isnan(x))
			c->tmp[n++] = x;
	}
	return n ? ts_median(c->tmp, (size_t)n, c->tmp + c->world) : NAN;
}

/* Each rank's reference at slot t in v: its class's median, or the others' in a small
 * class; into ref ([world][w]) when not NULL. Adds each rank's excess / w into exc at
 * column p. */
static void refs_at(const struct ts_job *j, struct lost_ctx *c, const float *v, int t, size_t p,
		    float *ref)
{
	for (int cls = 0; cls < c->nclass; cls++) {
		int lo = j->cstart[cls], hi = j->cstart[cls + 1];
		double med = hi - lo > LEAVE_ONE_OUT_MAX ? class_median_at(j, c, v, cls, t, -1) : NAN;
		for (int i = lo; i < hi; i++) {
			int k = j->order[i];
			size_t at = (size_t)k * (size_t)c->w + (size_t)t;
			double r = hi - lo > LEAVE_ONE_OUT_MAX ? med : class_median_at(j, c, v, cls, t, k);
			if (ref)
				ref[at] = (float)r;
			if (!isnan(v[at]) && !isnan(r))
				c->exc[(size_t)k * (NOWN + 1) + p] += (v[at] - r) / c->w;
		}
	}
}

/* Each rank's mean excess over its reference, per own phase and (last) for busy, whose
 * references go to c->ref. */
static void excesses(const struct ts_job *j, struct lost_ctx *c, float *phase)
{
	size_t w = (size_t)c->w;

	memset(c->exc, 0, (size_t)c->world * (NOWN + 1) * sizeof(double));
	for (size_t p = 0; p <= NOWN; p++) {
		const float *v = c->busy;
		if (p < NOWN) {
			for (int k = 0; k < c->world; k++)
				for (int t = 0; t < c->w; t++)
					phase[(size_t)k * w + (size_t)t] = hist_at(j, k, ts_own_phases[p], t);
			v = phase;
		}
		for (int t = 0; t < c->w; t++)
			refs_at(j, c, v, t, p, p == NOWN ? c->ref : NULL);
	}
}

/* A rank is persistently slower than its peers when its mean excess beyond its class's
 * typical one (variation that moves among ranks raises every rank's mean alike) is
 * three standard errors of its own excesses: a rank whose loader makes every other step
 * wait is, and a rank slow by chance in a few steps is not. */
static bool is_persistent(const struct lost_ctx *c, int k, double typ)
{
	double mean = c->exc[(size_t)k * (NOWN + 1) + NOWN], ss = 0;
	int n = 0;

	for (int t = 0; t < c->w; t++) {
		size_t at = (size_t)k * (size_t)c->w + (size_t)t;
		double e = (double)c->busy[at] - c->ref[at];
		if (!isnan(e))
			ss += (e - mean) * (e - mean), n++;
	}
	return n > 2 && mean - typ > 0 && mean - typ > 3 * sqrt(ss / (n - 1) / n);
}

/* busy with each persistently slow rank at its peers' pace: never above its
 * reference (plus the class's typical excess). */
static void persistent(const struct ts_job *j, struct lost_ctx *c)
{
	size_t w = (size_t)c->w;

	for (int cls = 0; cls < c->nclass; cls++) {
		int lo = j->cstart[cls], hi = j->cstart[cls + 1], n = 0;
		for (int i = lo; i < hi; i++)
			c->tmp[n++] = c->exc[(size_t)j->order[i] * (NOWN + 1) + NOWN];
		double typ = ts_median(c->tmp, (size_t)n, c->tmp + c->world);
		for (int i = lo; i < hi; i++) {
			int k = j->order[i];
			/* a rank with no peer is its own reference: nothing to take away */
			bool slow = hi - lo > 1 && is_persistent(c, k, typ);
			for (size_t t = 0; t < w; t++) {
				size_t at = (size_t)k * w + t;
				c->fix[at] = slow && c->busy[at] > c->ref[at] + typ ?
					(float)(c->ref[at] + typ) : c->busy[at];
			}
		}
	}
}

static double max_of(const float *v, int world, int w, int t)
{
	double m = NAN;

	for (int k = 0; k < world; k++) {
		float x = v[(size_t)k * (size_t)w + (size_t)t];
		if (!isnan(x) && !(x <= m))
			m = x;
	}
	return m;
}

/* The what-ifs at slot t, into l (ms); the ranks' shares of their step's loss. cm[c]
 * is class c's mean fixed busy time over the window, g the job's mean over ranks at
 * each slot and gm its mean over the window: what is left without per-step variation
 * is the class's own level moved by what moves the whole job (a checkpoint, a
 * job-wide slowdown). */
static void what_if(struct lost_ctx *c, int t, const double *cm,
		    const double *g, double gm, struct ts_lost_time *l)
{
	double a = max_of(c->busy, c->world, c->w, t), b = max_of(c->fix, c->world, c->w, t);
	double cmax = NAN, csum = 0, over = 0;
	int ncls = 0;

	if (isnan(a) || isnan(b) || isnan(g[t]))
		return;
	for (int cls = 0; cls < c->nclass; cls++) {
		if (isnan(cm[cls]))
			continue;
		cmax = ncls++ ? fmax(cmax, cm[cls]) : cm[cls];
		csum += cm[cls];
	}
	l->ranks += a - b;
	l->data += b - (cmax + g[t] - gm);
	l->stages += cmax - csum / ncls;
	/* the step's loss to slow ranks goes to those above what the fixed job reaches */
	for (int k = 0; k < c->world; k++)
		over += fmax(0, c->busy[(size_t)k * (size_t)c->w + (size_t)t] - b);
	for (int k = 0; k < c->world && over > 0; k++)
		c->loss[k] += (a - b) * fmax(0, c->busy[(size_t)k * (size_t)c->w + (size_t)t] - b) /
			      over;
}

/* cm[class]: the class's mean fixed busy time over the window; g[slot]: the job's mean
 * over ranks; returns the mean of g. */
static double levels(const struct ts_job *j, const struct lost_ctx *c, double *cm, double *g)
{
	double gs = 0;
	int gn = 0;

	for (int cls = 0; cls < c->nclass; cls++) {
		double s = 0;
		int n = 0;
		for (int i = j->cstart[cls]; i < j->cstart[cls + 1]; i++)
			for (int t = 0; t < c->w; t++) {
				float x = c->fix[(size_t)j->order[i] * (size_t)c->w + (size_t)t];
				if (!isnan(x))
					s += x, n++;
			}
		cm[cls] = n ? s / n : NAN;
	}
	for (int t = 0; t < c->w; t++) {
		double s = 0;
		int n = 0;
		for (int k = 0; k < c->world; k++) {
			float x = c->fix[(size_t)k * (size_t)c->w + (size_t)t];
			if (!isnan(x))
				s += x, n++;
		}
		g[t] = n ? s / n : NAN;
		if (n)
			gs += g[t], gn++;
	}
	return gn ? gs / gn : NAN;
}

/* The rank's cause: its verdict's when it has one, else its costliest phase. */
static enum ts_cause rank_cause(const struct ts_job *j, const struct lost_ctx *c, int k)
{
	size_t best = 0;

	for (int i = 0; i < j->res.nslow; i++)
		if (j->res.slow[i].rank == k)
			for (int x = 0; x < TS_CAUSE_COUNT; x++)
				if (!strcmp(j->res.slow[i].cause, ts_cause_names[x]))
					return (enum ts_cause)x;
	for (size_t p = 1; p < NOWN; p++)
		if (c->exc[(size_t)k * (NOWN + 1) + p] > c->exc[(size_t)k * (NOWN + 1) + best])
			best = p;
	return own_cause[best];
}

/* The rank of class cls that waits least in its collectives over the window (window
 * medians): the one its peers wait for; -1 with fewer than two. */
static int waited_for(const struct ts_job *j, int cls, float *least)
{
	int best = -1;

	*least = INFINITY;
	for (int i = j->cstart[cls]; j->cstart[cls + 1] - j->cstart[cls] > 1 &&
				     i < j->cstart[cls + 1]; i++) {
		float w = j->win_median[(size_t)j->order[i] * TS_M_COUNT + TS_M_COLLECTIVE];
		if (w < *least)
			*least = w, best = j->order[i];
	}
	return best;
}

/* A rank that waits in its collectives for a peer longer than half again its own busy
 * excess is not what its step lost to: its busy time grew with the wait (its launches
 * block while its GPU waits in the all-reduce for a rank whose host sleeps, bench/data
 * spawn-sleep-1). Its loss goes to the peer of its class that waits least, as the
 * verdict's waits_for_peer judges. */
static void loss_to_waited_for(const struct ts_job *j, struct lost_ctx *c)
{
	for (int cls = 0; cls < j->nclass; cls++) {
		float least;
		int to = waited_for(j, cls, &least);
		for (int i = j->cstart[cls]; to >= 0 && i < j->cstart[cls + 1]; i++) {
			int k = j->order[i];
			double exc = c->exc[(size_t)k * (NOWN + 1) + NOWN],
			       wait = j->win_median[(size_t)k * TS_M_COUNT + TS_M_COLLECTIVE] - least;
			if (k == to || !(c->loss[k] > 0) || !(wait > 1.5 * fmax(exc, 0)))
				continue;
			c->loss[to] += c->loss[k];
			c->loss[k] = 0;
		}
	}
}

/* The costliest ranks, most first, into l->rank; their causes into l->cause; each rank's
 * share times gpu_s (GPU-seconds the window's new steps held) to its count. */
static void top_ranks(struct ts_job *j, struct lost_ctx *c, struct ts_lost_time *l,
		      double total, double gpu_s)
{
	for (int k = 0; k < c->world; k++) {
		if (!(c->loss[k] > 0))
			continue;
		enum ts_cause why = rank_cause(j, c, k);
		double share = c->loss[k] / total;
		l->cause[why] += share;
		j->meta[k].gpu_lost_s += share * gpu_s;
		int at = l->nranks < TS_LOST_RANKS ? l->nranks++ : TS_LOST_RANKS;
		while (at > 0 && l->rank[at - 1].share < share) {
			if (at < TS_LOST_RANKS)
				l->rank[at] = l->rank[at - 1];
			at--;
		}
		if (at < TS_LOST_RANKS)
			l->rank[at] = (struct ts_lost_rank){ k, why, share };
	}
}

static int ctx_init(struct lost_ctx *c, const struct ts_job *j)
{
	size_t n = (size_t)j->world * (size_t)j->p.space_window;

	memset(c, 0, sizeof(*c));
	c->world = j->world, c->w = j->p.space_window, c->nclass = j->nclass;
	c->busy = malloc(3 * n * sizeof(float));
	c->exc = malloc(((size_t)j->world * (NOWN + 5) + 3 * (size_t)c->w) * sizeof(double));
	if (!c->busy || !c->exc) {
		free(c->busy), free(c->exc);
		return -1;
	}
	c->fix = c->busy + n;
	c->ref = c->busy + 2 * n;
	c->loss = c->exc + (size_t)j->world * (NOWN + 1);
	c->tmp = c->loss + j->world;
	c->cm = c->tmp + 2 * (size_t)j->world + 2 * (size_t)c->w;
	c->g = c->cm + j->world;
	memset(c->loss, 0, (size_t)j->world * sizeof(double));
	for (int k = 0; k < j->world; k++)
		for (int t = 0; t < c->w; t++)
			c->busy[(size_t)k * (size_t)c->w + (size_t)t] = ts_job_busy_at(j, k, (size_t)t);
	return 0;
}

/* GPU-seconds the steps this window added held: those after the last step counted (the
 * whole window the first time), times the window's mean step, times one GPU a rank. */
static double gpu_seconds(const struct ts_job *j, const struct ts_lost_time *l)
{
	const struct ts_gpu_lost *g = &j->res.gpu_lost;
	uint64_t span = l->to_step - l->from_step + 1,
		 fresh = !g->counted ? span
			 : l->to_step > g->through_step ? l->to_step - g->through_step : 0;

	return (double)(fresh < span ? fresh : span) * l->step_ms / 1e3 * (double)j->world;
}

/* Adds the window's lost shares of gpu_s to the job's counts (a share below zero, the
 * data what-if's where a window ran ahead of its mean, counts as none). */
static void count_gpu_lost(struct ts_gpu_lost *g, const struct ts_lost_time *l, double gpu_s)
{
	for (int c = 0; c < TS_CAUSE_COUNT; c++)
		g->cause_s[c] += isfinite(l->cause[c]) ? fmax(0, l->cause[c]) * gpu_s : 0;
	g->stages_s += isfinite(l->stages) ? fmax(0, l->stages) * gpu_s : 0;
	g->data_s += isfinite(l->data) ? fmax(0, l->data) * gpu_s : 0;
	g->total_s = g->stages_s + g->data_s;
	for (int c = 0; c < TS_CAUSE_COUNT; c++)
		g->total_s += g->cause_s[c];
	g->through_step = l->to_step, g->counted = true;
}

void ts_job_lost_time(struct ts_job *j)
{
	struct ts_lost_time *l = &j->res.lost;
	struct lost_ctx c;
	double total = 0, comm = 0;
	int rows = 0;

	memset(l, 0, sizeof(*l));
	if (j->hist_n < j->p.space_window || ctx_init(&c, j))
		return;
	excesses(j, &c, c.fix);
	persistent(j, &c);
	double gm = levels(j, &c, c.cm, c.g);
	for (int t = 0; t < c.w; t++) {
		double step = j->step_hist[t];
		if (!(step > 0))
			continue;
		double least = NAN;
		for (int k = 0; k < j->world; k++) {
			float x = hist_at(j, k, TS_M_COLLECTIVE, t);
			if (!isnan(x) && !(x >= least))
				least = x;
		}
		total += step, rows++;
		comm += isnan(least) ? 0 : least;
		what_if(&c, t, c.cm, c.g, gm, l);
	}
	if (rows && total > 0) {
		l->valid = true;
		l->to_step = j->res.last_step;
		l->from_step = l->to_step + 1 - (uint64_t)c.w;
		l->step_ms = total / rows;
		l->ranks /= total, l->data /= total, l->stages /= total, l->comm = comm / total;
		l->share = l->ranks + l->data + l->stages;
		double gpu_s = gpu_seconds(j, l);
		loss_to_waited_for(j, &c);
		top_ranks(j, &c, l, total, gpu_s);
		count_gpu_lost(&j->res.gpu_lost, l, gpu_s);
	}
	free(c.busy), free(c.exc);
}
