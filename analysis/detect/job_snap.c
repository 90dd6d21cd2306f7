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
	struct ts_slow_rank rec;

	/* saved without the pointers: equal names may sit apart (a sanitizer's build) */
	memcpy(&rec, r, sizeof(rec));
	rec.cause = rec.metric = NULL;
	TS_SNAP_VAR(s, rec);
	TS_SNAP_VAR(s, cause);
	TS_SNAP_VAR(s, metric);
	if (cause >= NCAUSES || metric >= TS_M_COUNT)
		s->err = -EBADMSG;
	if (!s->err && ts_snap_loading(s)) {
		*r = rec;
		r->cause = causes[cause];
		r->metric = ts_metric_names[metric];
	}
}

static void ksigma_io(struct ts_snap *s, struct ts_ksigma *k)
{
	int v[3] = { k->cap, k->n, k->next }; /* in one call: a job holds millions of these */

	TS_SNAP_VAR(s, v);
	if (v[0] != k->cap || v[1] < 0 || v[1] > v[0] || v[2] < 0 || v[2] >= v[0]) {
		s->err = s->err ? s->err : -EBADMSG;
		return;
	}
	k->n = v[1], k->next = v[2];
	TS_SNAP_ARR(s, k->win, v[0]);
}

/* A row that holds no step is saved as zeros: what its last step left is never read
 * again, and a delta then pays nothing for the steps that came and went. */
static void row_io(struct ts_snap *s, struct row *r, size_t n)
{
	void (*io)(struct ts_snap *, void *, size_t) =
		ts_snap_loading(s) || r->used ? ts_snap_io : ts_snap_dead;

	io(s, &r->step, sizeof(r->step));
	TS_SNAP_VAR(s, r->used);
	io(s, &r->count, sizeof(r->count));
	io(s, &r->end_max, sizeof(r->end_max));
	io(s, &r->first_ns, sizeof(r->first_ns));
	io(s, r->have, n);
	io(s, r->m, n * TS_M_COUNT * sizeof(*r->m));
	io(s, r->step_ms, n * sizeof(*r->step_ms));
}

/* Every array sized by the world, the rows and the fail-slow history. */
static void arrays_io(struct ts_snap *s, struct ts_job *j)
{
	size_t n = (size_t)j->world, nm = n * TS_M_COUNT, w = (size_t)j->p.space_window;
	int fw = j->p.fs.steps_window_size > 0 ? j->p.fs.steps_window_size : 1;

	for (int i = 0; i < j->cap; i++)
		row_io(s, &j->rows[i], n);
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
	TS_SNAP_ARR(s, j->felt, nm);
	TS_SNAP_ARR(s, j->felt_busy, n);
	TS_SNAP_ARR(s, j->felt_of, nm);
	for (int i = 0; i < j->res.nslow; i++)
		slow_io(s, &j->res.slow[i]);
	TS_SNAP_ARR(s, j->res.ever_alarmed, n);
	TS_SNAP_ARR(s, j->fs.hist, j->fs.hcap);
	TS_SNAP_ARR(s, j->fs.win, fw);
	TS_SNAP_ARR(s, j->fs.done, fw);
	ts_job_net_io(s, j);
}

/* The pointers a job holds: meaningless once read back (load remakes them), and saved
 * as NULL so that one that moves costs a delta nothing. */
static void drop_pointers(struct ts_job *j)
{
	j->rows = NULL, j->meta = NULL, j->hist = NULL, j->ks = NULL, j->dir = NULL;
	j->tdir = NULL, j->hits = NULL, j->misses = NULL, j->alarm = NULL, j->since = NULL;
	j->win_median = NULL, j->hit_value = NULL, j->hit_median = NULL, j->judged_sample = NULL;
	j->scratch = NULL, j->vals = NULL, j->outl = NULL;
	j->chg = NULL, j->ehist = NULL, j->base = NULL, j->order = NULL, j->cstart = NULL;
	j->class_wait = NULL, j->felt = NULL, j->felt_busy = NULL, j->felt_of = NULL;
	j->res.slow = NULL, j->res.ever_alarmed = NULL;
	j->net = NULL, j->links = NULL;
	j->fs.hist = NULL, j->fs.win = NULL, j->fs.done = NULL;
}

int ts_job_save(struct ts_job *j, struct ts_snap *s)
{
	struct ts_job *head = malloc(sizeof(*head));

	if (!head)
		return s->err = -ENOMEM;
	memcpy(head, j, sizeof(*head)); /* its padding too: an assignment may leave it be */
	drop_pointers(head);
	head->now_ns = 0; /* the last tick's time is the analyzer's: load sets it anew */
	TS_SNAP_VAR(s, *head);
	free(head);
	arrays_io(s, j);
	return s->err;
}

static bool pow2(int v) { return v > 0 && !(v & (v - 1)); }

/* The struct as saved, with every pointer it holds dropped: a single-blob snapshot
 * holds those of the process that wrote it (sends between ranks, j->links, are not
 * saved: they are learned again). */
static void adopt_scalars(struct ts_job *j, const struct ts_job *saved)
{
	*j = *saved;
	drop_pointers(j);
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
	/* sizing the world forgets the named ranks; the saved ones are read back next */
	j->res.nslow = saved->res.nslow;
	memcpy(j->res.summary, saved->res.summary, sizeof(j->res.summary));
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
	j->now_ns = now_ns;
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
