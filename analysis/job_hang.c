/* A hang's culprit. In a collective every member waits until the last one enters, so
 * the ranks whose hang watch fires are the victims: the culprit is the member that did
 * not enter the op most of them wait in (it computes, waits in another op, or is
 * stuck in Python). Members come from the communicators the ranks announced (the
 * preload's hooks and NCCL's profiler plugin); with none announced nobody is named. */
#include "job_impl.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

static bool waits_in(const struct ts_rank_meta *m, uint64_t comm, uint64_t seq)
{
	return m->hanging && !m->final && m->hang_comm == comm && m->hang_seq == seq;
}

/* The (communicator, seq) that most hanging ranks report: a majority vote, then the
 * winner's count. Returns the count; 0 when no rank reports a hang. */
static int most_waited(struct ts_job *j, int *who)
{
	int cand = -1, votes = 0, n = 0;

	for (int k = 0; k < j->world; k++) {
		const struct ts_rank_meta *m = &j->meta[k];
		if (!m->hanging || m->final)
			continue;
		if (!votes)
			cand = k, votes = 1;
		else
			votes += waits_in(m, j->meta[cand].hang_comm, j->meta[cand].hang_seq) ? 1 : -1;
	}
	if (cand < 0)
		return 0;
	for (int k = 0; k < j->world; k++)
		n += waits_in(&j->meta[k], j->meta[cand].hang_comm, j->meta[cand].hang_seq);
	*who = cand;
	return n;
}

static int append_ranks(char *buf, size_t size, const int *ranks, int n, int total)
{
	size_t len = strnlen(buf, size);

	for (int i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%d", i ? ", " : "", ranks[i]);
	if (total > n && len < size)
		len += (size_t)snprintf(buf + len, size - len, " and %d more", total - n);
	return (int)len;
}

/* Writes the hang's reason: culprits named, or why none is. */
static void describe(struct ts_job *j, const struct ts_rank_meta *w, int ncul, char *out,
		     size_t n)
{
	struct ts_job_result *res = &j->res;
	const struct ts_rank_meta *c0 = ncul ? &j->meta[res->culprits[0]] : NULL;

	if (!ncul) {
		snprintf(out, n, "all %d ranks of communicator %016llx wait in %s (seq %llu): "
			 "every member entered, the op itself does not complete (a link, a "
			 "device or NCCL)", res->hang_waiting, (unsigned long long)w->hang_comm,
			 w->hang_op, (unsigned long long)w->hang_seq);
		return;
	}
	snprintf(out, n, "rank%s ", ncul > 1 ? "s" : "");
	append_ranks(out, n, res->culprits, res->nculprits, ncul);
	size_t len = strnlen(out, n);
	len += (size_t)snprintf(out + len, n - len, " did not enter %s (communicator %016llx, "
				"seq %llu) that %d of %d ranks wait in", w->hang_op,
				(unsigned long long)w->hang_comm, (unsigned long long)w->hang_seq,
				res->hang_waiting, res->hang_members);
	if (len < n && c0->hanging)
		snprintf(out + len, n - len, "; rank %d waits in %s (communicator %016llx, seq %llu)",
			 res->culprits[0], c0->hang_op, (unsigned long long)c0->hang_comm,
			 (unsigned long long)c0->hang_seq);
	else if (len < n)
		snprintf(out + len, n - len, "; rank %d is in no collective (last step %llu)",
			 res->culprits[0], (unsigned long long)c0->last_step);
}

void ts_job_hang_culprits(struct ts_job *j, uint64_t now_ns)
{
	struct ts_job_result *res = &j->res;
	int who = -1, waiting = most_waited(j, &who), members = 0, ncul = 0;
	bool known = false;

	/* no rank waits any more (they exited or were lost): what was named stands */
	if (!waiting)
		return;
	res->nculprits = 0;
	const struct ts_rank_meta *w = &j->meta[who];
	for (int k = 0; k < j->world && !known; k++)
		known = ts_rank_in_comm(&j->meta[k], w->hang_comm);
	for (int k = 0; k < j->world; k++) {
		const struct ts_rank_meta *m = &j->meta[k];
		if (!m->seen || (known && !ts_rank_in_comm(m, w->hang_comm)))
			continue;
		members++;
		if (!m->final && !waits_in(m, w->hang_comm, w->hang_seq)) {
			if (ncul < TS_HANG_MAX_CULPRITS)
				res->culprits[ncul] = k;
			ncul++;
		}
	}
	/* without the communicator's members (no rank announced it: an older preload, or a
	 * collective NCCL does not run) a rank outside it would look like a culprit: say
	 * only who waits. Reports come as each rank's own watch fires: wait for most. */
	if (!known || (waiting * 2 <= members &&
		       (double)(now_ns - j->hang_first_ns) < j->p.hang_culprit_wait_s * 1e9))
		return;
	res->nculprits = ncul < TS_HANG_MAX_CULPRITS ? ncul : TS_HANG_MAX_CULPRITS;
	res->hang_waiting = waiting, res->hang_members = members;
	res->hang_comm = w->hang_comm, res->hang_seq = w->hang_seq;
	snprintf(res->hang_op, sizeof(res->hang_op), "%s", w->hang_op);
	if (ncul)
		res->hang_rank = res->culprits[0];
	describe(j, w, ncul, j->hang_reason, sizeof(j->hang_reason));
}
