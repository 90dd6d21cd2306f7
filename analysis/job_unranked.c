/* Processes of a job that make steps with no rank: their relays hold the steps and say
 * so until the process learns a rank; the report tells the user what to set. */
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

bool ts_job_unranked(struct ts_job *j, uint64_t producer, const char *pod, int pid,
		     uint64_t steps)
{
	struct ts_unranked *u = find(j, producer);

	if (u) {
		u->steps = steps;
		return false;
	}
	if (j->nunranked == TS_JOB_UNRANKED) {
		j->unranked_over++;
		return false;
	}
	u = &j->unranked[j->nunranked++];
	*u = (struct ts_unranked){ .producer = producer, .pid = pid, .steps = steps };
	snprintf(u->pod, sizeof(u->pod), "%s", pod ? pod : "");
	return true;
}

bool ts_job_ranked(struct ts_job *j, uint64_t producer)
{
	struct ts_unranked *u = j->nunranked ? find(j, producer) : NULL;

	if (!u)
		return false;
	*u = j->unranked[--j->nunranked];
	return true;
}

const struct ts_unranked *ts_job_unranked_list(const struct ts_job *j, int *n, int *over)
{
	*n = j->nunranked;
	*over = j->unranked_over;
	return j->unranked;
}

/* The summary a job with unranked processes and no verdict of its own shows; cleared
 * when they are gone. */
void ts_job_unranked_summary(struct ts_job *j)
{
	struct ts_job_result *res = &j->res;

	if (j->nunranked && !res->nslow) {
		snprintf(res->summary, sizeof(res->summary),
			 "%d process%s made steps with no rank: see the RanksKnown condition",
			 j->nunranked + j->unranked_over, j->nunranked + j->unranked_over > 1 ?
			 "es" : "");
		j->summary_unranked = true;
	} else if (j->summary_unranked && !j->nunranked) {
		res->summary[0] = 0;
		j->summary_unranked = false;
	}
}
