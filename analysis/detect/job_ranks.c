// SPDX-License-Identifier: Apache-2.0
/* A job's ranks: who each one is (its Hello groups: the layout, its communicators), the
 * node agent's views of its host and device, and its end: its exit record, or lost when
 * its process died without one or it went silent while other ranks exited. */
#include "job_impl.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

struct ts_rank_meta *ts_job_rank(struct ts_job *j, int rank)
{
	return rank >= 0 && rank < j->world ? &j->meta[rank] : NULL;
}

bool ts_rank_in_comm(const struct ts_rank_meta *m, uint64_t comm)
{
	for (int i = 0; i < m->ncomms; i++)
		if (m->comms[i] == comm)
			return true;
	return false;
}

bool ts_rank_add_comm(struct ts_rank_meta *m, uint64_t comm)
{
	if (ts_rank_in_comm(m, comm))
		return false;
	if (m->ncomms < TS_RANK_MAX_COMMS)
		m->comms[m->ncomms++] = comm;
	else /* the oldest goes: communicators made last are those in use */
		memmove(m->comms, m->comms + 1, sizeof(m->comms) - sizeof(m->comms[0])),
			m->comms[TS_RANK_MAX_COMMS - 1] = comm;
	return true;
}

void ts_job_rank_groups(struct ts_job *j, int rank, const char *const *groups, size_t n)
{
	struct ts_rank_meta *m = ts_job_rank(j, rank);
	char err[256];

	for (size_t i = 0; m && i < n; i++) {
		unsigned long long hash;
		const char *g = groups[i];
		if (!strncmp(g, "layout:", 7) && strcmp(g + 7, j->layout_text) &&
		    ts_job_set_layout(j, g + 7, err, sizeof(err)) && !j->layout_warned) {
			j->layout_warned = true;
			ts_warn("%s/%s: rank %d: %s: ranks are compared with all others", j->ns,
				j->name, rank, err);
		}
		else if (sscanf(g, "nccl:%llx:", &hash) == 1) {
			unsigned size, crank;
			if (ts_rank_add_comm(m, hash))
				j->classes_dirty = true;
			if (sscanf(g, "nccl:%*x:%u:%u", &size, &crank) == 2 && crank < size)
				ts_job_links_member(j, hash, crank, rank);
		}
	}
}

/* A preemptor worth naming: its time is at least 1 ms/s and half the one held, or the
 * one held is BLAME_KEEP_NS old. The hog of an alarm stays named through the quiet
 * samples of the job's end (a kworker at 0.0 ms/s is no one's cause). */
#define BLAME_KEEP_NS (30ull * 1000000000ull)

void ts_job_host_view(struct ts_job *j, int rank, const struct ts_host_view *v)
{
	struct ts_host_view *b;

	if (rank < 0 || rank >= j->world)
		return;
	j->meta[rank].host = *v;
	b = &j->meta[rank].blame;
	if (v->top_comm[0] && v->top_ms_per_s >= 1 &&
	    (v->top_ms_per_s >= 0.5 * b->top_ms_per_s || v->time_ns > b->time_ns + BLAME_KEEP_NS))
		*b = *v;
}

void ts_job_device_view(struct ts_job *j, const char *node, int device_index,
			const struct ts_device_view *v)
{
	for (int k = 0; k < j->world; k++)
		if (j->meta[k].device_index == device_index && !strcmp(j->meta[k].node, node))
			j->meta[k].dev = *v;
}

static void rank_lost(struct ts_job *j, int k, const char *why)
{
	struct ts_rank_meta *m = &j->meta[k];

	if (m->lost)
		return;
	m->lost = true;
	j->res.nlost++;
	ts_warn("%s/%s: rank %d lost after step %llu: %s", j->ns, j->name, k,
		(unsigned long long)m->last_step, why);
}

void ts_job_rank_died(struct ts_job *j, int rank)
{
	if (rank >= 0 && rank < j->world && !j->meta[rank].final)
		rank_lost(j, rank, "its process ended without its exit record (killed, crashed)");
}

void ts_job_rank_final(struct ts_job *j, int rank)
{
	if (rank >= 0 && rank < j->world)
		j->meta[rank].final = true;
}

bool ts_job_all_final(const struct ts_job *j)
{
	for (int k = 0; k < j->world; k++)
		if (j->meta[k].seen && !j->meta[k].final && !j->meta[k].lost)
			return false;
	return true;
}

/* A rank that stopped stepping without an exit record while others exited died (killed,
 * crashed): it is lost, and the job ended abnormally. Says which in reason. */
void ts_job_watch_ranks(struct ts_job *j, uint64_t now_ns)
{
	int exited = 0;
	size_t n = 0;

	for (int k = 0; k < j->world; k++) {
		struct ts_rank_meta *m = &j->meta[k];
		if (m->seen && (m->last_step != m->watched_step || !m->watched_ns)) {
			m->watched_step = m->last_step;
			m->watched_ns = now_ns;
		}
		exited += m->final;
	}
	for (int k = 0; exited && k < j->world; k++) {
		struct ts_rank_meta *m = &j->meta[k];
		if (!m->seen || m->final || m->lost ||
		    (double)(now_ns - m->watched_ns) < j->p.rank_lost_s * 1e9)
			continue;
		rank_lost(j, k, "no step since and no exit record while other ranks exited");
	}
	if (j->res.nlost == j->lost_in_reason)
		return; /* the reason says them all already */
	j->lost_in_reason = j->res.nlost;
	n = (size_t)snprintf(j->lost_reason, sizeof(j->lost_reason), "the job ended abnormally: rank");
	for (int k = 0, said = 0; k < j->world && n < sizeof(j->lost_reason); k++)
		if (j->meta[k].lost && said++ < 8)
			n += (size_t)snprintf(j->lost_reason + n, sizeof(j->lost_reason) - n, "%s %d (last step %llu)",
					      said > 1 ? "," : "", k, (unsigned long long)j->meta[k].last_step);
	if (n < sizeof(j->lost_reason))
		snprintf(j->lost_reason + n, sizeof(j->lost_reason) - n,
			 "%s lost: gone without an exit record", j->res.nlost > 8 ? " and more" : "");
}
