// SPDX-License-Identifier: Apache-2.0
/* Change points on each rank's excess over the peers that do the same work. A rank is
 * compared with its peer class (the same pipeline stage and tensor position across
 * data-parallel replicas); a rank with no peer is compared with its own baseline,
 * scaled by how the whole job moved. The excess is a share of the job's step time, so
 * metrics of every size share one scale, and the noise it is judged against is learned
 * from the job's own steps: the median over ranks of each rank's robust sigma in time. */
#include "job_impl.h"
#include "log.h"
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A rank's sigma needs this many excess samples in its window. */
#define MIN_SIGMA_SAMPLES 8
/* Classes this small compare each rank with the median of the others. */
#define LEAVE_ONE_OUT_MAX 4

bool ts_job_by_change(int m)
{
	return m == TS_M_COMPUTE || m == TS_M_LAUNCH || m == TS_M_DATALOADER ||
	       m == TS_M_CHECKPOINT || m == TS_M_GEMM;
}

static size_t cell(const struct ts_job *j, int k, int m)
{
	(void)j;
	return (size_t)k * TS_M_COUNT + (size_t)m;
}

int ts_job_peers(const struct ts_job *j, int k)
{
	int c = j->meta[k].peer_class;

	return j->cstart[c + 1] - j->cstart[c] - 1;
}

static int uf_root(int *up, int k)
{
	while (up[k] != k)
		k = up[k] = up[up[k]];
	return k;
}

static void uf_join(int *up, int a, int b)
{
	a = uf_root(up, a), b = uf_root(up, b);
	if (a != b)
		up[a > b ? a : b] = a < b ? a : b;
}

struct member {
	uint64_t comm;
	int rank;
};

static int cmp_member(const void *a, const void *b)
{
	const struct member *x = a, *y = b;

	return x->comm != y->comm ? (x->comm > y->comm) - (x->comm < y->comm) : x->rank - y->rank;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* No two of the communicator's members (mem[0..n)) are in one pipeline (comp). */
static bool across_pipelines(const struct member *mem, int n, const int *comp, int *tmp)
{
	for (int i = 0; i < n; i++)
		tmp[i] = comp[mem[i].rank];
	qsort(tmp, (size_t)n, sizeof(*tmp), cmp_int);
	for (int i = 1; i < n; i++)
		if (tmp[i] == tmp[i - 1])
			return false;
	return true;
}

/* Peer classes from the NCCL communicators when no layout is given. Sends and receives
 * join pipeline neighbours, so the ranks a chain of point-to-point communicators links
 * form one pipeline whose stages differ in work by design; a collective communicator
 * holding no two ranks of one pipeline (data-parallel replicas of a stage, tensor-
 * parallel ranks in lockstep) joins ranks that do the same work. Its classes go to cls;
 * false while some rank has named no communicator yet. */
static bool comm_classes(struct ts_job *j, int *cls)
{
	int n = j->world, np = 0;
	struct member *mem = malloc((size_t)n * TS_RANK_MAX_COMMS * sizeof(*mem));
	int *pipe = malloc(4 * (size_t)n * sizeof(int)), *comp = pipe + n, *up = comp + n;
	int *tmp = up + n;
	bool ok = mem && pipe;

	for (int k = 0; ok && k < n; k++) {
		ok = j->meta[k].ncomms > 0;
		for (int i = 0; i < j->meta[k].ncomms; i++)
			mem[np++] = (struct member){ j->meta[k].comms[i], k };
		pipe[k] = up[k] = k;
	}
	if (ok)
		qsort(mem, (size_t)np, sizeof(*mem), cmp_member);
	for (int pass = 0; ok && pass < 2; pass++) {
		for (int a = 0, b; a < np; a = b) {
			for (b = a + 1; b < np && mem[b].comm == mem[a].comm; b++)
				;
			bool p2p = ts_job_net_p2p(j, mem[a].comm);
			if (pass == 0 && p2p)
				for (int i = a + 1; i < b; i++)
					uf_join(pipe, mem[a].rank, mem[i].rank);
			if (pass == 1 && !p2p && across_pipelines(mem + a, b - a, comp, tmp))
				for (int i = a + 1; i < b; i++)
					uf_join(up, mem[a].rank, mem[i].rank);
		}
		for (int k = 0; pass == 0 && k < n; k++)
			comp[k] = uf_root(pipe, k);
	}
	for (int k = 0; ok && k < n; k++)
		cls[k] = uf_root(up, k);
	free(mem), free(pipe);
	return ok;
}

bool ts_job_group_ranks(struct ts_job *j)
{
	int n = j->world, nc = 1, next = 0;
	bool layout = j->has_layout && ts_layout_world(&j->layout) == n, changed = false;
	bool comms = !layout && comm_classes(j, j->outl);

	bool inferred = !layout && !comms && j->classes_inferred;

	for (int k = 0; k < n; k++) {
		int c = layout ? ts_layout_class(&j->layout, k) : 0;
		if (comms) /* outl[k]: the class's lowest rank, whose class is known */
			c = j->outl[k] == k ? next++ : j->meta[j->outl[k]].peer_class;
		if (inferred)
			c = k / j->infer_stride % j->infer_positions;
		c = c < 0 ? 0 : c;
		changed |= j->meta[k].peer_class != c;
		j->meta[k].peer_class = c;
		if (c + 1 > nc)
			nc = c + 1;
	}
	j->classes_from_comms = comms;
	j->classes_inferred = inferred;
	j->classes_dirty = false;
	memset(j->cstart, 0, (size_t)(n + 1) * sizeof(int));
	for (int k = 0; k < n; k++)
		j->cstart[j->meta[k].peer_class + 1]++;
	for (int c = 0; c < nc; c++) {
		j->cstart[c + 1] += j->cstart[c];
		j->outl[c] = j->cstart[c]; /* where the class's next rank goes */
	}
	for (int k = 0; k < n; k++)
		j->order[j->outl[j->meta[k].peer_class]++] = k;
	j->nclass = nc;
	return changed;
}

int ts_job_set_layout(struct ts_job *j, const char *text, char *err, size_t errlen)
{
	struct ts_layout l;
	int rc = ts_layout_parse(&l, text, err, errlen);

	if (rc)
		return rc;
	if (ts_layout_world(&l) != j->world) {
		snprintf(err, errlen, "layout '%s' covers %ld ranks, the job has %d", text,
			 ts_layout_world(&l), j->world);
		return -EINVAL;
	}
	if (j->has_layout && !strcmp(j->layout_text, text))
		return 0;
	j->layout = l;
	j->has_layout = true;
	snprintf(j->layout_text, sizeof(j->layout_text), "%s", text);
	ts_job_group_ranks(j);
	ts_info("%s/%s: parallel layout %s: %d peer classes", j->ns, j->name, text, j->nclass);
	return 0;
}

static float *ehist_at(struct ts_job *j, int k, int m)
{
	return &j->ehist[cell(j, k, m) * (size_t)j->p.space_window];
}

/* The job's noise per metric, relearned every window_step steps once ranks have enough
 * samples; and each rank's own baseline (its window median), once. */
static void learn(struct ts_job *j)
{
	size_t w = (size_t)j->p.space_window;
	double *tmp = j->scratch + 2 * (size_t)j->world, *win = tmp + 2 * w;

	/* nothing is judged before the window has filled once: a job's first steps
	 * (start-up, warm caches, compilation) are not its noise */
	if (j->hist_n < (int)w)
		return;
	if (j->sigma_at && j->res.steps_evaluated < j->sigma_at + (uint64_t)j->p.space_window_step)
		return;
	j->sigma_at = j->res.steps_evaluated;
	for (int m = 0; m < TS_M_COUNT; m++) {
		int n = 0;
		if (!ts_job_by_change(m))
			continue;
		for (int k = 0; k < j->world; k++) {
			const float *e = ehist_at(j, k, m);
			size_t got = 0;
			for (size_t i = 0; i < w; i++)
				if (!isnan(e[i]))
					win[got++] = e[i];
			if (got < MIN_SIGMA_SAMPLES && got < w)
				continue;
			double med = ts_median(win, got, tmp);
			double s = ts_mad_sigma(win, got, med, tmp);
			if (!isnan(s))
				j->vals[n++] = s;
		}
		/* the noise may fall at once but rise only by a quarter a relearn: a job of
		 * two ranks, one turned slow, would otherwise learn the fault as noise
		 * (each rank's excess is over the other) before the sum can reach it */
		if (n) {
			float s = (float)ts_median(j->vals, (size_t)n, j->scratch);
			j->sigma[m] = j->sigma[m] >= 0 ? fminf(s, 1.25f * j->sigma[m]) : s;
		}
		ts_debug("%s/%s: step %llu: %s noise %.4f of a step (%d ranks)", j->ns, j->name,
			 (unsigned long long)j->res.last_step, ts_metric_names[m], j->sigma[m], n);
		for (int k = 0; k < j->world; k++) {
			float *b = &j->base[cell(j, k, m)];
			if (!isnan(*b) || j->hist_n < (int)w)
				continue;
			for (size_t i = 0; i < w; i++)
				win[i] = j->hist[cell(j, k, m) * w + i];
			*b = (float)ts_median(win, w, tmp);
		}
	}
}

/* How the whole job moved against the ranks' own baselines (median ratio). */
static double job_factor(struct ts_job *j, const struct row *r, int m)
{
	int n = 0;

	for (int k = 0; k < j->world; k++) {
		float b = j->base[cell(j, k, m)], v = r->m[cell(j, k, m)];
		if (r->have[k] && b > 0 && !isnan(v))
			j->vals[n++] = v / b;
	}
	return n ? ts_median(j->vals, (size_t)n, j->scratch) : NAN;
}

/* The median of the class's values at this step, leaving rank skip out (-1: none). */
static double class_median(struct ts_job *j, const struct row *r, int m, int c, int skip)
{
	int n = 0;

	for (int i = j->cstart[c]; i < j->cstart[c + 1]; i++) {
		int k = j->order[i];
		float v = r->m[cell(j, k, m)];
		if (k != skip && r->have[k] && !isnan(v))
			j->vals[n++] = v;
	}
	return n ? ts_median(j->vals, (size_t)n, j->scratch) : NAN;
}

static void raised(struct ts_job *j, int k, int m, struct ts_change *c)
{
	size_t i = cell(j, k, m);
	uint64_t lag = (uint64_t)(j->p.change.smooth_steps - 1) / 2;
	struct ts_event *ev;

	/* the median of the last steps turns once half of them changed */
	c->onset = c->onset > lag ? c->onset - lag : 0;
	j->alarm[i] = true;
	j->since[i] = c->onset_ns;
	j->res.alarms_raised++;
	j->res.ever_alarmed[k] = 1;
	if ((ev = ts_job_history_open(j, TS_EV_SLOW_RANK, k, m))) {
		ev->onset_step = c->onset, ev->raised_step = c->confirmed;
		ev->raised_ns = c->onset_ns;
		ev->excess = (float)((ts_change_value(c) - ts_change_ref(c)) / ts_change_ref(c));
		snprintf(ev->text, sizeof(ev->text), "rank %d %s %.2f ms vs %.2f ms of its %s "
			 "(%+.0f%%) from step %llu, confirmed at step %llu", k, ts_metric_names[m],
			 ts_change_value(c), ts_change_ref(c),
			 ts_job_peers(j, k) ? "peers" : "own baseline", 100 * ev->excess,
			 (unsigned long long)c->onset, (unsigned long long)c->confirmed);
	}
	ts_info("%s/%s: rank %d %s alarm raised at step %llu: %.2f ms vs %.2f ms since step %llu",
		j->ns, j->name, k, ts_metric_names[m], (unsigned long long)c->confirmed,
		ts_change_value(c), ts_change_ref(c), (unsigned long long)c->onset);
}

/* What the rank's last excesses say (change.smooth_steps of them, n): their median,
 * so that pauses of a step or two (a GC, a page-fault storm) are not a change and a
 * slowdown that lasts is; or, when it is more, a change that hits every other step
 * (loader workers that take turns): the trimmed mean of the same steps, if 2n + 1
 * steps agree (their 60th percentile: pauses that came close together fall short). */
static double smoothed(struct ts_job *j, int k, int m, size_t slot)
{
	const float *e = ehist_at(j, k, m);
	size_t w = (size_t)j->p.space_window, n = (size_t)j->p.change.smooth_steps;
	double median, trim;

	ts_median_trim_recent(e, w, slot, n, &median, &trim);
	if (!(trim > median)) /* the longer look can only lower it */
		return median;
	return fmax(median, fmin(trim, ts_quantile_recent(e, w, slot, 2 * n + 1, 0.6)));
}

static void judge(struct ts_job *j, const struct row *r, int k, int m, double ref)
{
	size_t i = cell(j, k, m);
	/* the allowance grows with the job's noise: a noisy job needs a larger excess */
	struct ts_change_opts o = j->p.change;
	o.drift = fmax(o.drift, o.drift_sigmas * j->sigma[m]);
	struct ts_change *c = &j->chg[i];
	double v = r->m[i], e = (v - ref) / j->step_ms;
	size_t slot = ts_job_last_slot(j);

	if (isnan(ref) || isnan(v))
		return;
	o.drift = fmax(o.drift, o.min_excess * ref / j->step_ms);
	ehist_at(j, k, m)[slot] = (float)e;
	if (!(j->sigma[m] >= 0))
		return; /* not learned yet */
	switch (ts_change_update(c, &o, smoothed(j, k, m, slot), j->sigma[m], r->step, r->end_max,
				 v, ref)) {
	case TS_CHANGE_RAISED:
		raised(j, k, m, c);
		break;
	case TS_CHANGE_CLEARED:
		j->alarm[i] = false;
		ts_job_history_close(j, TS_EV_SLOW_RANK, k, m, r->step, r->end_max);
		ts_info("%s/%s: rank %d %s alarm cleared at step %llu", j->ns, j->name, k,
			ts_metric_names[m], (unsigned long long)r->step);
		break;
	}
	if (c->alarm) {
		j->hit_value[i] = (float)ts_change_value(c);
		j->hit_median[i] = (float)ts_change_ref(c);
	}
}

/* Ranks changed class (communicators came after the first steps): their excesses were
 * over other peers, so the change points and the noise are learned again. */
static void regrouped(struct ts_job *j, const struct row *r)
{
	ts_info("%s/%s: step %llu: %d peer classes from the communicators", j->ns, j->name,
		(unsigned long long)r->step, j->nclass);
	ts_job_relearn(j, r->step, r->end_max);
}

void ts_job_relearn(struct ts_job *j, uint64_t step, uint64_t t_ns)
{
	size_t w = (size_t)j->p.space_window;

	for (int m = 0; m < TS_M_COUNT; m++) {
		if (!ts_job_by_change(m))
			continue;
		for (int k = 0; k < j->world; k++) {
			size_t i = cell(j, k, m);
			if (j->alarm[i])
				ts_job_history_close(j, TS_EV_SLOW_RANK, k, m, step, t_ns);
			j->alarm[i] = false;
			memset(&j->chg[i], 0, sizeof(j->chg[i]));
			for (size_t s = 0; s < w; s++)
				ehist_at(j, k, m)[s] = NAN;
		}
		j->sigma[m] = NAN;
	}
	j->sigma_at = 0;
}

/* Ranks per inferred class at least: two or three ranks slow together from the start
 * must not make a class of their own (and so hide). */
#define INFER_MIN_CLASS 4

/* Each rank's own time per step over the window (median), into v; tmp holds 2 * w. */
static void window_busy(struct ts_job *j, double *v, double *tmp)
{
	size_t w = (size_t)j->p.space_window;

	for (int k = 0; k < j->world; k++) {
		for (size_t t = 0; t < w; t++)
			tmp[t] = ts_job_busy_at(j, k, t);
		v[k] = ts_median(tmp, w, tmp + w);
	}
}

static int cmp_by_value(const void *a, const void *b, void *v)
{
	double x = ((const double *)v)[*(const int *)a], y = ((const double *)v)[*(const int *)b];

	return (x > y) - (x < y);
}

/* Levels: ranks sorted by busy time v, cut where the gap between neighbours is over 5 %
 * of the median and 8 times the median gap. level[k] gets rank k's; returns how many.
 * ord holds world ints, gap 2 * world doubles. */
static int busy_levels(int n, const double *v, int *level, int *ord, double *gap)
{
	int nl = 1;

	for (int k = 0; k < n; k++)
		ord[k] = k;
	qsort_r(ord, (size_t)n, sizeof(int), cmp_by_value, (void *)v);
	for (int i = 0; i + 1 < n; i++)
		gap[i] = v[ord[i + 1]] - v[ord[i]];
	double mg = n > 1 ? ts_median(gap, (size_t)n - 1, gap + n) : 0;
	double med = v[ord[n / 2]];
	for (int i = 0; i < n; i++) {
		if (i && v[ord[i]] - v[ord[i - 1]] > fmax(0.05 * med, 8 * mg))
			nl++;
		level[ord[i]] = nl - 1;
	}
	return nl;
}

/* The coarsest rank arithmetic the levels follow: the level is a function of
 * k / stride % positions, with classes of INFER_MIN_CLASS ranks or more. seen holds
 * world ints. */
static bool shaped(int n, const int *level, int *seen, int *stride, int *positions)
{
	for (int m = 2; m * INFER_MIN_CLASS <= n; m++)
		for (int s = 1; s * m <= n; s++) {
			bool ok = n % (s * m) == 0;
			for (int c = 0; c < m; c++)
				seen[c] = -1;
			for (int k = 0; k < n && ok; k++) {
				int c = k / s % m;
				ok = seen[c] < 0 || seen[c] == level[k];
				seen[c] = level[k];
			}
			if (ok) {
				*stride = s, *positions = m;
				return true;
			}
		}
	return false;
}

/* With no layout and no communicator (gloo, NCCL not seen), all ranks would be peers
 * and a heavier pipeline stage's ranks would be named: once, at the first full window,
 * the ranks' own times may fall into levels that follow rank arithmetic (a stage's
 * ranks a block, or every m-th rank). Then the positions are the classes, as a layout
 * would make them, and the log says so. */
static void infer_classes(struct ts_job *j, const struct row *r)
{
	int n = j->world, stride, positions;
	size_t w = (size_t)j->p.space_window;
	double *v = malloc((3 * (size_t)n + 2 * w) * sizeof(double));
	int *ints = malloc(3 * (size_t)n * sizeof(int));

	j->infer_tried = true;
	if (v && ints) {
		window_busy(j, v, v + 3 * n);
		if (busy_levels(n, v, ints, ints + n, v + n) > 1 &&
		    shaped(n, ints, ints + 2 * n, &stride, &positions)) {
			j->infer_stride = stride, j->infer_positions = positions;
			j->classes_inferred = true;
			ts_job_group_ranks(j);
			ts_info("%s/%s: step %llu: %d peer classes inferred from the ranks' own "
				"times (class = rank / %d %% %d); TRAINSCOPE_GROUPS says it for sure",
				j->ns, j->name, (unsigned long long)r->step, j->nclass, stride,
				positions);
			ts_job_relearn(j, r->step, r->end_max);
		}
	}
	free(v), free(ints);
}

void ts_job_change_row(struct ts_job *j, const struct row *r)
{
	size_t slot = ts_job_last_slot(j);

	/* communicators come with the first steps; later ones (a rank's oldest giving way
	 * to a new one) regroup at most once a window: it costs a sort over all ranks */
	if (j->classes_dirty && (j->hist_n < j->p.space_window ||
				 r->step >= j->classes_at + (uint64_t)j->p.space_window)) {
		j->classes_at = r->step;
		if (ts_job_group_ranks(j))
			regrouped(j, r);
	}
	if (!j->infer_tried && j->hist_n >= j->p.space_window && !j->classes_from_comms &&
	    !(j->has_layout && ts_layout_world(&j->layout) == j->world) && j->world >= 2 * INFER_MIN_CLASS)
		infer_classes(j, r);
	if (!(j->step_ms > 0))
		return;
	for (int m = 0; m < TS_M_COUNT; m++) {
		if (!ts_job_by_change(m))
			continue;
		for (int k = 0; k < j->world; k++)
			ehist_at(j, k, m)[slot] = NAN;
		double f = NAN; /* a median over the job: only ranks with no peer need it */
		for (int c = 0; c < j->nclass; c++) {
			if (j->cstart[c + 1] - j->cstart[c] == 1 && isnan(f))
				f = job_factor(j, r, m);
			int lo = j->cstart[c], hi = j->cstart[c + 1];
			double med = hi - lo > LEAVE_ONE_OUT_MAX ? class_median(j, r, m, c, -1) : NAN;
			for (int i = lo; i < hi; i++) {
				int k = j->order[i];
				double ref = hi - lo == 1 ? j->base[cell(j, k, m)] * f
					   : hi - lo > LEAVE_ONE_OUT_MAX ? med
					   : class_median(j, r, m, c, k);
				if (r->have[k])
					judge(j, r, k, m, ref);
			}
		}
	}
	learn(j);
}
