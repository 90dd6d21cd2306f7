// SPDX-License-Identifier: Apache-2.0
/* The OTLP exporter's insides, shared by otlp.c (spans, windows, sampling) and
 * otlp_send.c (encoding, the sender thread). */
#ifndef TS_OTLP_IMPL_H
#define TS_OTLP_IMPL_H

#include "otlp.h"

#include <curl/curl.h>
#include <pthread.h>

enum qkind { Q_WINDOW, Q_STEP, Q_PHASE, Q_SLOW };

/* A span as queued: flat, owning its strings. */
struct qspan {
	enum qkind kind;
	uint8_t trace[16], id[8], parent[8];
	bool has_parent, has_link, error;
	uint8_t link_trace[16], link_span[8];
	char name[48];
	uint64_t start, end;
	int64_t attr[6];       /* step; a window's number, first/last step, ranks, left out x2 */
	char ns[64], job[64], pod[128], node[64];
	int rank;              /* -1: the job's window */
	char status[96];       /* status message when error */
	char cause[32], evidence[320]; /* slow-rank spans */
	bool has_lost;         /* a window's lost time */
	struct ts_otlp_lost lost;
};

/* A window of one job: what its trace holds so far. */
struct owin {
	int64_t w;             /* -1: unused */
	uint64_t start, end, first_step, last_step;
	size_t bytes;
	uint64_t sampled_out, over_size, errors;
	bool has_lost;         /* the last lost time whose analysis window ended in it */
	struct ts_otlp_lost lost;
};

struct onamed {
	int rank;
	char cause[32];
};

struct ojob {
	char ns[64], job[64];
	uint8_t base[16];
	struct owin win[2];    /* by window number & 1 */
	int nranks;            /* highest rank seen + 1 */
	struct onamed *named;
	int nnamed, capnamed;
};

struct ts_otlp {
	struct ts_otlp_opts o;
	char url[512];
	struct curl_slist *headers;
	char *resource_text;   /* OTEL_RESOURCE_ATTRIBUTES, decoded into pairs */
	size_t resource_len;   /* its length before that (the pairs' bytes, near enough) */
	const char **res_kv;   /* key, value, key, value ... */
	int nres_kv;
	pthread_t thread;
	pthread_mutex_t lock;  /* the queue and the stats */
	pthread_cond_t wake;
	struct qspan *q;
	int head, count;
	bool stop;
	uint64_t next_id;
	struct ts_otlp_stats st;
	struct ojob *jobs;     /* the caller's thread only */
	int njobs;
};

/* otlp_send.c */
int ts_otlp_start(struct ts_otlp *x, char *err, size_t errlen);
void ts_otlp_stop(struct ts_otlp *x);
/* Percent-decodes s in place (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES). */
void ts_otlp_pct_decode(char *s);

#endif
