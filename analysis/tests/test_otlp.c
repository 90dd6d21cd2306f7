// SPDX-License-Identifier: Apache-2.0
/* The OTLP exporter against a real HTTP receiver: gzip'd protobuf on /v1/traces, span
 * names from the fixed set, a trace per window of steps linked to the one before,
 * healthy ranks sampled and named ranks kept, the per-trace byte budget, span status,
 * resource attributes, headers from OTEL_EXPORTER_OTLP_HEADERS, a retry after the
 * collector's 503, the settings the environment gets wrong, and a window's lost time. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <math.h>
#include <time.h>
#include <zlib.h>

#include "analysis/sinks/otlp.h"
#include "analysis/detect/traceid.h"
#include "proto/otlp_trace.pb-c.h"

#define MAXS 20000

struct rspan {
	uint8_t trace[16], id[8], parent[8], link_trace[16], link_span[8];
	bool has_link, error;
	char name[48];
	int rank;
	int64_t step;
	size_t bytes;
	int64_t window, lost_top;             /* -1: none */
	double lost[4];                       /* share, ranks, stages, data; NAN: none */
};

struct receiver {
	pthread_mutex_t lock;
	int requests, spans, children, events, bad, fail_first;
	char pod[64], service[64], extra[64];
	char enc[32], ctype[64], path[64], auth[128], tenant[64];
	struct rspan *s;
};

struct body {
	unsigned char *data;
	size_t len;
};

static const char *res_attr(Trainscope__Otlp__Resource *r, const char *k)
{
	for (size_t a = 0; a < r->n_attributes; a++)
		if (!strcmp(r->attributes[a]->key, k))
			return r->attributes[a]->value->string_value;
	return NULL;
}

static int64_t int_attr(Trainscope__Otlp__KeyValue **kv, size_t n, const char *k)
{
	for (size_t a = 0; a < n; a++)
		if (!strcmp(kv[a]->key, k))
			return kv[a]->value->int_value;
	return -1;
}

static double double_attr(Trainscope__Otlp__KeyValue **kv, size_t n, const char *k)
{
	for (size_t a = 0; a < n; a++)
		if (!strcmp(kv[a]->key, k) &&
		    kv[a]->value->value_case == TRAINSCOPE__OTLP__ANY_VALUE__VALUE_DOUBLE_VALUE)
			return kv[a]->value->double_value;
	return NAN;
}

/* A span's bytes at a backend: its own, and its resource's once per ResourceSpans. */
static void one(struct receiver *r, Trainscope__Otlp__ResourceSpans *rs, Trainscope__Otlp__Span *sp,
		bool first)
{
	struct rspan *o = &r->s[r->spans < MAXS ? r->spans : MAXS - 1];

	r->spans++;
	r->children += sp->parent_span_id.len == 8;
	r->events += (int)sp->n_events;
	if (sp->trace_id.len != 16 || sp->span_id.len != 8 ||
	    sp->end_time_unix_nano < sp->start_time_unix_nano) {
		r->bad++;
		return;
	}
	memcpy(o->trace, sp->trace_id.data, 16);
	memcpy(o->id, sp->span_id.data, 8);
	if (sp->parent_span_id.len == 8)
		memcpy(o->parent, sp->parent_span_id.data, 8);
	if ((o->has_link = sp->n_links == 1)) {
		memcpy(o->link_trace, sp->links[0]->trace_id.data, 16);
		memcpy(o->link_span, sp->links[0]->span_id.data, 8);
	}
	o->error = sp->status && sp->status->code == TRAINSCOPE__OTLP__STATUS__STATUS_CODE__STATUS_CODE_ERROR;
	snprintf(o->name, sizeof(o->name), "%s", sp->name);
	o->step = int_attr(sp->attributes, sp->n_attributes, "trainscope.step");
	o->window = int_attr(sp->attributes, sp->n_attributes, "trainscope.window");
	o->lost_top = int_attr(sp->attributes, sp->n_attributes, "trainscope.lost_time.top_rank");
	static const char *const lost[4] = { "share", "ranks", "stages", "data" };
	for (int i = 0; i < 4; i++) {
		char key[48];
		snprintf(key, sizeof(key), "trainscope.lost_time.%s", lost[i]);
		o->lost[i] = double_attr(sp->attributes, sp->n_attributes, key);
	}
	o->rank = -1;
	for (size_t a = 0; a < rs->resource->n_attributes; a++)
		if (!strcmp(rs->resource->attributes[a]->key, "trainscope.rank"))
			o->rank = (int)rs->resource->attributes[a]->value->int_value;
	o->bytes = trainscope__otlp__span__get_packed_size(sp) +
		   (first ? trainscope__otlp__resource__get_packed_size(rs->resource) + 8 : 0);
}

static void take(struct receiver *r, const unsigned char *body, size_t len, bool gz)
{
	unsigned char *raw = malloc(1 << 24);
	z_stream z = { .next_in = (unsigned char *)body, .avail_in = (uInt)len, .next_out = raw,
		       .avail_out = 1 << 24 };
	Trainscope__Otlp__ExportTraceServiceRequest *req = NULL;

	if (!gz)
		req = trainscope__otlp__export_trace_service_request__unpack(NULL, len, body);
	else if (inflateInit2(&z, 15 + 16) == Z_OK && inflate(&z, Z_FINISH) == Z_STREAM_END)
		req = trainscope__otlp__export_trace_service_request__unpack(NULL, z.total_out, raw);
	if (gz)
		inflateEnd(&z);
	if (!req) {
		r->bad++;
		free(raw);
		return;
	}
	for (size_t i = 0; i < req->n_resource_spans; i++) {
		Trainscope__Otlp__ResourceSpans *rs = req->resource_spans[i];
		const char *v;
		if ((v = res_attr(rs->resource, "k8s.pod.name")))
			snprintf(r->pod, sizeof(r->pod), "%s", v);
		if ((v = res_attr(rs->resource, "service.name")))
			snprintf(r->service, sizeof(r->service), "%s", v);
		if ((v = res_attr(rs->resource, "deployment.environment.name")))
			snprintf(r->extra, sizeof(r->extra), "%s", v);
		if (res_attr(rs->resource, "k8s.job.name"))
			r->bad++; /* reserved for batch/v1 Jobs */
		for (size_t s = 0; s < rs->n_scope_spans; s++)
			for (size_t k = 0; k < rs->scope_spans[s]->n_spans; k++)
				one(r, rs, rs->scope_spans[s]->spans[k], s == 0 && k == 0);
	}
	trainscope__otlp__export_trace_service_request__free_unpacked(req, NULL);
	free(raw);
}

static enum MHD_Result on_req(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *data,
			      size_t *size, void **con_cls)
{
	struct receiver *r = cls;
	struct body *b = *con_cls;
	int first;

	(void)method, (void)version;
	if (!b) {
		*con_cls = calloc(1, sizeof(struct body));
		return MHD_YES;
	}
	if (*size) {
		b->data = realloc(b->data, b->len + *size);
		memcpy(b->data + b->len, data, *size);
		b->len += *size;
		*size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&r->lock);
	first = r->requests++ == 0 && r->fail_first;
	snprintf(r->path, sizeof(r->path), "%s", url);
	const char *enc = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	const char *au = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Tenant");
	snprintf(r->enc, sizeof(r->enc), "%s", enc ? enc : "");
	snprintf(r->ctype, sizeof(r->ctype), "%s", ct ? ct : "");
	snprintf(r->auth, sizeof(r->auth), "%s", au ? au : "");
	snprintf(r->tenant, sizeof(r->tenant), "%s", te ? te : "");
	if (!first)
		take(r, b->data, b->len, enc && !strcmp(enc, "gzip"));
	pthread_mutex_unlock(&r->lock);
	free(b->data);
	free(b);
	*con_cls = NULL;
	struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret = MHD_queue_response(c, first ? 503 : 200, resp);
	MHD_destroy_response(resp);
	return ret;
}

static struct MHD_Daemon *serve(struct receiver *r, char *url, size_t len)
{
	struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
						on_req, r, MHD_OPTION_END);
	assert_non_null(d);
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	snprintf(url, len, "http://127.0.0.1:%u/v1/traces", info->port);
	r->s = calloc(MAXS, sizeof(*r->s));
	assert_non_null(r->s);
	return d;
}

static int named(const struct receiver *r, const char *name)
{
	int n = 0;

	for (int i = 0; i < r->spans && i < MAXS; i++)
		n += !strcmp(r->s[i].name, name);
	return n;
}

static void test_export_with_retry(void **state)
{
	struct receiver r = { .lock = PTHREAD_MUTEX_INITIALIZER, .fail_first = 1 };
	char url[64], err[256];
	struct ts_otlp *x;
	uint8_t tid[16];
	struct ts_otlp_who who = { "team", "llm", "llm-worker-5", "node-2", 5 };
	struct ts_otlp_phase ph[] = { { "dataloader", 10 }, { "compute", 50 }, { "collective", 30 },
				      { "checkpoint", 0 } };
	struct MHD_Daemon *d = serve(&r, url, sizeof(url));

	(void)state;
	struct ts_otlp_opts o = { .endpoint = url, .flush_ms = 50,
				  .resource = "deployment.environment.name=prod,k8s.pod.name=x" };
	assert_int_equal(ts_otlp_new(&x, &o, err, sizeof(err)), 0);
	ts_trace_id("team", "llm", 1000, tid);
	for (uint64_t s = 0; s < 10; s++)
		ts_otlp_step(x, &who, tid, s, 1000 + s * 100, 1000 + s * 100 + 95, ph, 4);
	ts_otlp_slow_rank(x, &who, tid, 1000, 2000, "Compute", "compute 39 ms vs 30 ms");
	ts_otlp_free(x); /* closes the window, sends what is queued, retries after the 503 */
	pthread_mutex_lock(&r.lock);
	assert_true(r.requests >= 2);
	assert_string_equal(r.path, "/v1/traces");
	assert_string_equal(r.enc, "gzip");
	assert_string_equal(r.ctype, "application/x-protobuf");
	assert_int_equal(r.bad, 0);
	/* steps, 3 phases each (0 ns skipped), the slow rank, the window */
	assert_int_equal(r.spans, 10 + 30 + 1 + 1);
	assert_int_equal(named(&r, "train.step"), 10);
	assert_int_equal(named(&r, "train.phase.compute"), 10);
	assert_int_equal(named(&r, "train.phase.checkpoint"), 0);
	assert_int_equal(named(&r, "slow_rank"), 1);
	assert_int_equal(named(&r, "train.window"), 1);
	assert_int_equal(r.children, 41); /* all but the window's root */
	assert_int_equal(r.events, 1);
	assert_string_equal(r.pod, "llm-worker-5"); /* OTEL_RESOURCE_ATTRIBUTES cannot override it */
	assert_string_equal(r.service, "llm");
	assert_string_equal(r.extra, "prod");
	for (int i = 0; i < r.spans; i++)
		assert_int_equal(r.s[i].error, !strcmp(r.s[i].name, "slow_rank"));
	pthread_mutex_unlock(&r.lock);
	MHD_stop_daemon(d);
	free(r.s);
}

static const struct rspan *find_root(const struct receiver *r, const uint8_t trace[16])
{
	for (int i = 0; i < r->spans && i < MAXS; i++)
		if (!strcmp(r->s[i].name, "train.window") && !memcmp(r->s[i].trace, trace, 16))
			return &r->s[i];
	return NULL;
}

/* 64 ranks, 30 steps, windows of 10, 4 healthy ranks a window: three linked traces, a
 * rotating sample, rank 37 kept from its naming on, and a trace budget that holds. */
static void test_windows_sampling_budget(void **state)
{
	struct receiver r = { .lock = PTHREAD_MUTEX_INITIALIZER };
	char url[64], err[256];
	struct ts_otlp *x;
	struct ts_otlp_stats st;
	uint8_t base[16], t1[16];
	struct ts_otlp_phase ph[] = { { "compute", 50 }, { "collective", 30 } };
	struct MHD_Daemon *d = serve(&r, url, sizeof(url));
	int steps[3][64] = { { 0 } }, named37 = 0;

	(void)state;
	struct ts_otlp_opts o = { .endpoint = url, .flush_ms = 50, .window_steps = 10,
				  .sample_ranks = 4, .max_trace_kb = 64 };
	assert_int_equal(ts_otlp_new(&x, &o, err, sizeof(err)), 0);
	ts_trace_id("team", "big", 7, base);
	ts_window_trace(base, 1, t1);
	for (uint64_t s = 0; s < 30; s++) {
		for (int k = 0; k < 64; k++) {
			struct ts_otlp_who who = { "team", "big", "", "n", k };
			ts_otlp_step(x, &who, base, s, 1000 + s * 100, 1090 + s * 100, ph, 2);
		}
		if (s == 12) {
			struct ts_otlp_who who = { "team", "big", "", "n", 37 };
			ts_otlp_slow_rank(x, &who, t1, 2000, 2200, "Compute", "+30%");
		}
	}
	ts_otlp_job_end(x, "team", "big");
	ts_otlp_get_stats(x, &st);
	ts_otlp_free(x);

	pthread_mutex_lock(&r.lock);
	assert_int_equal(r.bad, 0);
	assert_int_equal(named(&r, "train.window"), 3);
	assert_int_equal((int)st.windows, 3);
	size_t bytes[3] = { 0 };
	for (int i = 0; i < r.spans; i++) {
		const struct rspan *sp = &r.s[i];
		int w = -1;
		for (int k = 0; k < 3; k++) {
			uint8_t t[16];
			ts_window_trace(base, (uint64_t)k, t);
			if (!memcmp(sp->trace, t, 16))
				w = k;
		}
		assert_true(w >= 0); /* every span in one of the window traces */
		bytes[w] += sp->bytes;
		const struct rspan *root = find_root(&r, sp->trace);
		assert_non_null(root);
		if (!strcmp(sp->name, "train.step")) {
			assert_memory_equal(sp->parent, root->id, 8);
			assert_int_equal(sp->step / 10, w);
			steps[w][sp->rank]++;
			named37 += sp->rank == 37 && sp->error;
		}
		if (!strcmp(sp->name, "train.window")) {
			assert_int_equal(sp->has_link, w > 0);
			if (w > 0) { /* linked to the window before */
				uint8_t prev[16];
				ts_window_trace(base, (uint64_t)w - 1, prev);
				assert_memory_equal(sp->link_trace, prev, 16);
				assert_memory_equal(sp->link_span, find_root(&r, prev)->id, 8);
			}
		}
		if (!strcmp(sp->name, "slow_rank")) {
			assert_int_equal(w, 1);
			assert_memory_equal(sp->parent, root->id, 8);
		}
	}
	/* window 0 kept whatever its first step saw before the job looked large; windows
	 * 1 and 2 keep the next blocks of 4 ranks */
	for (int k = 4; k < 8; k++)
		assert_int_equal(steps[1][k], 10);
	for (int k = 8; k < 12; k++)
		assert_int_equal(steps[2][k], 10);
	assert_int_equal(steps[1][0], 0);
	assert_int_equal(steps[1][37] + steps[2][37], 17); /* steps 13-29: kept once named */
	assert_int_equal(named37, 17);
	assert_true(st.sampled_out > 1500);
	for (int w = 0; w < 3; w++)
		assert_true(bytes[w] <= 64 * 1024); /* the budget holds, as protobuf */
	pthread_mutex_unlock(&r.lock);
	MHD_stop_daemon(d);
	free(r.s);
}

/* A budget too small for a window's sample: spans past it are dropped and counted. */
static void test_trace_budget_counts(void **state)
{
	struct receiver r = { .lock = PTHREAD_MUTEX_INITIALIZER };
	char url[64], err[256];
	struct ts_otlp *x;
	struct ts_otlp_stats st;
	uint8_t base[16] = { 9 };
	struct ts_otlp_phase ph[] = { { "compute", 50 } };
	struct MHD_Daemon *d = serve(&r, url, sizeof(url));

	(void)state;
	struct ts_otlp_opts o = { .endpoint = url, .flush_ms = 50, .window_steps = 1000,
				  .sample_ranks = -1, .max_trace_kb = 16 };
	assert_int_equal(ts_otlp_new(&x, &o, err, sizeof(err)), 0);
	for (uint64_t s = 0; s < 100; s++) {
		struct ts_otlp_who who = { "ns", "j", "pod", "n", 0 };
		ts_otlp_step(x, &who, base, s, 10, 20, ph, 1);
	}
	ts_otlp_get_stats(x, &st);
	ts_otlp_free(x);
	pthread_mutex_lock(&r.lock);
	size_t bytes = 0;
	for (int i = 0; i < r.spans; i++)
		bytes += r.s[i].bytes;
	assert_true(bytes <= 16 * 1024);
	assert_true(st.over_size > 0);
	/* every step accounted for: sent with its phase, or counted over size */
	assert_int_equal(named(&r, "train.step") * 2 + (int)st.over_size, 200);
	pthread_mutex_unlock(&r.lock);
	MHD_stop_daemon(d);
	free(r.s);
}

static void test_env_settings(void **state)
{
	struct receiver r = { .lock = PTHREAD_MUTEX_INITIALIZER };
	char url[64], base[64], err[256];
	struct ts_otlp_env env;
	struct ts_otlp *x;
	uint8_t tid[16] = { 1 };
	struct ts_otlp_phase ph[] = { { "compute", 5 } };
	struct ts_otlp_who who = { "n", "j", "", "", 0 };
	struct MHD_Daemon *d = serve(&r, url, sizeof(url));

	(void)state;
	snprintf(base, sizeof(base), "%.*s/", (int)(strlen(url) - strlen("/v1/traces")), url);
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", base, 1);
	setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20s3cret , x-tenant=t1", 1);
	setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "none", 1);
	setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2000", 1);
	setenv("OTEL_SERVICE_NAME", "training", 1);
	assert_int_equal(ts_otlp_env_load(&env, NULL, err, sizeof(err)), 0);
	assert_true(env.enabled);
	assert_string_equal(env.url, url); /* base + v1/traces, one slash */
	assert_int_equal(env.opts.timeout_ms, 2000);
	env.opts.flush_ms = 20;
	assert_int_equal(ts_otlp_new(&x, &env.opts, err, sizeof(err)), 0);
	ts_otlp_step(x, &who, tid, 1, 10, 20, ph, 1);
	ts_otlp_free(x);
	pthread_mutex_lock(&r.lock);
	assert_string_equal(r.auth, "Bearer s3cret");
	assert_string_equal(r.tenant, "t1");
	assert_string_equal(r.enc, "");
	assert_string_equal(r.service, "training");
	assert_int_equal(r.spans, 3);
	pthread_mutex_unlock(&r.lock);

	/* the traces-specific endpoint is used as given */
	setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://tempo:4318/otlp/v1/traces", 1);
	assert_int_equal(ts_otlp_env_load(&env, NULL, err, sizeof(err)), 0);
	assert_string_equal(env.url, "https://tempo:4318/otlp/v1/traces");
	assert_int_equal(ts_otlp_env_load(&env, "http://j:4318", err, sizeof(err)), 0);
	assert_string_equal(env.url, "http://j:4318/v1/traces"); /* the flag wins */

	/* settings that cannot work say so */
	setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc", 1);
	assert_int_equal(ts_otlp_env_load(&env, NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc"));
	unsetenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
	setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "10s", 1);
	assert_int_equal(ts_otlp_env_load(&env, NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "milliseconds"));
	unsetenv("OTEL_EXPORTER_OTLP_TIMEOUT");
	setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent/ca.pem", 1);
	assert_int_equal(ts_otlp_env_load(&env, NULL, err, sizeof(err)), 0);
	assert_int_equal(ts_otlp_new(&x, &env.opts, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "OTEL_EXPORTER_OTLP_CERTIFICATE"));
	unsetenv("OTEL_EXPORTER_OTLP_CERTIFICATE");
	setenv("OTEL_EXPORTER_OTLP_HEADERS", "novalue", 1);
	assert_int_equal(ts_otlp_env_load(&env, NULL, err, sizeof(err)), 0);
	assert_int_equal(ts_otlp_new(&x, &env.opts, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "\"novalue\" is not key=value"));
	setenv("OTEL_SDK_DISABLED", "true", 1);
	assert_int_equal(ts_otlp_env_load(&env, NULL, err, sizeof(err)), 0);
	assert_false(env.enabled);
	MHD_stop_daemon(d);
	free(r.s);
}

static void test_unreachable_collector_counts_drops(void **state)
{
	struct ts_otlp_opts o = { .endpoint = "http://127.0.0.1:1/v1/traces", .flush_ms = 20,
				  .max_queue = 16, .max_retries = -1 };
	struct ts_otlp_phase ph[] = { { "compute", 5 } };
	struct ts_otlp_who who = { "n", "j", "", "", 0 };
	struct ts_otlp_stats st;
	struct ts_otlp *x;
	char err[256];
	uint8_t tid[16] = { 1 };

	(void)state;
	assert_int_equal(ts_otlp_new(&x, &o, err, sizeof(err)), 0);
	for (int i = 0; i < 100; i++)
		ts_otlp_step(x, &who, tid, (uint64_t)i, 10, 20, ph, 1);
	ts_otlp_get_stats(x, &st);
	ts_otlp_free(x);
	/* every span is accounted for: sent (none), dropped, or still queued at stats time */
	assert_int_equal(st.queued, 200);
	assert_int_equal(st.sent, 0);
}

static const struct rspan *window_span(const struct receiver *r, int64_t w)
{
	for (int i = 0; i < r->spans && i < MAXS; i++)
		if (!strcmp(r->s[i].name, "train.window") && r->s[i].window == w)
			return &r->s[i];
	return NULL;
}

/* The lost time the analyzer last gave for a window while it was open rides on its
 * train.window span; a window given none, or given one after it closed, carries none. */
static void test_window_lost_time(void **state)
{
	struct receiver r = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct ts_otlp_who who = { "team", "llm", "llm-0", "node-0", 0 };
	struct ts_otlp_phase ph[] = { { "compute", 50 } };
	char url[64], err[256];
	struct ts_otlp *x;
	uint8_t tid[16];
	struct MHD_Daemon *d = serve(&r, url, sizeof(url));

	(void)state;
	struct ts_otlp_opts o = { .endpoint = url, .flush_ms = 50, .window_steps = 10 };
	assert_int_equal(ts_otlp_new(&x, &o, err, sizeof(err)), 0);
	ts_trace_id("team", "llm", 1000, tid);
	for (uint64_t s = 0; s < 25; s++) {
		ts_otlp_step(x, &who, tid, s, 1000 + s * 100, 1090 + s * 100, ph, 1);
		if (s == 7)
			ts_otlp_lost_time(x, "team", "llm", &(struct ts_otlp_lost){ 5, 0.1, 0.1, 0, 0, 3 });
		if (s == 9)
			ts_otlp_lost_time(x, "team", "llm",
					  &(struct ts_otlp_lost){ 9, 0.42, 0.4, 0.005, 0.015, 5 });
	}
	/* window 0 closed when window 2 opened: too late for it */
	ts_otlp_lost_time(x, "team", "llm", &(struct ts_otlp_lost){ 3, 0.9, 0.9, 0, 0, 1 });
	ts_otlp_lost_time(x, "team", "llm", &(struct ts_otlp_lost){ 22, 0.02, 0, 0, 0.02, -1 });
	ts_otlp_lost_time(x, "team", "other", &(struct ts_otlp_lost){ 22, 0.5, 0.5, 0, 0, 1 });
	ts_otlp_free(x);
	pthread_mutex_lock(&r.lock);
	assert_int_equal(named(&r, "train.window"), 3);
	const struct rspan *w0 = window_span(&r, 0), *w1 = window_span(&r, 1);
	const struct rspan *w2 = window_span(&r, 2);
	assert_non_null(w0), assert_non_null(w1), assert_non_null(w2);
	assert_true(w0->lost[0] == 0.42 && w0->lost[1] == 0.4 && w0->lost[2] == 0.005 &&
		    w0->lost[3] == 0.015);
	assert_int_equal(w0->lost_top, 5);
	for (int i = 0; i < 4; i++)
		assert_true(isnan(w1->lost[i]));
	assert_int_equal(w1->lost_top, -1);
	assert_true(w2->lost[0] == 0.02 && w2->lost[3] == 0.02);
	assert_int_equal(w2->lost_top, -1); /* no rank cost any */
	for (int i = 0; i < r.spans; i++)
		assert_true(!strcmp(r.s[i].name, "train.window") || isnan(r.s[i].lost[0]));
	pthread_mutex_unlock(&r.lock);
	MHD_stop_daemon(d);
	free(r.s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_export_with_retry),
		cmocka_unit_test(test_windows_sampling_budget),
		cmocka_unit_test(test_trace_budget_counts),
		cmocka_unit_test(test_env_settings),
		cmocka_unit_test(test_unreachable_collector_counts_drops),
		cmocka_unit_test(test_window_lost_time),
	};
	return cmocka_run_group_tests_name("otlp", tests, NULL, NULL);
}
