// SPDX-License-Identifier: Apache-2.0
/* The Communication cause. In a collective every member waits for the last one to
 * enter, so a rank's time in a communicator is transfer plus waiting; the member that
 * came last waited least, and the smallest time over the members is the transfer time.
 * A slow rank does not move it (it is the one that came last); a slow link, NIC or
 * switch does. Each communicator's transfer time (scaled to its baseline's bytes) is
 * judged against its own baseline (as a share of it) with the ranks' CUSUM (change.h); the
 * alarmed communicators are placed (job_net_place.c): the one node all of them go through while the
 * node's other inter-node communicators are fine, a node pair, or the job's network as
 * a whole (every communicator slower, or no node in common): FailSlow with cause
 * Communication and no rank blamed. The agent's TCP retransmits per node are evidence,
 * and name the node when the communicators cannot (one communicator over all nodes).
 * No verdict is raised for transfers that cost the job no step time (waits that follow
 * data-dependent work, overlapped transfers), nor for communicators that all hold one
 * rank already found slow: its slower GPU explains them (one cause, one verdict). */
#include "hash.h"
#include "job_net_impl.h"
#include "log.h"
#include "snap.h"
#include "stats.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const ts_net_scope_names[4] = { "", "Node", "Link", "Job" };

#define MIN_SIGMA_SAMPLES 8

static int max_comms(int world)
{
	return world > INT_MAX - 64 ? INT_MAX : world + 64; /* ts_job_bytes asks of any world */
}

size_t ts_job_net_bytes(const struct ts_params *p, int world)
{
	(void)p;
	return (size_t)max_comms(world) * (sizeof(struct comm) + 2 * sizeof(int) + sizeof(double));
}

void ts_job_net_free(struct ts_job *j)
{
	struct ts_net *n = j->net;

	if (!n)
		return;
	free(n->c), free(n->index), free(n->tmp), free(n->pairs), free(n->node_of);
	free(n->touch_a), free(n->touch_h), free(n->names);
	free(n);
	j->net = NULL;
}

int ts_job_net_find(const struct ts_net *n, uint64_t id)
{
	for (int h = (int)(ts_mix64(id) & (uint64_t)(n->icap - 1)), i = 0; n->icap && i < n->icap;
	     h = (h + 1) & (n->icap - 1), i++) {
		if (n->index[h] < 0)
			return -1;
		if (n->c[n->index[h]].id == id)
			return n->index[h];
	}
	return -1;
}

static void index_put(struct ts_net *n, int at)
{
	int h = (int)(ts_mix64(n->c[at].id) & (uint64_t)(n->icap - 1));

	while (n->index[h] >= 0)
		h = (h + 1) & (n->icap - 1);
	n->index[h] = at;
}

static int grow(struct ts_net *n)
{
	int cap = n->cap ? 2 * n->cap : 16, icap = 4 * cap;
	struct comm *c = realloc(n->c, (size_t)cap * sizeof(*c));
	int *index = malloc((size_t)icap * sizeof(int));
	double *tmp = realloc(n->tmp, ((size_t)cap + 2 * WMAX) * sizeof(double));

	if (c)
		n->c = c;
	if (tmp)
		n->tmp = tmp;
	if (!c || !index || !tmp) {
		free(index);
		return -ENOMEM;
	}
	free(n->index);
	n->index = index, n->icap = icap, n->cap = cap;
	for (int i = 0; i < icap; i++)
		index[i] = -1;
	for (int i = 0; i < n->n; i++)
		index_put(n, i);
	return 0;
}

/* The communicator's entry, made on first sight; NULL past the job's bound. */
static struct comm *comm_get(struct ts_job *j, uint64_t id, uint32_t nranks)
{
	struct ts_net *n = j->net;
	int at = ts_job_net_find(n, id);

	if (at >= 0)
		return &n->c[at];
	if (n->n >= max_comms(j->world) || (n->n == n->cap && grow(n)))
		return NULL;
	struct comm *c = &n->c[n->n];
	memset(c, 0, sizeof(*c));
	c->id = id;
	c->nranks = nranks;
	c->base_ms = c->base_mb = NAN;
	index_put(n, n->n++);
	return c;
}

int ts_job_net_add(struct ts_job *j, int rank, const struct ts_rank_step *s)
{
	if (!s->ncomm)
		return 0;
	if (!j->net && !(j->net = calloc(1, sizeof(*j->net))))
		return -ENOMEM;
	for (int i = 0; i < s->ncomm && i < TS_STEP_COMMS; i++) {
		const struct ts_comm_time *t = &s->comm[i];
		struct comm *c = comm_get(j, t->id, t->nranks);
		if (!c || !t->count)
			continue;
		if (t->id && ts_rank_add_comm(&j->meta[rank], t->id))
			j->classes_dirty = true;
		if (t->p2p && !c->p2p)
			c->p2p = j->classes_dirty = true;
		struct slot *sl = &c->ring[s->step % RING];
		if (sl->step != (uint32_t)s->step || !sl->n)
			*sl = (struct slot){ .step = (uint32_t)s->step, .ms = INFINITY };
		sl->n++;
		if (t->ms < sl->ms)
			sl->ms = (float)t->ms, sl->mb = (float)t->mb;
	}
	return 0;
}

bool ts_job_net_p2p(const struct ts_job *j, uint64_t id)
{
	int at = j->net ? ts_job_net_find(j->net, id) : -1;

	return at >= 0 && j->net->c[at].p2p;
}

/* Members a communicator needs at a step for its smallest time to be the transfer. */
static uint32_t quorum(const struct ts_job *j, const struct comm *c)
{
	uint32_t size = c->id && c->nranks ? c->nranks : (uint32_t)j->world;

	return size < 2 ? 2 : (size + 1) / 2;
}

/* The baseline from the first window: the median payload, and the median time with
 * every step scaled to that payload. */
static void learn_base(struct ts_net *n, struct comm *c, int w)
{
	double *v = n->tmp, *tmp = n->tmp + WMAX;

	for (int i = 0; i < w; i++)
		v[i] = c->mb[i];
	c->base_mb = (float)ts_median(v, (size_t)w, tmp);
	for (int i = 0; i < w; i++) {
		if (c->mb[i] > 0 && c->base_mb > 0)
			c->t[i] *= c->base_mb / c->mb[i];
		v[i] = c->t[i];
	}
	c->base_ms = (float)ts_median(v, (size_t)w, tmp);
	for (int i = 0; i < w; i++)
		c->e[i] = c->t[i] / c->base_ms - 1;
}

/* The job's noise: the median over communicators of each one's robust sigma of its
 * excess, relearned every window_step steps. */
static void learn_sigma(struct ts_job *j, int w)
{
	struct ts_net *n = j->net;
	double *v = n->tmp + 2 * WMAX, *win = n->tmp, *tmp = n->tmp + WMAX;
	int got = 0;

	if (n->sigma_at && j->res.steps_evaluated < n->sigma_at + (uint64_t)j->p.space_window_step)
		return;
	for (int i = 0; i < n->n; i++) {
		struct comm *c = &n->c[i];
		size_t k = 0;
		if (isnan(c->base_ms))
			continue;
		for (int s = 0; s < w; s++)
			if (!isnan(c->e[s]))
				win[k++] = c->e[s];
		if (k < MIN_SIGMA_SAMPLES)
			continue;
		double med = ts_median(win, k, tmp), sd = ts_mad_sigma(win, k, med, tmp);
		if (!isnan(sd))
			v[got++] = sd;
	}
	if (!got)
		return;
	n->sigma = (float)ts_median(v, (size_t)got, n->tmp);
	n->sigma_at = j->res.steps_evaluated;
}

static void judge(struct ts_job *j, struct comm *c, const struct slot *sl, int w,
		  uint64_t step, uint64_t t_ns)
{
	struct ts_change_opts o = j->p.change;
	int at = c->next;
	/* the same payload as the baseline's: a step that moves more bytes takes longer */
	double t = sl->mb > 0 && c->base_mb > 0 ? sl->ms * c->base_mb / sl->mb : sl->ms;

	c->t[at] = (float)t, c->mb[at] = sl->mb, c->e[at] = NAN;
	c->next = (at + 1) % w;
	c->last_step = step;
	if (c->filled < w) {
		if (++c->filled == w)
			learn_base(j->net, c, w);
		return;
	}
	c->e[at] = (float)(t / c->base_ms - 1);
	c->judged = true;
	if (!(j->net->sigma >= 0) || !(c->base_ms > 0))
		return;
	/* a share of the communicator's own baseline: a NIC 30 % slower matters however
	 * small a share of the step its transfers are */
	o.drift = fmax(j->p.net_drift, o.drift_sigmas * j->net->sigma);
	o.drift = fmax(o.drift, j->p.net_min_step_share * j->step_ms / c->base_ms);
	o.min_sigma = j->p.net_min_sigma;
	switch (ts_change_update(&c->chg, &o, ts_median_recent(c->e, (size_t)w, (size_t)at,
							      (size_t)o.smooth_steps),
				 j->net->sigma, step, t_ns, t, c->base_ms)) {
	case TS_CHANGE_RAISED: {
		/* the median of the last steps turns once half of them changed */
		uint64_t lag = (uint64_t)(o.smooth_steps - 1) / 2;
		c->chg.onset = c->chg.onset > lag ? c->chg.onset - lag : 0;
		ts_info("%s/%s: communicator %016llx transfer %.2f ms vs baseline %.2f ms from "
			"step %llu, confirmed at step %llu", j->ns, j->name,
			(unsigned long long)c->id, ts_change_value(&c->chg), ts_change_ref(&c->chg),
			(unsigned long long)c->chg.onset, (unsigned long long)step);
		break;
	}
	case TS_CHANGE_CLEARED:
		ts_info("%s/%s: communicator %016llx transfer back to baseline at step %llu",
			j->ns, j->name, (unsigned long long)c->id, (unsigned long long)step);
		break;
	}
}

static void describe(struct ts_job *j, struct ts_net_verdict *v)
{
	const struct comm *w = NULL;

	v->onset_step = v->confirmed_step = UINT64_MAX;
	for (int i = 0; i < j->net->n; i++) {
		const struct comm *c = &j->net->c[i];
		if (!c->chg.alarm)
			continue;
		double ex = ts_change_value(&c->chg) / ts_change_ref(&c->chg) - 1;
		if (!w || ex > v->excess)
			w = c, v->excess = ex;
		if (c->chg.onset < v->onset_step)
			v->onset_step = c->chg.onset, v->onset_ns = c->chg.onset_ns;
		if (c->chg.confirmed < v->confirmed_step)
			v->confirmed_step = c->chg.confirmed;
	}
	v->worst_comm = w->id;
	v->value_ms = ts_change_value(&w->chg);
	v->ref_ms = ts_change_ref(&w->chg);
	snprintf(v->evidence, sizeof(v->evidence),
		 "transfer time up on %d of %d communicators from step %llu, confirmed at step "
		 "%llu; worst %016llx: %.2f ms vs baseline %.2f ms (%+.0f%%)", v->slow_comms,
		 v->comms, (unsigned long long)v->onset_step, (unsigned long long)v->confirmed_step,
		 (unsigned long long)w->id, v->value_ms, v->ref_ms, 100 * v->excess);
}

/* A rank with an alarm on its own work or its host (compute, GEMMs, launch, data, run
 * queue, off-CPU) that is in every alarmed communicator (the collectives timed with no
 * communicator, id 0, hold every rank), else -1: a starved host runs even the last
 * arriver's part of a CPU collective late. */
static int explained_by(const struct ts_job *j)
{
	for (int k = 0; k < j->world; k++) {
		bool slow = false, all = true;
		/* on its way to an alarm too: the rank's sum rises as its transfers' do */
		for (int m = 0; m < TS_M_COUNT && !slow; m++) {
			size_t i = (size_t)k * TS_M_COUNT + (size_t)m;
			slow = m != TS_M_COLLECTIVE && (j->alarm[i] || (ts_job_by_change(m) &&
					j->chg[i].s > j->p.change.threshold / 3));
		}
		for (int i = 0; slow && all && i < j->net->n; i++) {
			const struct comm *c = &j->net->c[i];
			all = !c->judged || !c->chg.alarm || !c->id ||
			      ts_rank_in_comm(&j->meta[k], c->id);
		}
		if (slow && all)
			return k;
	}
	return -1;
}

/* The alarmed transfers cost the job step time: its mean step over the last
 * change.smooth_steps steps rose past the fail-slow baseline by verdict.min_slowdown of
 * it and at least half the worst communicator's added time (transfers on the critical path add theirs; waits that
 * follow data-dependent work, or transfers overlapped with compute, add little). Else
 * says why in held_why. */
static bool costs_steps(struct ts_job *j, struct ts_net_verdict *v)
{
	int w = j->p.space_window, last = (int)ts_job_last_slot(j), n = 0;
	double sum = 0, added = v->value_ms - v->ref_ms;

	for (int i = 0; i < j->p.change.smooth_steps && i < w; i++) {
		float x = j->step_hist[(last + w - i) % w];
		if (x > 0)
			sum += x, n++;
	}
	if (!n || !(j->fs.baseline > 0) || !(added > 0))
		return true; /* nothing to judge by */
	double rise = sum / n - j->fs.baseline;
	/* healthy real jobs' steps drift by a fifth (bench/data): a rise below
	 * verdict.min_slowdown is not a loss to name a cause for */
	if (rise >= 0.5 * added &&
	    (!ts_job_floors(j) || rise >= j->p.verdict.min_slowdown * j->fs.baseline))
		return true;
	snprintf(v->held_why, sizeof(v->held_why), "transfer time up %.2f ms on %d of %d "
		 "communicators, the step %+.2f ms: no step time lost to the network",
		 added, v->slow_comms, v->comms, rise);
	return false;
}

/* Opens, updates and closes the network's event in the history. */
static void history(struct ts_job *j, uint64_t step, uint64_t t_ns)
{
	const struct ts_net_verdict *v = &j->res.net;
	struct ts_event *ev = NULL;

	if (v->scope != TS_NET_NONE && !j->net_open &&
	    (ev = ts_job_history_open(j, TS_EV_FAILSLOW, -1, TS_M_COLLECTIVE))) {
		ev->onset_step = v->onset_step, ev->raised_step = v->confirmed_step;
		ev->raised_ns = t_ns;
		ev->excess = (float)v->excess;
	} else if (v->scope == TS_NET_NONE && j->net_open) {
		ts_job_history_close(j, TS_EV_FAILSLOW, -1, TS_M_COLLECTIVE, step, t_ns);
	}
	j->net_open = v->scope != TS_NET_NONE;
	if (j->net_open && (ev = ts_job_history_find(j, TS_EV_FAILSLOW, -1, TS_M_COLLECTIVE)))
		snprintf(ev->text, sizeof(ev->text), "Communication (%s%s%s%s): %.100s",
			 ts_net_scope_names[v->scope], v->nodes[0][0] ? " " : "", v->nodes[0],
			 v->nodes[1][0] ? " - " : "", v->evidence);
}

void ts_job_net_row(struct ts_job *j, uint64_t step, uint64_t t_ns)
{
	struct ts_net *n = j->net;
	struct ts_net_verdict *v = &j->res.net;
	int w = j->p.space_window < WMAX ? j->p.space_window : WMAX;
	enum ts_net_scope was = v->scope;

	memset(v, 0, sizeof(*v));
	if (!n || !(j->step_ms > 0))
		return;
	for (int i = 0; i < n->n; i++) {
		struct comm *c = &n->c[i];
		const struct slot *sl = &c->ring[step % RING];
		if (sl->step == (uint32_t)step && sl->n >= quorum(j, c) && isfinite(sl->ms)) {
			judge(j, c, sl, w, step, t_ns);
		} else if (c->judged && step > c->last_step + (uint64_t)w) {
			/* gone (destroyed, or its ranks stopped): it says nothing any more */
			c->judged = false;
			c->chg = (struct ts_change){ 0 };
		}
	}
	learn_sigma(j, w);
	int rising = 0;
	for (int i = 0; i < n->n; i++) {
		const struct comm *c = &n->c[i];
		v->comms += c->judged;
		v->slow_comms += c->judged && c->chg.alarm;
		rising += c->judged && !c->chg.alarm && c->chg.s > j->p.change.threshold / 3;
	}
	if (!v->slow_comms)
		n->first_alarm = 0;
	else if (!n->first_alarm)
		n->first_alarm = step;
	/* communicators on their way to an alarm would change the place: wait for them,
	 * a bounded number of steps */
	v->explained_rank = -1;
	if (v->slow_comms && (!rising || was != TS_NET_NONE ||
			      step >= n->first_alarm + 2 * (uint64_t)j->p.change.smooth_steps)) {
		describe(j, v);
		if ((v->explained_rank = explained_by(j)) < 0 &&
		    (was != TS_NET_NONE || costs_steps(j, v)))
			ts_job_net_place(j, v);
	}
	if (v->scope != was)
		ts_info("%s/%s: network verdict at step %llu: %s %s%s%s", j->ns, j->name,
			(unsigned long long)step, v->scope ? ts_net_scope_names[v->scope] : "none",
			v->nodes[0], v->nodes[1][0] ? " - " : "", v->nodes[1]);
	history(j, step, t_ns);
}

/* The communicators' baselines and sums live through an analyzer restart. */
void ts_job_net_io(struct ts_snap *s, struct ts_job *j)
{
	struct ts_net *n = j->net;
	int count = n ? n->n : 0;

	TS_SNAP_VAR(s, count);
	if (ts_snap_loading(s)) {
		if (s->err || count < 0 || count > max_comms(j->world)) {
			s->err = s->err ? s->err : -EBADMSG;
			return;
		}
		if (!count)
			return;
		if (!(n = j->net = calloc(1, sizeof(*n))))
			goto oom;
		while (n->cap < count)
			if (grow(n))
				goto oom;
	}
	if (!n)
		return;
	TS_SNAP_ARR(s, n->c, count);
	TS_SNAP_VAR(s, n->sigma);
	TS_SNAP_VAR(s, n->sigma_at);
	TS_SNAP_VAR(s, n->first_alarm);
	if (ts_snap_loading(s) && !s->err) {
		n->n = count;
		for (int i = 0; i < count; i++)
			index_put(n, i);
	}
	return;
oom:
	s->err = -ENOMEM;
}
