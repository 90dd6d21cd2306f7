// SPDX-License-Identifier: Apache-2.0
/* The jobs' Prometheus series: state, step-time histogram, lost time, and per-rank
 * series with cardinality bounded by design (the slowest few ranks and every named one;
 * quantiles over all ranks). Labels k8s_namespace and training_job leave a scrape's own
 * namespace and job labels alone. */
#ifndef TS_METRICS_H
#define TS_METRICS_H

#include "buf.h"
#include "metric.h"
#include "analysis/detect/job.h"

/* Renders every family once, over all jobs; top_k per-rank series a job. */
void ts_jobs_render_metrics(struct ts_job *const *jobs, int njobs, int top_k, struct ts_buf *b);

/* The families ts_jobs_render_metrics writes. */
extern const struct ts_metric_table ts_job_metrics;

#endif
