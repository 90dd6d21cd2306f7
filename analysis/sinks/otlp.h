// SPDX-License-Identifier: Apache-2.0
/* OTLP/HTTP trace export (protobuf, gzip) of a job's timeline.
 *
 * A job attempt is cut into windows of steps, one trace each: a root span
 * `train.window` (linked to the window before), under it a `train.step` span per kept
 * rank per step with `train.phase.<name>` children, and `slow_rank` spans when a rank
 * is named; the root carries the job's lost time when the analyzer gave one. Span
 * names come from that fixed set, whatever the job's size. Large jobs keep the steps
 * of a few healthy ranks per window (a different few each window) and
 * of every named rank, and a window's trace stops growing at a byte budget, so a
 * backend's per-trace limit (Tempo: 5 MB) is never passed.
 *
 * A bounded queue feeds a sender thread that batches, retries with back-off and counts
 * what it had to drop. The per-job state belongs to the caller's thread. */
#ifndef TS_OTLP_H
#define TS_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ts_otlp_opts {
	const char *endpoint;    /* the traces URL, used as given (ts_otlp_env_load makes it) */
	const char *headers;     /* "k=v,k2=v2", values percent-encoded (OTEL_EXPORTER_OTLP_HEADERS) */
	const char *ca_file;     /* CA bundle for https (OTEL_EXPORTER_OTLP_CERTIFICATE) */
	const char *client_cert; /* client certificate and key for mutual TLS */
	const char *client_key;
	int timeout_ms;          /* per request (default 10000) */
	bool no_gzip;            /* OTEL_EXPORTER_OTLP_COMPRESSION=none */
	const char *service;     /* service.name of every span; default: the training job's name */
	const char *resource;    /* more resource attributes, as OTEL_RESOURCE_ATTRIBUTES */
	int window_steps;        /* steps in a trace (default 100) */
	int sample_ranks;        /* healthy ranks kept per window (default 8; < 0: all) */
	int max_trace_kb;        /* a window's spans past this are dropped (default 4096) */
	int max_queue;           /* spans held at most (default 65536) */
	int batch;               /* spans per request (default 2048) */
	int flush_ms;            /* send at least this often (default 1000) */
	int max_retries;         /* per batch (default 5, < 0: none), back-off from 200 ms doubling */
};

struct ts_otlp_stats {
	uint64_t queued, sent, dropped, batches, retries, failed_batches;
	uint64_t windows;     /* traces closed */
	uint64_t sampled_out; /* step spans of healthy ranks left out by sampling */
	uint64_t over_size;   /* spans left out because their window reached max_trace_kb */
	uint64_t late;        /* steps that came after their window was closed */
};

/* Who a span is about: becomes its resource. */
struct ts_otlp_who {
	const char *ns, *job, *pod, *node;
	int rank;
};

struct ts_otlp_phase {
	const char *name; /* one of a fixed set: the span is train.phase.<name> */
	uint64_t ns;
};

struct ts_otlp;

/* The exporter's settings from the OpenTelemetry environment (OTEL_EXPORTER_OTLP_* for
 * traces, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES). The strings point into the
 * environment or into env. Returns 0 with env->enabled false when nothing asks for
 * traces, or a negative errno with err saying which setting is wrong. */
struct ts_otlp_env {
	bool enabled;
	char url[512];
	struct ts_otlp_opts opts;
};
int ts_otlp_env_load(struct ts_otlp_env *env, const char *endpoint_flag, char *err, size_t errlen);

/* Returns 0, -EINVAL with err set for bad settings (headers, files), or -ENOMEM. */
int ts_otlp_new(struct ts_otlp **out, const struct ts_otlp_opts *o, char *err, size_t errlen);
/* Closes every window, sends what is queued (one retry at most per batch), then stops. */
void ts_otlp_free(struct ts_otlp *x);
/* One rank's step of the job attempt whose trace is base_trace: phases are laid end to
 * end from start_ns. */
void ts_otlp_step(struct ts_otlp *x, const struct ts_otlp_who *who, const uint8_t base_trace[16],
		  uint64_t step, uint64_t start_ns, uint64_t end_ns,
		  const struct ts_otlp_phase *phases, int nphases);
/* A rank named slow, in the window trace the report points to: a span over [since, now]
 * with status ERROR and an event carrying the evidence. The rank's steps are kept from
 * now on. */
void ts_otlp_slow_rank(struct ts_otlp *x, const struct ts_otlp_who *who, const uint8_t trace[16],
		       uint64_t since_ns, uint64_t now_ns, const char *cause, const char *evidence);
/* Where the job's step time went over an analysis window (job.h's ts_lost_time): shares
 * of the step time, and the rank that cost the most (-1: none). */
struct ts_otlp_lost {
	uint64_t to_step;  /* the analysis window's last step */
	double share, ranks, stages, data;
	int top_rank;
};
/* The job's lost time as of to_step: the train.window span of the trace that holds
 * to_step carries the last one given while that window is open (trainscope.lost_time.*
 * attributes); a window closed already, or never opened, takes none. */
void ts_otlp_lost_time(struct ts_otlp *x, const char *ns, const char *job,
		       const struct ts_otlp_lost *l);
/* The job ended or was forgotten: its open windows are closed. */
void ts_otlp_job_end(struct ts_otlp *x, const char *ns, const char *job);
void ts_otlp_get_stats(struct ts_otlp *x, struct ts_otlp_stats *out);


#endif
