// SPDX-License-Identifier: Apache-2.0
/* The job's history: alarms raised and cleared, fail-slow spells, hangs. It outlives
 * them, so the report of a job that ended says what happened to it. */
#include "job_impl.h"

#include <stdio.h>
#include <string.h>

struct ts_event *ts_job_history_open(struct ts_job *j, enum ts_event_kind kind, int rank, int m)
{
	struct ts_job_result *r = &j->res;
	struct ts_event *ev;

	if (r->nhistory == TS_HISTORY_MAX) { /* the oldest closed event goes first */
		int drop = 0;
		for (int i = 0; i < r->nhistory; i++)
			if (!r->history[i].open) {
				drop = i;
				break;
			}
		memmove(&r->history[drop], &r->history[drop + 1],
			(size_t)(r->nhistory - drop - 1) * sizeof(*ev));
		r->nhistory--;
		r->history_dropped++;
	}
	ev = &r->history[r->nhistory++];
	memset(ev, 0, sizeof(*ev));
	ev->kind = (uint8_t)kind, ev->rank = rank, ev->metric = (uint8_t)m, ev->open = true;
	return ev;
}

struct ts_event *ts_job_history_find(struct ts_job *j, enum ts_event_kind kind, int rank, int m)
{
	for (int i = j->res.nhistory - 1; i >= 0; i--) {
		struct ts_event *ev = &j->res.history[i];
		if (ev->open && ev->kind == kind && ev->rank == rank && ev->metric == m)
			return ev;
	}
	return NULL;
}

void ts_job_history_close(struct ts_job *j, enum ts_event_kind kind, int rank, int m,
			  uint64_t step, uint64_t t_ns)
{
	struct ts_event *ev = ts_job_history_find(j, kind, rank, m);

	if (ev) {
		ev->open = false;
		ev->cleared_step = step;
		ev->cleared_ns = t_ns;
	}
}

/* An event's text: s, cut to fit (a reason is longer than an event's text). */
static void set_text(struct ts_event *ev, const char *s)
{
	snprintf(ev->text, sizeof(ev->text), "%.*s", (int)sizeof(ev->text) - 1, s);
}

/* Fail-slow spells and hangs in the history, as they begin and end. */
void ts_job_history_spells(struct ts_job *j, uint64_t now_ns)
{
	struct ts_event *ev;
	bool hang = j->res.state == TS_STATE_HANG;

	if (j->fs.slow && !j->fs_open && (ev = ts_job_history_open(j, TS_EV_FAILSLOW, -1, 0))) {
		ev->onset_step = ev->raised_step = j->res.last_step;
		ev->raised_ns = now_ns;
		ev->excess = (float)j->fs.degradation;
		set_text(ev, j->res.reason);
	} else if (!j->fs.slow && j->fs_open) {
		ts_job_history_close(j, TS_EV_FAILSLOW, -1, 0, j->res.last_step, now_ns);
	}
	j->fs_open = j->fs.slow;
	if (hang && !j->hang_open && (ev = ts_job_history_open(j, TS_EV_HANG, -1, 0))) {
		ev->onset_step = ev->raised_step = j->res.last_step;
		ev->raised_ns = now_ns;
	}
	if (hang && (ev = ts_job_history_find(j, TS_EV_HANG, -1, 0))) {
		/* the hang's own account, not the ranks lost after it */
		set_text(ev, j->hang_reason[0] ? j->hang_reason : j->res.reason);
	} else if (!hang && j->hang_open) {
		ts_job_history_close(j, TS_EV_HANG, -1, 0, j->res.last_step, now_ns);
	}
	j->hang_open = hang;
}
