// SPDX-License-Identifier: Apache-2.0
/* Processes of a job the analyzer cannot use, as their relays say: steps with no rank
 * (held until the process learns one), or a rank's device work with no step (its loop's
 * steps not found). The report tells the user what to set. */
#include "job_impl.h"

#include <stdio.h>
#include <string.h>

static struct ts_unranked *find(struct ts_job *j, uint64_t producer)
{
	for (int i = 0; i < j->unranked.n; i++)
		if (j->unranked.list[i].producer == producer)
			return &j->unranked.list[i];
	return NULL;
}

bool ts_job_unranked(struct ts_job *j, uint64_t producer, const char *pod, int pid, int rank,
		     uint64_t count)
{
	struct ts_unranked *u = find(j, producer);

	if (u && u->rank == rank) {
		j->unranked.news |= u->count != count;
		u->count = count;
		return false;
	}
	j->unranked.news = true;
	if (u) { /* a rank learned, its steps still not found */
		u->rank = rank;
		u->count = count;
		return true;
	}
	if (j->unranked.n == TS_JOB_UNRANKED) {
		j->unranked.over++;
		return false;
	}
	u = &j->unranked.list[j->unranked.n++];
	*u = (struct ts_unranked){ .producer = producer, .pid = pid, .rank = rank, .count = count };
	snprintf(u->pod, sizeof(u->pod), "%s", pod ? pod : "");
	return true;
}

bool ts_job_ranked(struct ts_job *j, uint64_t producer)
{
	struct ts_unranked *u = j->unranked.n ? find(j, producer) : NULL;

	if (!u)
		return false;
	*u = j->unranked.list[--j->unranked.n];
	j->unranked.news = true;
	return true;
}

const struct ts_unranked *ts_job_unranked_list(const struct ts_job *j, int *n, int *over)
{
	*n = j->unranked.n;
	*over = j->unranked.over;
	return j->unranked.list;
}

/* The summary a job with such processes and no verdict of its own shows; cleared when
 * they are gone. True when the list changed since the last call: the report is news. */
bool ts_job_unranked_summary(struct ts_job *j)
{
	bool news = j->unranked.news;

	struct ts_job_result *res = &j->res;
	int n = j->unranked.n + j->unranked.over, norank = j->unranked.over;

	for (int i = 0; i < j->unranked.n; i++)
		norank += j->unranked.list[i].rank < 0;
	if (n && !res->nslow) {
		snprintf(res->summary, sizeof(res->summary), "%d process%s made steps with no rank, "
			 "%d rank%s made no step: see the RanksKnown and StepsFound conditions",
			 norank, norank == 1 ? "" : "es", n - norank, n - norank == 1 ? "" : "s");
		j->unranked.in_summary = true;
	} else if (j->unranked.in_summary && !n) {
		res->summary[0] = 0;
		j->unranked.in_summary = false;
	}
	j->unranked.news = false;
	return news;
}
