/* OTLP/HTTP trace export (protobuf, gzip) of a job's timeline: a trace per job
 * attempt, a span per rank per step with child spans for its phases, and a span with
 * an event when a rank is named slow. A bounded queue feeds a sender thread that
 * batches, retries with back-off, and counts what it had to drop. */
#ifndef TS_OTLP_H
#define TS_OTLP_H

#include <stdint.h>

struct ts_otlp_opts {
	const char *endpoint;   /* base URL, e.g. http://jaeger:4318 (/v1/traces is added) */
	const char *service;    /* service.name (default trainscope) */
	int max_queue;          /* spans held at most (default 65536) */
	int batch;              /* spans per request (default 2048) */
	int flush_ms;           /* send at least this often (default 1000) */
	int max_retries;        /* per batch (default 5), back-off from 200 ms doubling */
};

struct ts_otlp_stats {
	uint64_t queued, sent, dropped, batches, retries, failed_batches;
};

/* Who a span is about: becomes its resource. */
struct ts_otlp_who {
	const char *ns, *job, *pod, *node;
	int rank;
};

struct ts_otlp_phase {
	const char *name;
	uint64_t ns;
};

struct ts_otlp;

int ts_otlp_new(struct ts_otlp **out, const struct ts_otlp_opts *o);
/* Sends what is queued (one retry at most per batch from now on), then stops. */
void ts_otlp_free(struct ts_otlp *x);
/* One rank's step: phases are laid end to end from start_ns. */
void ts_otlp_step(struct ts_otlp *x, const struct ts_otlp_who *who, const uint8_t trace_id[16],
		  uint64_t step, uint64_t start_ns, uint64_t end_ns,
		  const struct ts_otlp_phase *phases, int nphases);
/* A rank named slow: a span over [since, now] with an event carrying the evidence. */
void ts_otlp_slow_rank(struct ts_otlp *x, const struct ts_otlp_who *who,
		       const uint8_t trace_id[16], uint64_t since_ns, uint64_t now_ns,
		       const char *cause, const char *evidence);
void ts_otlp_get_stats(struct ts_otlp *x, struct ts_otlp_stats *out);

/* The trace of a job attempt: derived from its namespace, name and first step. */
void ts_otlp_trace_id(const char *ns, const char *job, uint64_t first_start_ns, uint8_t out[16]);

#endif
