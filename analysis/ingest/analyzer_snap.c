// SPDX-License-Identifier: Apache-2.0
/* The analyzer's state in snapshots (snap.h), and back. In one blob (the format of
 * earlier builds, still read): a header, every producer's sequence state, and each job
 * (job_snap.c). In parts, each stored apart (snapstate.c): the producers' table as it
 * is in memory, and each job. A job read back joins the table like a new one, within
 * today's limits. */
#include "analyzer_impl.h"
#include "analysis/detect/snap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SNAP_MAGIC 0x3150414e53535400ull /* "\0TSSNAP1" */

struct snap_head {
	uint64_t magic, layout, stream_seq, nprod;
	int32_t njobs, pad;
};

static uint64_t snap_layout(void)
{
	return ts_job_snap_layout() ^ (sizeof(struct producer) << 48);
}

uint64_t ts_analyzer_snap_layout(void)
{
	return snap_layout();
}

struct ts_job *ts_analyzer_job_at(struct ts_analyzer *a, int i)
{
	return i >= 0 && i < a->njobs ? a->jobs[i] : NULL;
}

/* Loading: a table of cap places (a power of two) replaces the empty one. */
static int producers_table(struct ts_analyzer *a, struct ts_snap *s, uint64_t cap)
{
	struct producer *t;

	if (s->err || cap < 2 || (cap & (cap - 1)) || cap > (s->len - s->off) / sizeof(*t))
		return s->err ? s->err : -EBADMSG;
	if (!(t = calloc(cap, sizeof(*t))))
		return -ENOMEM;
	free(a->prod);
	a->prod = t;
	a->capprod = cap;
	return 0;
}

int ts_analyzer_producers_io(struct ts_analyzer *a, struct ts_snap *s)
{
	uint64_t cap = a->capprod;
	int err;

	TS_SNAP_VAR(s, cap);
	if (ts_snap_loading(s) && (err = producers_table(a, s, cap)))
		return s->err = err;
	TS_SNAP_ARR(s, a->prod, a->capprod);
	if (ts_snap_loading(s)) {
		a->nprod = 0;
		for (size_t i = 0; i < a->capprod; i++)
			a->nprod += a->prod[i].used;
	}
	return s->err;
}

int ts_analyzer_save(struct ts_analyzer *a, uint64_t stream_seq, struct ts_buf *out)
{
	struct snap_head h = { SNAP_MAGIC, snap_layout(), stream_seq, a->nprod, a->njobs, 0 };
	struct ts_snap s = { .out = out };

	TS_SNAP_VAR(&s, h);
	for (size_t i = 0; i < a->capprod && !s.err; i++)
		if (a->prod[i].used)
			TS_SNAP_VAR(&s, a->prod[i]);
	for (int i = 0; i < a->njobs && !s.err; i++)
		ts_job_save(a->jobs[i], &s);
	return s.err;
}

/* A job read back joins the table like a new one, within today's limits: 0, or -ERANGE
 * or -ENOMEM (refused: counted, the caller frees it). */
static int adopt_job(struct ts_analyzer *a, struct ts_job *j)
{
	const char *ns = ts_job_ns(j), *name = ts_job_name(j);

	if (a->njobs >= a->opts.params.limits.max_jobs)
		return ts_analyzer_over_limit(a, L_JOBS, ns, name, "a job from the snapshot");
	if (ts_analyzer_jobs_reserve(a))
		return -ENOMEM;
	if (ts_analyzer_budget_world(a, NULL, ts_job_world(j), ns, name))
		return -ERANGE;
	a->dirty[a->njobs] = true;
	a->jobs[a->njobs++] = j;
	return 0;
}

static int restore_body(struct ts_analyzer *a, struct ts_snap *s, const struct snap_head *h,
			uint64_t now_ns)
{
	for (uint64_t i = 0; i < h->nprod && !s->err; i++) {
		struct producer p = { 0 }, *q;
		TS_SNAP_VAR(s, p);
		if (!s->err && !(q = ts_analyzer_producer(a, p.id)))
			return -ENOMEM;
		if (!s->err)
			*q = p;
	}
	for (int i = 0; i < h->njobs && !s->err; i++) {
		struct ts_job *j;
		int err = ts_job_load(&j, s, a->opts.params.limits.max_world, now_ns);
		if (err)
			return err;
		if (adopt_job(a, j))
			ts_job_free(j);
	}
	return s->err;
}

int ts_analyzer_restore_job(struct ts_analyzer *a, const void *data, size_t len,
			    uint64_t now_ns)
{
	struct ts_snap s = { .in = data, .len = len };
	struct ts_job *j;
	int err = ts_job_load(&j, &s, a->opts.params.limits.max_world, now_ns);

	if (err)
		return err;
	if (s.off != s.len) {
		ts_job_free(j);
		return -EBADMSG;
	}
	if (adopt_job(a, j)) {
		ts_job_free(j);
		return 1;
	}
	return 0;
}

void ts_analyzer_clear(struct ts_analyzer *a)
{
	for (int i = 0; i < a->njobs; i++) /* never reported: dropped without a word */
		ts_job_free(a->jobs[i]);
	a->njobs = 0;
	a->job_bytes = 0;
	memset(a->prod, 0, a->capprod * sizeof(*a->prod));
	a->nprod = 0;
}

int ts_analyzer_restore(struct ts_analyzer *a, const void *data, size_t len, uint64_t now_ns,
			uint64_t *stream_seq)
{
	struct ts_snap s = { .in = data, .len = len };
	struct snap_head h = { 0 };
	int err;

	if (a->njobs || a->nprod)
		return -EBUSY;
	TS_SNAP_VAR(&s, h);
	if (s.err || h.magic != SNAP_MAGIC || h.njobs < 0)
		return -EBADMSG;
	if (h.layout != snap_layout())
		return -EPROTO;
	if ((err = restore_body(a, &s, &h, now_ns)) || s.off != s.len) {
		ts_analyzer_clear(a);
		return err ? err : -EBADMSG;
	}
	*stream_seq = h.stream_seq;
	return 0;
}
