// SPDX-License-Identifier: Apache-2.0
/* Jobs the analyzer refused whole, past a limit (limits.max_world, limits.memory_mb,
 * limits.max_jobs and their namespace shares): each is told once in a report of its own,
 * so that a job the analyzer cannot follow is never left with no report. */
#ifndef TS_REFUSALS_H
#define TS_REFUSALS_H

#include <stdbool.h>
#include <stdint.h>

#define TS_REFUSALS 32

struct ts_refusal {
	char ns[64], job[256], why[256];
	int world;
	uint64_t at_ns;
	bool told;
};

#define TS_REFUSALS_TOLD 1024

/* The last TS_REFUSALS jobs refused; zeroed is empty. */
struct ts_refusals {
	struct ts_refusal r[TS_REFUSALS];
	unsigned next; /* the slot the next new job takes (the oldest) */
	/* the last TS_REFUSALS_TOLD refusals told (a hash of job and reason): a job pushed
	 * out of the table by others is not told again at its next message */
	uint64_t told[TS_REFUSALS_TOLD];
	unsigned next_told;
};

/* Notes job ns/job (of world ranks) refused for why at now_ns. A job already noted keeps
 * its entry (told stays told unless the reason changed). */
void ts_refusals_note(struct ts_refusals *t, const char *ns, const char *job, int world,
		      const char *why, uint64_t now_ns);
/* Forgets job ns/job (it is followed now). */
void ts_refusals_forget(struct ts_refusals *t, const char *ns, const char *job);
/* A refusal not told yet, or NULL; the caller marks it with ts_refusals_told once its
 * report is out. */
struct ts_refusal *ts_refusals_untold(struct ts_refusals *t);
/* r's report is out: not told again for the same reason. */
void ts_refusals_told(struct ts_refusals *t, struct ts_refusal *r);

#endif
