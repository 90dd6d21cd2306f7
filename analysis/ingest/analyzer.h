// SPDX-License-Identifier: Apache-2.0
/* The analyzer's core, independent of NATS: decodes batches, drops duplicates and
 * counts gaps per producer, feeds jobs, and writes reports. */
#ifndef TS_ANALYZER_H
#define TS_ANALYZER_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "buf.h"
#include "metric.h"
#include "proto/trainscope.pb-c.h"
#include "analysis/detect/job.h"
#include "analysis/detect/params.h"

struct ts_analyzer_opts {
	struct ts_params params;
	const char *report_dir;  /* NULL: no files */
	size_t max_msg_bytes;    /* larger messages are refused (default 4 MiB) */
	int print_changes;       /* print a report to stdout when a job's verdict changes */
	int partitions;          /* the stream's partition count (> 1: subjects carry one) */
	/* called with each job's report whenever it changed (Kubernetes mode, OTLP) */
	void (*on_report)(void *ctx, json_t *report, uint64_t now_ns);
	/* called with every rank step accepted (OTLP) */
	void (*on_step)(void *ctx, struct ts_job *j, const Trainscope__V1__Identity *id,
			const Trainscope__V1__Step *s);
	/* called before a quiet job's state is freed (limits.job_ttl_s) */
	void (*on_forget)(void *ctx, struct ts_job *j);
	/* called once when every rank of a job has ended (OTLP closes its traces) */
	void (*on_finish)(void *ctx, struct ts_job *j);
	void *on_report_ctx;
};

struct ts_analyzer_stats {
	uint64_t msgs, batches, bad_msgs, oversized, bad_subject, duplicates, lost_batches, hangs;
	uint64_t bundles; /* messages that were relays' Bundles (their batches in batches) */
	uint64_t steps, bad_steps, late_steps, ring_dropped, reports_written, report_errors;
	uint64_t control, host_samples, device_samples;
	uint64_t jobs, jobs_forgotten, reordered, attempts;
	uint64_t mismatched; /* batches whose identity disagrees with their subject */
	uint64_t unranked_notices, unranked_processes; /* relays' word of steps with no rank */
	uint64_t other_partition; /* mapped under another partition count */
	uint64_t producers;  /* producers followed now (silent ones forgotten after job_ttl_s) */
	uint64_t over_limit[4]; /* jobs, world, memory, step_jump */
	uint64_t jobs_given_up;  /* finished jobs whose place went to a new one */
};
/* New jobs refused in one namespace (its share of the job table, or the table full). */
struct ts_ns_refusals {
	char ns[64];
	uint64_t count;
};
#define TS_NS_REFUSALS 16 /* namespaces counted by name; the rest as one */

struct ts_analyzer;

int ts_analyzer_new(struct ts_analyzer **out, const struct ts_analyzer_opts *opts);
void ts_analyzer_free(struct ts_analyzer *a);
/* One NATS message: a Batch, or on a pod subject a relay's Bundle, each of whose batches
 * is taken as one that came alone. Returns 0, or -EMSGSIZE / -EBADMSG / -EINVAL (refused,
 * counted and logged; for a Bundle, the first of its batches refused, the others taken);
 * refused messages must still be acknowledged: a resend would fail alike. */
int ts_analyzer_ingest(struct ts_analyzer *a, const char *subject, const void *data, size_t len);
/* Evaluates what is due; writes and prints reports that changed. */
void ts_analyzer_tick(struct ts_analyzer *a, uint64_t now_real_ns);
/* Writes every job's report now. */
void ts_analyzer_flush_reports(struct ts_analyzer *a);
void ts_analyzer_get_stats(struct ts_analyzer *a, struct ts_analyzer_stats *out);
void ts_analyzer_render_metrics(struct ts_analyzer *a, struct ts_buf *b);
/* The families ts_analyzer_render_metrics writes itself (the jobs' are ts_job_metrics). */
extern const struct ts_metric_table ts_analyzer_metrics;
/* The state of every job and producer as one blob, as of the stream message
 * stream_seq, appended to out: 0 or -ENOMEM. The snapshots of earlier builds; saves
 * now go in parts (snapstate.h). */
int ts_analyzer_save(struct ts_analyzer *a, uint64_t stream_seq, struct ts_buf *out);
/* Into an analyzer that holds nothing yet: 0 with *stream_seq, the message to replay
 * after; -EPROTO (written by a build of another layout), -EBADMSG (damaged) or -ENOMEM,
 * leaving the analyzer empty. */
int ts_analyzer_restore(struct ts_analyzer *a, const void *data, size_t len, uint64_t now_ns,
			uint64_t *stream_seq);
int ts_analyzer_njobs(const struct ts_analyzer *a);

/* The state in parts, for snapshots that store each apart (snapstate.h). */
struct ts_snap;
/* What tells this build's snapshots from another's: their layout. */
uint64_t ts_analyzer_snap_layout(void);
/* Job i of ts_analyzer_njobs, NULL past them. */
struct ts_job *ts_analyzer_job_at(struct ts_analyzer *a, int i);
/* The producers' sequence state, their table as it is, saved or loaded by s (into an
 * analyzer that follows none yet): s->err (0, -ENOMEM, -EBADMSG). */
int ts_analyzer_producers_io(struct ts_analyzer *a, struct ts_snap *s);
/* A job saved alone with ts_job_save, read back into the analyzer: 0, 1 (refused by a
 * limit: counted, not kept), -EBADMSG or -ENOMEM. */
int ts_analyzer_restore_job(struct ts_analyzer *a, const void *data, size_t len,
			    uint64_t now_ns);
/* Every job and producer dropped, never reported: a restore that failed midway. */
void ts_analyzer_clear(struct ts_analyzer *a);
/* Why what the analyzer keeps outside the reports cannot be stored (its state snapshots
 * refused by a full store), NULL once it is again: every report says so (Stored). */
void ts_analyzer_set_trouble(struct ts_analyzer *a, const char *why);
struct ts_job *ts_analyzer_job(struct ts_analyzer *a, const char *ns, const char *name);

#endif
