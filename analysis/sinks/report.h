// SPDX-License-Identifier: Apache-2.0
/* The report: SlowNodeReport status (docs/report.md) plus sysTrace's result fields. */
#ifndef TS_REPORT_H
#define TS_REPORT_H

#include <jansson.h>
#include "analysis/detect/job.h"

/* The report's annotation naming a pod of the job (its lowest rank's, when the ranks
 * name pods): the Kubernetes writer finds the job's controller from it. */
#define TS_REPORT_POD_ANNOTATION "trainscope.dev/pod"

/* {"apiVersion","kind","metadata","status":{...},"resultCode",...}; caller decrefs.
 * trouble: why the analyzer cannot store what it should (a full disk or store), shown as
 * the condition Stored=False; NULL when all is stored. */
json_t *ts_report_json(struct ts_job *j, const char *trouble);
/* The report of job ns/job, of world ranks, which the analyzer refused whole at at_ns
 * for why (a limit): state Unknown, DataComplete False (reason Refused). Caller decrefs. */
json_t *ts_report_refused_json(const char *ns, const char *job, int world, const char *why,
			       uint64_t at_ns);
/* Writes report (ts_report_json's) as <dir>/<namespace>_<job>.json atomically. Returns 0
 * or -errno. */
int ts_report_write(json_t *report, const char *dir, const char *ns, const char *job);
/* One human-readable paragraph. */
void ts_report_print(json_t *report, void *file);

#endif
