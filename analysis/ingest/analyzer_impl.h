// SPDX-License-Identifier: Apache-2.0
/* The analyzer's insides, for the files that make it up (no other file includes this):
 *   analyzer.c         the jobs it follows within its limits, their ticks and reports,
 *                      its counters and /metrics
 *   analyzer_ingest.c  a NATS message in: checked, decoded, deduplicated per producer,
 *                      into the job it names
 *   analyzer_snap.c    its whole state in a snapshot, and back */
#ifndef TS_ANALYZER_IMPL_H
#define TS_ANALYZER_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "analyzer.h"
#include "refusals.h"

/* A producer of batches (a relay, a node agent), followed for its sequence numbers
 * (analyzer_ingest.c). */
struct producer {
	uint64_t id, last_seq, dropped;
	uint64_t seen; /* bit i: seq last_seq - i arrived (a resend may come after later ones) */
	bool used;
	bool said_mismatch; /* its batch that disagreed with its subject was logged */
	uint64_t last_ns;   /* the tick before its last batch: silent past limits.job_ttl_s, forgotten */
};

/* Refusals past a limit: counted, and logged the first time for each. */
enum limit { L_JOBS, L_WORLD, L_MEMORY, L_STEP_JUMP, L_COUNT };

struct ts_analyzer {
	struct ts_analyzer_opts opts;
	struct ts_job **jobs;
	bool *dirty;           /* [capjobs]: the job's report is not out yet */
	uint64_t *report_due;  /* [capjobs]: its next routine report (paced, analyzer.c) */
	int njobs, capjobs;
	size_t job_bytes;      /* ts_job_bytes of every job followed */
	uint64_t report_failures; /* report writes failed in a row */
	char disk_why[320];       /* why the last report write failed, while they fail */
	char ext_why[320];        /* ts_analyzer_set_trouble's */
	char said_why[660];       /* the trouble the reports say now: both */
	bool limit_said[L_COUNT];
	char refuse_why[320];     /* the last refusal's reason, for the job's own report */
	struct ts_refusals refused; /* jobs refused whole, each told in a report */
	struct ts_ns_refusals ns_refused[TS_NS_REFUSALS + 1]; /* the last: every other */
	struct producer *prod; /* open addressing, power-of-two size */
	size_t nprod, capprod;
	uint64_t now_ns, next_prune_ns; /* the last tick; when silent producers are next forgotten */
	struct ts_analyzer_stats st;
	struct ts_lag lag;        /* from steps' ends to their analysis, every job's */
};

/* analyzer.c: counts a refusal past limit l (the first of each kind logged, with the
 * limit's key). Returns -ERANGE. */
int ts_analyzer_over_limit(struct ts_analyzer *a, enum limit l, const char *ns, const char *job,
			   const char *what);
/* Whether job j (NULL: a new one) may hold world ranks under the memory budget and its
 * namespace's share of it; accounts for it. 0 or -ERANGE (refused, counted). */
int ts_analyzer_budget_world(struct ts_analyzer *a, struct ts_job *j, int world, const char *ns,
			     const char *name);
/* Room for one more job in the table: 0 or -ENOMEM. */
int ts_analyzer_jobs_reserve(struct ts_analyzer *a);
/* The job, made when new: 0, -ERANGE (past a limit: counted) or -ENOMEM. */
int ts_analyzer_job_get(struct ts_analyzer *a, const char *ns, const char *name, int world,
			struct ts_job **out);
/* Frees job i after its last report file and on_forget. */
void ts_analyzer_drop_job(struct ts_analyzer *a, int i);

/* analyzer_ingest.c: producer id's entry, made when new; NULL on -ENOMEM. */
struct producer *ts_analyzer_producer(struct ts_analyzer *a, uint64_t id);
/* Producers silent for limits.job_ttl_s are forgotten (checked every quarter of it). */
void ts_analyzer_prune_producers(struct ts_analyzer *a, uint64_t now_ns);

#endif
