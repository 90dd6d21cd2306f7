// SPDX-License-Identifier: Apache-2.0
/* A hang: a rank's report of an op pending past its watch's timeout, the hang's culprit,
 * and its end (a later step evaluated with every rank in it). In a collective every
 * member waits until the last one enters, so the ranks whose hang watch fires are the
 * victims: the culprit is the member that did not enter the op most of them wait in (it
 * computes, waits in another op, or is stuck in Python). Members come from the
 * communicators the ranks announced (the preload's hooks and NCCL's profiler plugin). A
 * communicator nobody announced (gloo or a custom barrier report comm 0) is taken to hold
 * the job's every rank, when all waiting ranks report that one: the reason says the
 * members were guessed. */
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

/* Appends where a guessed op's members came from, at len of out: nobody announced its
 * communicator, so the job's ranks were taken. Returns the length out would have. */
static size_t add_note(char *out, size_t len, size_t n, uint64_t comm)
{
	if (len >= n)
		return len;
	if (comm)
		return len + (size_t)snprintf(out + len, n - len, "communicator %016llx not "
					      "announced; the job's ranks taken as its members",
					      (unsigned long long)comm);
	return len + (size_t)snprintf(out + len, n - len, "communicator unknown: gloo or a "
				      "custom barrier; the job's ranks taken as its members");
}

/* Writes why nobody is named: every member waits in w's op, or (members guessed) every
 * rank still running does and the others exited or were lost. */
static void describe_entered(const struct ts_job_result *res, const struct ts_rank_meta *w,
			     bool known, char *out, size_t n)
{
	int gone = res->hang_members - res->hang_waiting;
	size_t len;

	if (known) {
		snprintf(out, n, "all %d ranks of communicator %016llx wait in %s (seq %llu): "
			 "every member entered, the op itself does not complete (a link, a "
			 "device or NCCL)", res->hang_waiting, (unsigned long long)w->hang_comm,
			 w->hang_op, (unsigned long long)w->hang_seq);
		return;
	}
	if (gone > 0)
		len = (size_t)snprintf(out, n, "%d of %d ranks", res->hang_waiting,
				       res->hang_members);
	else
		len = (size_t)snprintf(out, n, "all %d ranks", res->hang_waiting);
	if (len < n)
		len += (size_t)snprintf(out + len, n - len, " wait in %s (seq %llu; ", w->hang_op,
					(unsigned long long)w->hang_seq);
	len = add_note(out, len, n, w->hang_comm);
	if (len < n && gone > 0)
		snprintf(out + len, n - len, "): every rank still running entered, the other %d "
			 "exited or were lost", gone);
	else if (len < n)
		snprintf(out + len, n - len, "): every member entered, the op itself does not "
			 "complete (a link, a device or the collective's library)");
}

/* Writes the hang's reason: culprits named, or why none is. */
static void describe(struct ts_job *j, const struct ts_rank_meta *w, int ncul, bool known,
		     char *out, size_t n)
{
	struct ts_job_result *res = &j->res;
	const struct ts_rank_meta *c0 = ncul ? &j->meta[res->culprits[0]] : NULL;

	if (!ncul) {
		describe_entered(res, w, known, out, n);
		return;
	}
	snprintf(out, n, "rank%s ", ncul > 1 ? "s" : "");
	append_ranks(out, n, res->culprits, res->nculprits, ncul);
	size_t len = strnlen(out, n);
	if (known) {
		len += (size_t)snprintf(out + len, n - len, " did not enter %s (communicator "
					"%016llx, seq %llu) that %d of %d ranks wait in",
					w->hang_op, (unsigned long long)w->hang_comm,
					(unsigned long long)w->hang_seq, res->hang_waiting,
					res->hang_members);
	} else {
		len += (size_t)snprintf(out + len, n - len, " did not enter %s (seq %llu) that %d "
					"of %d ranks wait in (", w->hang_op,
					(unsigned long long)w->hang_seq, res->hang_waiting,
					res->hang_members);
		len = add_note(out, len, n, w->hang_comm);
		len += len < n ? (size_t)snprintf(out + len, n - len, ")") : 0;
	}
	if (len < n && c0->hanging)
		snprintf(out + len, n - len, "; rank %d waits in %s (communicator %016llx, seq %llu)",
			 res->culprits[0], c0->hang_op, (unsigned long long)c0->hang_comm,
			 (unsigned long long)c0->hang_seq);
	else if (len < n)
		snprintf(out + len, n - len, "; rank %d is in no collective (last step %llu)",
			 res->culprits[0], (unsigned long long)c0->last_step);
}

/* True when a rank announced the communicator: its members are known. */
static bool comm_known(const struct ts_job *j, uint64_t comm)
{
	for (int k = 0; k < j->world; k++)
		if (ts_rank_in_comm(&j->meta[k], comm))
			return true;
	return false;
}

/* True when every rank still hanging reports communicator comm: the waiting ranks are
 * in one group, which the job's ranks may stand for. Several unannounced communicators
 * are several groups, whose members nobody can guess. */
static bool one_comm(const struct ts_job *j, uint64_t comm)
{
	for (int k = 0; k < j->world; k++)
		if (j->meta[k].hanging && !j->meta[k].final && j->meta[k].hang_comm != comm)
			return false;
	return true;
}

/* True when a culprit named for this hang has since exited or been lost: with guessed
 * members it is no longer counted, but the naming stands (its going is said apart). */
static bool named_gone(const struct ts_job *j)
{
	for (int i = 0; i < j->res.nculprits; i++)
		if (j->meta[j->res.culprits[i]].final || j->meta[j->res.culprits[i]].lost)
			return true;
	return false;
}

/* The members of the op w waits in (its communicator's when known, else every rank
 * seen) and, in cul (up to TS_HANG_MAX_CULPRITS), those that did not enter it; returns
 * how many did not. A rank that exited is no culprit; with guessed members neither is
 * a lost one (it may be no member; the lost ranks' account names it). */
static int find_culprits(const struct ts_job *j, const struct ts_rank_meta *w, bool known,
			 int *cul, int *members)
{
	int ncul = 0;

	*members = 0;
	for (int k = 0; k < j->world; k++) {
		const struct ts_rank_meta *m = &j->meta[k];
		if (!m->seen || (known && !ts_rank_in_comm(m, w->hang_comm)))
			continue;
		++*members;
		if (m->final || (!known && m->lost) || waits_in(m, w->hang_comm, w->hang_seq))
			continue;
		if (ncul < TS_HANG_MAX_CULPRITS)
			cul[ncul] = k;
		ncul++;
	}
	return ncul;
}

void ts_job_hang_culprits(struct ts_job *j, uint64_t now_ns)
{
	struct ts_job_result *res = &j->res;
	int who = -1, waiting = most_waited(j, &who), members = 0, ncul;
	int cul[TS_HANG_MAX_CULPRITS];

	/* no rank waits any more (they exited or were lost): what was named stands */
	if (!waiting)
		return;
	const struct ts_rank_meta *w = &j->meta[who];
	/* waiting ranks that then ended (their sync gave up, an exit record sent) were
	 * still victims: the naming made while more of them waited in this op stands */
	if (res->nculprits && res->hang_comm == w->hang_comm && res->hang_seq == w->hang_seq &&
	    waiting < res->hang_waiting)
		return;
	bool known = comm_known(j, w->hang_comm);
	ncul = find_culprits(j, w, known, cul, &members);
	if (!known && !ncul && named_gone(j))
		return;
	res->nculprits = 0;
	/* reports come as each rank's own watch fires: wait for most */
	if ((!known && !one_comm(j, w->hang_comm)) ||
	    (waiting * 2 <= members &&
	     (double)(now_ns - j->hang_first_ns) < j->p.hang_culprit_wait_s * 1e9))
		return;
	res->nculprits = ncul < TS_HANG_MAX_CULPRITS ? ncul : TS_HANG_MAX_CULPRITS;
	memcpy(res->culprits, cul, (size_t)res->nculprits * sizeof(cul[0]));
	res->hang_waiting = waiting, res->hang_members = members;
	res->hang_comm = w->hang_comm, res->hang_seq = w->hang_seq;
	snprintf(res->hang_op, sizeof(res->hang_op), "%s", w->hang_op);
	if (ncul)
		res->hang_rank = res->culprits[0];
	describe(j, w, ncul, known, j->hang_reason, sizeof(j->hang_reason));
}

void ts_job_rank_hang(struct ts_job *j, int rank, const char *op, uint64_t comm, uint64_t seq,
		      uint64_t pending_ns, const char *stacks)
{
	struct ts_rank_meta *m = ts_job_rank(j, rank);

	if (m) {
		m->hanging = true;
		snprintf(m->hang_op, sizeof(m->hang_op), "%s", op && *op ? op : "a kernel");
		m->hang_comm = comm, m->hang_seq = seq, m->hang_ns = j->now_ns;
		m->hang_step = m->last_step;
	}
	if (!j->hang_first_ns)
		j->hang_first_ns = j->now_ns ? j->now_ns : 1;
	if (j->hang_reason[0])
		return; /* the first report stands until culprits are named */
	snprintf(j->hang_reason, sizeof(j->hang_reason),
		 "rank %d: %s (communicator %016llx, seq %llu) pending for %.0f s", rank,
		 op && *op ? op : "an op", (unsigned long long)comm, (unsigned long long)seq,
		 (double)pending_ns / 1e9);
	j->res.hang_rank = rank;
	j->hang_step = m ? m->last_step : j->max_step;
	j->res.hang_stacks_rank = rank;
	snprintf(j->res.hang_stacks, sizeof(j->res.hang_stacks), "%s", stacks ? stacks : "");
}

/* A reported hang is over once the job evaluated a step past the one the hung rank
 * was stuck after, with every rank in it: a job killed while hung must not clear it,
 * though the waiting ranks' last records, written as they die, end a later step. */
void ts_job_hang_cleared(struct ts_job *j)
{
	int k = j->res.hang_rank;

	if (!j->hang_reason[0] || j->res.steps_evaluated == 0 || j->res.last_step <= j->hang_step)
		return;
	for (int r = 0; r < j->world; r++)
		if (j->meta[r].seen && j->meta[r].last_step <= j->hang_step)
			return;
	ts_info("%s/%s: the hang of rank %d is over: step %llu evaluated", j->ns, j->name, k,
		(unsigned long long)j->res.last_step);
	j->hang_reason[0] = 0;
	j->res.hang_rank = j->res.hang_stacks_rank = -1;
	j->res.hang_stacks[0] = 0;
	j->res.nculprits = 0;
	j->hang_first_ns = 0;
	for (int r = 0; r < j->world; r++)
		j->meta[r].hanging = false;
}
