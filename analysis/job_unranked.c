// SPDX-License-Identifier: Apache-2.0
/* Processes of a job the analyzer cannot use, as their relays say: steps with no rank
 * (held until the process learns one), or a rank's device work with no step (its loop's
 * steps not found). The report tells the user what to set. */
#include "job_impl.h"

#include <stdio.h>
#include <string.h>

static struct ts_unranked *find(struct ts_job *j, uint64_t producer)
{
	for (int i = 0; i < j->nunranked; i++)
		if (j->unranked[i].producer == producer)
			return &j->unranked[i];
	return NULL;
}

bool ts_job_unranked(struct ts_job *j, uint64_t producer, const char *pod, int pid, int rank,
		     uint64_t count)
{
	struct ts_unranked *u = find(j, producer);

	if (u && u->rank == rank) {
		j->unranked_news |= u->count != count;
		u->count = count;
		return false;
	}
	j->unranked_news = true;
	if (u) { /* a rank learned, its steps still not found */
		u->rank = rank;
		u->count = count;
		return true;
	}
	if (j->nunranked == TS_JOB_UNRANKED) {
		j->unranked_over++;
		return false;
	}
	u = &j->unranked[j->nunranked++];
	*u = (struct ts_unranked){ .producer = producer, .pid = pid, .rank = rank, .count = count };
	snprintf(u->pod, sizeof(u->pod), "%s", pod ? pod : "");
	return true;
}

bool ts_job_ranked(struct ts_job *j, uint64_t producer)
{
	struct ts_unranked *u = j->nunranked ? find(j, producer) : NULL;

	if (!u)
		return false;
	*u = j->unranked[--j->nunranked];
	j->unranked_news = true;
	return true;
}

const struct ts_unranked *ts_job_unranked_list(const struct ts_job *j, int *n, int *over)
{
	*n = j->nunranked;
	*over = j->unranked_over;
	return j->unranked;
}

/* The summary a job with such processes and no verdict of its own shows; cleared when
 * they are gone. True when the list changed since the last call: the report is news. */
bool ts_job_unranked_summary(struct ts_job *j)
{
	bool news = j->unranked_news;

	struct ts_job_result *res = &j->res;
	int n = j->nunranked + j->unranked_over, norank = j->unranked_over;

	for (int i = 0; i < j->nunranked; i++)
		norank += j->unranked[i].rank < 0;
	if (n && !res->nslow) {
		snprintf(res->summary, sizeof(res->summary), "%d process%s made steps with no rank, "
			 "%d rank%s made no step: see the RanksKnown and StepsFound conditions",
			 norank, norank == 1 ? "" : "es", n - norank, n - norank == 1 ? "" : "s");
		j->summary_unranked = true;
	} else if (j->summary_unranked && !n) {
		res->summary[0] = 0;
		j->summary_unranked = false;
	}
	j->unranked_news = false;
	return news;
}
