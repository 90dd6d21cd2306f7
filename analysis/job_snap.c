// SPDX-License-Identifier: Apache-2.0
/* A job's whole state in a snapshot, and back: an analyzer that restarts picks up each
 * job where the snapshot left it, and replays the stream from there. */
#include "job_impl.h"
#include "snap.h"
#include "hash.h"

#include <stdlib.h>

/* Causes and metrics are pointers to static names: a snapshot holds their index. */
static const char *const causes[] = { "Compute", "Communication", "HostCPU", "Storage", "Device" };
#define NCAUSES (sizeof(causes) / sizeof(causes[0]))

static uint8_t index_of(const char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; name && i < n; i++)
		if (!strcmp(names[i], name))
			return (uint8_t)i;
	return 0;
}

static void slow_io(struct ts_snap *s, struct ts_slow_rank *r)
{
	uint8_t cause = index_of(causes, NCAUSES, r->cause);
	uint8_t metric = index_of(ts_metric_names, TS_M_COUNT, r->metric);

	TS_SNAP_VAR(s, *r);
	TS_SNAP_VAR(s, cause);
	TS_SNAP_VAR(s, metric);
	if (cause >= NCAUSES || metric >= TS_M_COUNT)
		s->err = -EBADMSG;
	if (!s->err) {
		r->cause = causes[cause];
		r->metric = ts_metric_names[metric];
	}
}

static void ksigma_io(struct ts_snap *s, struct ts_ksigma *k)
{
	int cap = k->cap, n = k->n, next = k->next;

	TS_SNAP_VAR(s, cap);
	TS_SNAP_VAR(s, n);
	TS_SNAP_VAR(s, next);
	if (cap != k->cap || n < 0 || n > cap || next < 0 || next >= cap) {
		s->err = s->err ? s->err : -EBADMSG;
		return;
	}
	k->n = n, k->next = next;
	TS_SNAP_ARR(s, k->win, cap);
}

/* Every array sized by the world, the rows and the fail-slow history. */
static void arrays_io(struct ts_snap *s, struct ts_job *j)
{
	size_t n = (size_t)j->world, nm = n * TS_M_COUNT, w = (size_t)j->p.space_window;
	int fw = j->p.fs.steps_window_size > 0 ? j->p.fs.steps_window_size : 1;

	for (int i = 0; i < j->cap; i++) {
		struct row *r = &j->rows[i];
		TS_SNAP_VAR(s, r->step);
		TS_SNAP_VAR(s, r->used);
		TS_SNAP_VAR(s, r->count);
		TS_SNAP_VAR(s, r->end_max);
		TS_SNAP_VAR(s, r->first_ns);
		TS_SNAP_ARR(s, r->have, n);
		TS_SNAP_ARR(s, r->m, nm);
		TS_SNAP_ARR(s, r->step_ms, n);
	}
	TS_SNAP_ARR(s, j->meta, n);
	TS_SNAP_ARR(s, j->hist, nm * w);
	for (size_t i = 0; i < nm; i++)
		ksigma_io(s, &j->ks[i]);
	TS_SNAP_ARR(s, j->dir, nm);
	TS_SNAP_ARR(s, j->tdir, nm);
	TS_SNAP_ARR(s, j->hits, nm);
	TS_SNAP_ARR(s, j->misses, nm);
	TS_SNAP_ARR(s, j->alarm, nm);
	TS_SNAP_ARR(s, j->since, nm);
	TS_SNAP_ARR(s, j->win_median, nm);
	TS_SNAP_ARR(s, j->hit_value, nm);
	TS_SNAP_ARR(s, j->hit_median, nm);
	TS_SNAP_ARR(s, j->judged_sample, nm);
	TS_SNAP_ARR(s, j->chg, nm);
	TS_SNAP_ARR(s, j->ehist, nm * w);
	TS_SNAP_ARR(s, j->base, nm);
	for (int i = 0; i < j->res.nslow; i++)
		slow_io(s, &j->res.slow[i]);
	TS_SNAP_ARR(s, j->res.ever_alarmed, n);
	TS_SNAP_ARR(s, j->fs.hist, j->fs.hcap);
	TS_SNAP_ARR(s, j->fs.win, fw);
	TS_SNAP_ARR(s, j->fs.done, fw);
	ts_job_net_io(s, j);
}

int ts_job_save(struct ts_job *j, struct ts_snap *s)
{
	TS_SNAP_VAR(s, *j); /* its pointers are meaningless once read back: load remakes them */
	arrays_io(s, j);
	return s->err;
}

static bool pow2(int v) { return v > 0 && !(v & (v - 1)); }

/* The struct as saved, with every pointer it holds dropped: they point into the
 * process that wrote it (sends between ranks, j->links, are not saved: they are
 * learned again). */
static void adopt_scalars(struct ts_job *j, const struct ts_job *saved)
{
	*j = *saved;
	j->rows = NULL, j->meta = NULL, j->hist = NULL, j->ks = NULL, j->dir = NULL;
	j->tdir = NULL, j->hits = NULL, j->misses = NULL, j->alarm = NULL, j->since = NULL;
	j->win_median = NULL, j->hit_value = NULL, j->hit_median = NULL, j->judged_sample = NULL;
	j->scratch = NULL, j->vals = NULL, j->outl = NULL;
	j->chg = NULL, j->ehist = NULL, j->base = NULL, j->order = NULL, j->cstart = NULL;
	j->class_wait = NULL;
	j->res.slow = NULL, j->res.ever_alarmed = NULL;
	j->net = NULL, j->links = NULL;
	j->fs.hist = NULL, j->fs.win = NULL, j->fs.done = NULL;
	j->world = 0;
}

/* Sizes the job as the snapshot says; ts_job_size_world resets what it sizes, so the
 * saved positions are put back afterwards. */
static int remake(struct ts_job *j, const struct ts_job *saved)
{
	struct ts_failslow fs = saved->fs;

	if (ts_failslow_init(&j->fs, &j->p.fs) || ts_job_size_world(j, saved->world))
		return -ENOMEM;
	if (fs.hcap != j->fs.hcap)
		return -EBADMSG;
	fs.hist = j->fs.hist, fs.win = j->fs.win, fs.done = j->fs.done;
	j->fs = fs;
	j->hist_n = saved->hist_n, j->hist_next = saved->hist_next;
	memcpy(j->step_hist, saved->step_hist, sizeof(j->step_hist));
	j->res.hang_rank = saved->res.hang_rank;
	j->res.hang_stacks_rank = saved->res.hang_stacks_rank;
	memcpy(j->sigma, saved->sigma, sizeof(j->sigma));
	j->sigma_at = saved->sigma_at;
	return 0;
}

/* Silence before the restart is the analyzer's, not the job's: the clocks that judge
 * a hang or a lost rank start again now. */
static void restart_clocks(struct ts_job *j, uint64_t now_ns)
{
	if (j->last_progress_ns)
		j->last_progress_ns = now_ns;
	j->last_data_ns = now_ns;
	for (int k = 0; k < j->world; k++)
		if (j->meta[k].watched_ns)
			j->meta[k].watched_ns = now_ns;
}

int ts_job_load(struct ts_job **out, struct ts_snap *s, int max_world, uint64_t now_ns)
{
	struct ts_job *saved = calloc(1, sizeof(*saved)), *j = calloc(1, sizeof(*j));
	int err = -ENOMEM;

	if (!saved || !j)
		goto fail;
	TS_SNAP_VAR(s, *saved);
	err = s->err ? s->err : -EBADMSG;
	if (s->err || saved->world < 1 || saved->world > max_world || !pow2(saved->cap) ||
	    saved->cap > 65536 || saved->res.nslow < 0 || saved->res.nslow > saved->world ||
	    saved->p.space_window < 1 || saved->hist_next < 0 ||
	    saved->hist_next >= saved->p.space_window)
		goto fail;
	adopt_scalars(j, saved);
	if ((err = remake(j, saved)))
		goto fail;
	arrays_io(s, j);
	if ((err = s->err))
		goto fail;
	ts_job_group_ranks(j); /* peer classes from the restored layout and ranks */
	restart_clocks(j, now_ns);
	free(saved);
	*out = j;
	return 0;
fail:
	free(saved);
	if (j && j->world)
		ts_job_free(j);
	else
		free(j);
	return err;
}

uint64_t ts_job_snap_layout(void)
{
	uint64_t v[] = { sizeof(struct ts_job), sizeof(struct row), sizeof(struct ts_rank_meta),
			 sizeof(struct ts_slow_rank), sizeof(struct ts_params), TS_M_COUNT,
			 sizeof(struct ts_change), sizeof(struct ts_event), 4 };
	return ts_fnv1a(v, sizeof(v));
}
