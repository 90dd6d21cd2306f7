// SPDX-License-Identifier: Apache-2.0
/* Peer classes: the ranks that do the same work (the same pipeline stage and tensor
 * position across data-parallel replicas), from the job's parallel layout, else its NCCL
 * communicators, else, once, the ranks' own times; with none of them every rank is a
 * peer of every other. The change points (job_change.c) compare each rank with its
 * class. */
#include "job_impl.h"
#include "log.h"
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Ranks changed class (communicators came after the first steps): their excesses were
 * over other peers, so the change points and the noise are learned again. */
static void regrouped(struct ts_job *j, const struct row *r)
{
	ts_info("%s/%s: step %llu: %d peer classes from the communicators", j->ns, j->name,
		(unsigned long long)r->step, j->nclass);
	ts_job_relearn(j, r->step, r->end_max);
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

void ts_job_classes_row(struct ts_job *j, const struct row *r)
{
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
}
