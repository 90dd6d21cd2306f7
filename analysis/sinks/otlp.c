// SPDX-License-Identifier: Apache-2.0
/* What becomes a span: windows of steps as traces, sampling, the per-trace budget. */
#include "otlp_impl.h"
#include "analysis/detect/traceid.h"
#include "hash.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A window's root span: its id follows from its trace, so children and the next
 * window's link need no memory of it. */
static void root_id(const uint8_t trace[16], uint8_t out[8])
{
	uint64_t a, b;

	memcpy(&a, trace, 8);
	memcpy(&b, trace + 8, 8);
	a = ts_splitmix64(a ^ b ^ 0x77696e646f77ull) | 1;
	memcpy(out, &a, 8);
}

/* ---- the queue ------------------------------------------------------------------- */

/* Caller holds the lock. A full queue drops its oldest span. */
static struct qspan *slot(struct ts_otlp *x)
{
	struct qspan *s;

	if (x->count == x->o.max_queue) {
		x->head = (x->head + 1) % x->o.max_queue;
		x->count--;
		x->st.dropped++;
	}
	s = &x->q[(x->head + x->count++) % x->o.max_queue];
	memset(s, 0, sizeof(*s));
	x->st.queued++;
	uint64_t id = ts_splitmix64(++x->next_id ^ (uint64_t)(uintptr_t)x) | 1;
	memcpy(s->id, &id, 8);
	return s;
}

static void who_into(struct qspan *s, const struct ts_otlp_who *w, const uint8_t trace[16])
{
	memcpy(s->trace, trace, 16);
	snprintf(s->ns, sizeof(s->ns), "%s", w->ns ? w->ns : "");
	snprintf(s->job, sizeof(s->job), "%s", w->job ? w->job : "");
	snprintf(s->pod, sizeof(s->pod), "%s", w->pod ? w->pod : "");
	snprintf(s->node, sizeof(s->node), "%s", w->node ? w->node : "");
	s->rank = w->rank;
}

/* Caller holds the lock. A span under the root of the window whose trace it is in. */
static struct qspan *window_child(struct ts_otlp *x, const struct ts_otlp_who *who,
				  const uint8_t trace[16], enum qkind kind, const char *name)
{
	struct qspan *s = slot(x);

	who_into(s, who, trace);
	s->kind = kind;
	snprintf(s->name, sizeof(s->name), "%s", name);
	root_id(trace, s->parent);
	s->has_parent = true;
	return s;
}

/* Bytes a span adds to its trace at a backend, over-estimated: its resource counted
 * with every step, as a batch may cut anywhere. */
static size_t resource_bytes(const struct ts_otlp *x, const struct ts_otlp_who *w)
{
	size_t n = 320 + x->resource_len;

	n += w->ns ? 3 * strlen(w->ns) : 0;
	n += w->job ? 3 * strlen(w->job) : 0;
	n += w->pod ? 2 * strlen(w->pod) : 0;
	n += w->node ? strlen(w->node) : 0;
	return n;
}

static size_t span_bytes(const char *name)
{
	return 120 + strlen(name);
}

/* ---- jobs and their windows -------------------------------------------------------- */

static struct ojob *find_job(struct ts_otlp *x, const char *ns, const char *job)
{
	for (int i = 0; i < x->njobs; i++)
		if (!strcmp(x->jobs[i].ns, ns ? ns : "") && !strcmp(x->jobs[i].job, job ? job : ""))
			return &x->jobs[i];
	return NULL;
}

static void close_window(struct ts_otlp *x, struct ojob *j, struct owin *win)
{
	struct qspan *s;
	uint8_t prev[16];

	if (win->w < 0)
		return;
	pthread_mutex_lock(&x->lock);
	s = slot(x);
	s->kind = Q_WINDOW;
	s->rank = -1;
	snprintf(s->ns, sizeof(s->ns), "%s", j->ns);
	snprintf(s->job, sizeof(s->job), "%s", j->job);
	ts_window_trace(j->base, (uint64_t)win->w, s->trace);
	root_id(s->trace, s->id);
	if (win->w > 0) {
		ts_window_trace(j->base, (uint64_t)win->w - 1, prev);
		memcpy(s->link_trace, prev, 16);
		root_id(prev, s->link_span);
		s->has_link = true;
	}
	snprintf(s->name, sizeof(s->name), "train.window");
	s->start = win->start;
	s->end = win->end > win->start ? win->end : win->start + 1;
	s->attr[0] = win->w;
	s->attr[1] = (int64_t)win->first_step;
	s->attr[2] = (int64_t)win->last_step;
	s->attr[3] = j->nranks;
	s->attr[4] = (int64_t)win->sampled_out;
	s->attr[5] = (int64_t)win->over_size;
	s->has_lost = win->has_lost;
	s->lost = win->lost;
	if ((s->error = win->errors > 0))
		snprintf(s->status, sizeof(s->status), "%llu steps of ranks named slow",
			 (unsigned long long)win->errors);
	x->st.windows++;
	pthread_mutex_unlock(&x->lock);
	win->w = -1;
}

static void end_job(struct ts_otlp *x, struct ojob *j)
{
	close_window(x, j, &j->win[0]);
	close_window(x, j, &j->win[1]);
	free(j->named);
	*j = x->jobs[--x->njobs];
}

/* The job's state, made on first sight; a new attempt (another base trace) starts over. */
static struct ojob *job_of(struct ts_otlp *x, const struct ts_otlp_who *who, const uint8_t *base)
{
	static const uint8_t zero[16];
	struct ojob *j = find_job(x, who->ns, who->job);

	if (j && base && memcmp(j->base, zero, 16) && memcmp(j->base, base, 16)) {
		end_job(x, j);
		j = NULL;
	}
	if (!j) {
		struct ojob *nj = realloc(x->jobs, (size_t)(x->njobs + 1) * sizeof(*nj));
		if (!nj)
			return NULL;
		x->jobs = nj;
		j = &x->jobs[x->njobs++];
		memset(j, 0, sizeof(*j));
		snprintf(j->ns, sizeof(j->ns), "%s", who->ns ? who->ns : "");
		snprintf(j->job, sizeof(j->job), "%s", who->job ? who->job : "");
		j->win[0].w = j->win[1].w = -1;
	}
	if (base && !memcmp(j->base, zero, 16))
		memcpy(j->base, base, 16);
	return j;
}

/* Window w's slot; the window two back is closed to make room. NULL: w was closed. */
static struct owin *window(struct ts_otlp *x, struct ojob *j, uint64_t w)
{
	struct owin *win = &j->win[w & 1];

	if (win->w == (int64_t)w)
		return win;
	if (win->w > (int64_t)w)
		return NULL;
	close_window(x, j, win);
	memset(win, 0, sizeof(*win));
	win->w = (int64_t)w;
	win->first_step = UINT64_MAX;
	return win;
}

static const struct onamed *named(const struct ojob *j, int rank)
{
	for (int i = 0; i < j->nnamed; i++)
		if (j->named[i].rank == rank)
			return &j->named[i];
	return NULL;
}

/* A contiguous block of sample_ranks ranks, moved on by that much each window. */
static bool sampled(const struct ts_otlp *x, const struct ojob *j, int rank, uint64_t w)
{
	uint64_t n = (uint64_t)j->nranks, s = (uint64_t)x->o.sample_ranks;

	if (x->o.sample_ranks < 0 || n <= s || rank < 0)
		return true;
	return ((uint64_t)rank + n - (w * s) % n) % n < s;
}

static void count(struct ts_otlp *x, uint64_t *stat, uint64_t n)
{
	pthread_mutex_lock(&x->lock);
	*stat += n;
	pthread_mutex_unlock(&x->lock);
}

void ts_otlp_step(struct ts_otlp *x, const struct ts_otlp_who *who, const uint8_t base_trace[16],
		  uint64_t step, uint64_t start_ns, uint64_t end_ns,
		  const struct ts_otlp_phase *phases, int nphases)
{
	struct ojob *j = job_of(x, who, base_trace);
	uint64_t w = step / (uint64_t)x->o.window_steps, at = start_ns;
	struct owin *win;
	const struct onamed *nm;
	uint8_t trace[16], parent[8];
	size_t est;
	int nspans = 1;

	if (!j) {
		count(x, &x->st.dropped, 1);
		return;
	}
	if (who->rank >= j->nranks)
		j->nranks = who->rank + 1;
	if (!(win = window(x, j, w))) {
		count(x, &x->st.late, 1);
		return;
	}
	nm = named(j, who->rank);
	if (!nm && !sampled(x, j, who->rank, w)) {
		win->sampled_out++;
		count(x, &x->st.sampled_out, 1);
		return;
	}
	est = resource_bytes(x, who) + span_bytes("train.step");
	for (int i = 0; i < nphases; i++)
		if (phases[i].ns) {
			est += span_bytes(phases[i].name) + 12;
			nspans++;
		}
	if (win->bytes + est > (size_t)x->o.max_trace_kb * 1024) {
		win->over_size += (uint64_t)nspans;
		count(x, &x->st.over_size, (uint64_t)nspans);
		return;
	}
	win->bytes += est;
	win->start = win->start && win->start < start_ns ? win->start : start_ns;
	win->end = win->end > end_ns ? win->end : end_ns;
	win->first_step = win->first_step < step ? win->first_step : step;
	win->last_step = win->last_step > step ? win->last_step : step;
	win->errors += nm != NULL;

	ts_window_trace(j->base, w, trace);
	pthread_mutex_lock(&x->lock);
	struct qspan *p = window_child(x, who, trace, Q_STEP, "train.step");
	p->start = start_ns;
	p->end = end_ns;
	p->attr[0] = (int64_t)step;
	if ((p->error = nm != NULL))
		snprintf(p->status, sizeof(p->status), "rank named slow (%s)", nm->cause);
	memcpy(parent, p->id, 8);
	for (int i = 0; i < nphases; i++) {
		if (!phases[i].ns)
			continue;
		struct qspan *c = slot(x);
		who_into(c, who, trace);
		c->kind = Q_PHASE;
		snprintf(c->name, sizeof(c->name), "train.phase.%s", phases[i].name);
		memcpy(c->parent, parent, 8);
		c->has_parent = true;
		c->start = at;
		c->end = at + phases[i].ns;
		c->attr[0] = (int64_t)step;
		at = c->end;
	}
	if (x->count >= x->o.batch)
		pthread_cond_signal(&x->wake);
	pthread_mutex_unlock(&x->lock);
}

static void add_named(struct ojob *j, int rank, const char *cause)
{
	struct onamed *n;

	if (named(j, rank))
		return;
	if (j->nnamed == j->capnamed) {
		int cap = j->capnamed ? 2 * j->capnamed : 8;
		if (!(n = realloc(j->named, (size_t)cap * sizeof(*n))))
			return; /* its steps stay sampled like the others' */
		j->named = n;
		j->capnamed = cap;
	}
	n = &j->named[j->nnamed++];
	n->rank = rank;
	snprintf(n->cause, sizeof(n->cause), "%s", cause ? cause : "");
}

void ts_otlp_slow_rank(struct ts_otlp *x, const struct ts_otlp_who *who, const uint8_t trace[16],
		       uint64_t since_ns, uint64_t now_ns, const char *cause, const char *evidence)
{
	struct ojob *j = job_of(x, who, NULL);
	struct qspan *s;

	if (j)
		add_named(j, who->rank, cause);
	pthread_mutex_lock(&x->lock);
	s = window_child(x, who, trace, Q_SLOW, "slow_rank");
	s->start = since_ns;
	s->end = now_ns > since_ns ? now_ns : since_ns + 1;
	s->error = true;
	snprintf(s->cause, sizeof(s->cause), "%s", cause ? cause : "");
	snprintf(s->evidence, sizeof(s->evidence), "%s", evidence ? evidence : "");
	snprintf(s->status, sizeof(s->status), "rank %d slow: %s", who->rank, s->cause);
	pthread_mutex_unlock(&x->lock);
}

void ts_otlp_lost_time(struct ts_otlp *x, const char *ns, const char *job,
		       const struct ts_otlp_lost *l)
{
	struct ojob *j = find_job(x, ns, job);
	uint64_t w = l->to_step / (uint64_t)x->o.window_steps;

	if (j && j->win[w & 1].w == (int64_t)w) {
		j->win[w & 1].has_lost = true;
		j->win[w & 1].lost = *l;
	}
}

void ts_otlp_job_end(struct ts_otlp *x, const char *ns, const char *job)
{
	struct ojob *j = find_job(x, ns, job);

	if (j)
		end_job(x, j);
}

void ts_otlp_get_stats(struct ts_otlp *x, struct ts_otlp_stats *out)
{
	pthread_mutex_lock(&x->lock);
	*out = x->st;
	pthread_mutex_unlock(&x->lock);
}

int ts_otlp_new(struct ts_otlp **out, const struct ts_otlp_opts *o, char *err, size_t errlen)
{
	struct ts_otlp *x = calloc(1, sizeof(*x));
	int rc;

	if (!x)
		return -ENOMEM;
	x->o = *o;
	if (x->o.max_queue <= 0)
		x->o.max_queue = 65536;
	if (x->o.batch <= 0 || x->o.batch > x->o.max_queue)
		x->o.batch = x->o.max_queue < 2048 ? x->o.max_queue : 2048;
	if (x->o.flush_ms <= 0)
		x->o.flush_ms = 1000;
	if (x->o.max_retries < 0)
		x->o.max_retries = 0;
	else if (!x->o.max_retries)
		x->o.max_retries = 5;
	if (x->o.timeout_ms <= 0)
		x->o.timeout_ms = 10000;
	if (x->o.window_steps <= 0)
		x->o.window_steps = 100;
	if (!x->o.sample_ranks)
		x->o.sample_ranks = 8;
	if (x->o.max_trace_kb <= 0)
		x->o.max_trace_kb = 4096;
	if ((rc = ts_otlp_start(x, err, errlen))) {
		free(x);
		return rc;
	}
	*out = x;
	return 0;
}

void ts_otlp_free(struct ts_otlp *x)
{
	if (!x)
		return;
	while (x->njobs)
		end_job(x, &x->jobs[x->njobs - 1]);
	free(x->jobs);
	ts_otlp_stop(x);
	free(x);
}
