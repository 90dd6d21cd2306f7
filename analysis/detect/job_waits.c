// SPDX-License-Identifier: Apache-2.0
/* Whether the job measurably waits for a rank, from what every rank's steps say: in
 * synchronous training the rank the others wait for comes last to the collectives and
 * waits least in them, and the others' extra wait is time the job loses to it. Real
 * ranks differ by role (rank 0 logs, loader workers take turns, DDP's buckets overlap
 * the backward pass), so a rank's busy estimate can stand out while the job's step time
 * does not move: a rank is worth naming only when the others wait for it, step after
 * step, and the job slowed (or, slow from its first step, its device takes far longer
 * than its peers' for the same work). Over the window of the last space.window_size
 * steps; peers are the rank's class (every rank when it has none), at most
 * TS_WAIT_PEERS of them sampled evenly. */
#include "job_impl.h"
#include "stats.h"

#include <math.h>

#define TS_WAIT_PEERS 64

static size_t W(const struct ts_job *j) { return (size_t)j->p.space_window; }

static const float *series(const struct ts_job *j, int k, int m)
{
	return &j->hist[((size_t)k * TS_M_COUNT + (size_t)m) * W(j)];
}

/* Rank k's metric m in slot t; m < 0: its busy time (its own phases together). */
static float value(const struct ts_job *j, int k, int m, size_t t)
{
	return m < 0 ? ts_job_busy_at(j, k, t) : series(j, k, m)[t];
}

/* The ranks rank k is compared with: positions lo..hi of its class (of the job, all)
 * every stride-th, each rank given by member(). */
struct peers {
	int lo, hi, stride;
	bool all;
};

static struct peers peers_of(const struct ts_job *j, int k)
{
	int c = j->meta[k].peer_class;
	struct peers p = { j->cstart[c], j->cstart[c + 1], 1, false };

	if (p.hi - p.lo < 2)
		p = (struct peers){ 0, j->world, 1, true };
	p.stride = (p.hi - p.lo + TS_WAIT_PEERS - 1) / TS_WAIT_PEERS;
	return p;
}

static int member(const struct ts_job *j, const struct peers *p, int i)
{
	return p->all ? i : j->order[i];
}

/* The window slots of group i of span steps, the newest first: t[0..span-1]. */
static void group_slots(const struct ts_job *j, int i, int span, size_t *t)
{
	size_t w = W(j), last = ts_job_last_slot(j);

	for (int s = 0; s < span; s++)
		t[s] = (last + w - (size_t)(i * span + s)) % w;
}

/* The median of the peers' values of metric m summed over the ns slots t[] (k left out):
 * NAN with none; *least is cleared when one of them is below v. */
static double peer_median(struct ts_job *j, int k, int m, const size_t *t, int ns, float v,
			  bool *least)
{
	struct peers p = peers_of(j, k);
	int n = 0;

	for (int i = p.lo; i < p.hi; i += p.stride) {
		int r = member(j, &p, i);
		float x = 0;
		for (int s = 0; s < ns && r != k; s++)
			x += value(j, r, m, t[s]);
		if (r == k || isnan(x))
			continue;
		j->vals[n++] = x;
		if (least && x < v)
			*least = false;
	}
	return n ? ts_median(j->vals, (size_t)n, j->scratch) : NAN;
}

/* The waits over the window in groups of span steps, the newest first: the median of
 * the peers' collective time beyond k's, as a share of the group's step time (*share),
 * and the share of groups k came last in (*last); false with too few steps to say. */
static bool waits_over(struct ts_job *j, int k, int span, double *share, double *last)
{
	double w[64], tmp[64];
	size_t t[2];
	int groups = 0, lastc = 0, seen = 0;

	for (int i = 0; (i + 1) * span <= j->hist_n && (i + 1) * span <= 64; i++) {
		float ck = 0, st = 0;
		bool is_last = true;
		group_slots(j, i, span, t);
		for (int s = 0; s < span; s++)
			ck += series(j, k, TS_M_COLLECTIVE)[t[s]], st += j->step_hist[t[s]];
		if (isnan(ck) || !(st > 0))
			continue;
		double med = peer_median(j, k, TS_M_COLLECTIVE, t, span, ck, &is_last);
		if (isnan(med))
			continue;
		w[groups++] = (med - ck) / st;
		lastc += is_last, seen += span;
	}
	*share = groups ? ts_median(w, (size_t)groups, tmp) : NAN;
	*last = groups ? (double)lastc / groups : 0;
	return seen * 2 >= (int)W(j);
}

bool ts_job_waited_for(struct ts_job *j, int k, double *share, double *last)
{
	double s2, l2;

	if (!waits_over(j, k, 1, share, last))
		return false;
	/* loader workers take turns: with one slow worker of two the others wait for the
	 * rank every other step, and it comes last in half its steps but in every pair */
	if (*last < 0.75 && waits_over(j, k, 2, &s2, &l2) && l2 > *last)
		*share = s2, *last = l2;
	return true;
}

/* Rank k's median of metric m over the last `recent` groups of span steps that have it
 * (all the window's with recent <= 0; with timed, only steps its device was timed in),
 * and its peers' median of the same groups (*a, *b).
 * Groups without it (the device untimed in a step: TRAINSCOPE_DEVICE_EVERY; no GEMM
 * sampled) are passed over, so that a look of `recent` steps rests on as many values
 * while the window holds them. */
static bool medians_over(struct ts_job *j, int k, int m, int recent, int span, bool timed,
			 double *a, double *b)
{
	double mine[64], theirs[64], tmp[64];
	size_t t[2];
	int n = 0, groups = j->hist_n / span;

	for (int i = 0; i < groups && i < 64 && (recent <= 0 || n < recent); i++) {
		float v = 0;
		group_slots(j, i, span, t);
		for (int s = 0; s < span; s++)
			v += timed && isnan(series(j, k, TS_M_COMPUTE)[t[s]]) ? NAN
								      : value(j, k, m, t[s]);
		double med = isnan(v) ? NAN : peer_median(j, k, m, t, span, v, NULL);
		if (!isnan(med))
			mine[n] = v, theirs[n++] = med;
	}
	if (!n)
		return false;
	*a = ts_median(mine, (size_t)n, tmp), *b = ts_median(theirs, (size_t)n, tmp);
	return true;
}

double ts_job_peer_ratio(struct ts_job *j, int k, int m, int recent)
{
	double a, b;

	return ts_job_peer_medians(j, k, m, recent, &a, &b) && b > 0 ? a / b : NAN;
}

double ts_job_peer_ratio_pairs(struct ts_job *j, int k, int m, int pairs)
{
	double a, b;

	return medians_over(j, k, m, pairs, 2, false, &a, &b) && b > 0 ? a / b : NAN;
}

bool ts_job_peer_medians(struct ts_job *j, int k, int m, int recent, double *a, double *b)
{
	return medians_over(j, k, m, recent, 1, false, a, b);
}

bool ts_job_peer_medians_timed(struct ts_job *j, int k, int m, int recent, double *a,
			       double *b)
{
	return medians_over(j, k, m, recent, 1, true, a, b);
}

double ts_job_peer_ratio_timed(struct ts_job *j, int k, int m, int recent)
{
	double a, b;

	return ts_job_peer_medians_timed(j, k, m, recent, &a, &b) && b > 0 ? a / b : NAN;
}

bool ts_job_floors(const struct ts_job *j)
{
	return j->p.verdict.wait_floor > 0;
}

static bool slowed_now(const struct ts_job *j)
{
	return j->fs.slow && ts_job_slowdown(j) >= j->p.verdict.min_slowdown;
}

void ts_job_note_slowed(struct ts_job *j, uint64_t t_ns)
{
	bool was = j->slowed;

	j->slowed = slowed_now(j);
	if (j->slowed && !was)
		j->slowed_from_ns = t_ns;
}

bool ts_job_slowed(const struct ts_job *j)
{
	return j->slowed && slowed_now(j) && j->res.updated_ns >= j->slowed_from_ns &&
	       (double)(j->res.updated_ns - j->slowed_from_ns) >= j->p.verdict.min_slow_s * 1e9;
}

/* Over twice change.smooth_steps and one, the longer look of a rank's change points: a
 * host-wide hiccup of some 8 steps (every rank's launches late: mp.spawn, bench/data
 * spawn-ok-4) is no slowdown to name a rank for, one that lasts is, as soon. Steps that
 * alternate (two loader workers taking turns, one of them slow: its steps and the
 * others' apart by more than verdict.min_slowdown) flip that median between their two
 * lengths; the median of the same steps' pair means holds. Spikes that do not
 * alternate (one step in three) keep the median's tolerance. */
double ts_job_slowdown(const struct ts_job *j)
{
	size_t w = W(j), n = 2 * (size_t)j->p.change.smooth_steps + 1, t[2];
	double cur = ts_median_recent(j->step_hist, w, ts_job_last_slot(j), n), pair[32], a[32],
	       b[32], tmp[32];
	size_t np = 0;

	for (int i = 0; 2 * (size_t)i + 1 < n && 2 * (size_t)i + 1 < w && np < 32; i++) {
		group_slots(j, i, 2, t);
		a[np] = j->step_hist[t[0]], b[np] = j->step_hist[t[1]];
		if (a[np] > 0 && b[np] > 0)
			pair[np] = 0.5 * (a[np] + b[np]), np++;
	}
	if (np * 2 + 1 >= n && !isnan(cur)) {
		double ma = ts_median(a, np, tmp), mb = ts_median(b, np, tmp);
		if (fmax(ma, mb) > (1 + j->p.verdict.min_slowdown) * fmin(ma, mb))
			cur = fmax(cur, ts_median(pair, np, tmp));
	}
	return j->fs.baseline > 0 && !isnan(cur) ? cur / j->fs.baseline - 1 : NAN;
}
