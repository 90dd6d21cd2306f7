/* The OTLP exporter against a real HTTP receiver: gzip'd protobuf on /v1/traces, step
 * spans with their phases as children, k8s.* resource attributes, the slow-rank event,
 * and a retry after the collector's 503. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "analysis/otlp.h"
#include "proto/otlp_trace.pb-c.h"

struct receiver {
	pthread_mutex_t lock;
	int requests, spans, children, events, bad;
	char pod[64];
	char enc[32], ctype[64], path[64];
};

struct body {
	unsigned char *data;
	size_t len;
};

static void take(struct receiver *r, const unsigned char *gz, size_t len)
{
	unsigned char *raw = malloc(1 << 22);
	z_stream z = { .next_in = (unsigned char *)gz, .avail_in = (uInt)len, .next_out = raw,
		       .avail_out = 1 << 22 };
	Trainscope__Otlp__ExportTraceServiceRequest *req = NULL;

	if (inflateInit2(&z, 15 + 16) == Z_OK && inflate(&z, Z_FINISH) == Z_STREAM_END)
		req = trainscope__otlp__export_trace_service_request__unpack(NULL, z.total_out, raw);
	inflateEnd(&z);
	if (!req) {
		r->bad++;
		free(raw);
		return;
	}
	for (size_t i = 0; i < req->n_resource_spans; i++) {
		Trainscope__Otlp__ResourceSpans *rs = req->resource_spans[i];
		for (size_t a = 0; a < rs->resource->n_attributes; a++)
			if (!strcmp(rs->resource->attributes[a]->key, "k8s.pod.name"))
				snprintf(r->pod, sizeof(r->pod), "%s",
					 rs->resource->attributes[a]->value->string_value);
		for (size_t s = 0; s < rs->n_scope_spans; s++)
			for (size_t k = 0; k < rs->scope_spans[s]->n_spans; k++) {
				Trainscope__Otlp__Span *sp = rs->scope_spans[s]->spans[k];
				r->spans++;
				r->children += sp->parent_span_id.len == 8;
				r->events += (int)sp->n_events;
				if (sp->trace_id.len != 16 || sp->span_id.len != 8 ||
				    sp->end_time_unix_nano < sp->start_time_unix_nano)
					r->bad++;
			}
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
	first = r->requests++ == 0;
	snprintf(r->path, sizeof(r->path), "%s", url);
	const char *enc = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	snprintf(r->enc, sizeof(r->enc), "%s", enc ? enc : "");
	snprintf(r->ctype, sizeof(r->ctype), "%s", ct ? ct : "");
	if (!first)
		take(r, b->data, b->len);
	pthread_mutex_unlock(&r->lock);
	free(b->data);
	free(b);
	*con_cls = NULL;
	struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret = MHD_queue_response(c, first ? 503 : 200, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void test_export_with_retry(void **state)
{
	struct receiver r = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
						on_req, &r, MHD_OPTION_END);
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	char url[64];
	struct ts_otlp *x;
	uint8_t tid[16];
	struct ts_otlp_who who = { "team", "llm", "llm-worker-5", "node-2", 5 };
	struct ts_otlp_phase ph[] = { { "dataloader", 10 }, { "compute", 50 }, { "collective", 30 },
				      { "checkpoint", 0 } };

	(void)state;
	assert_non_null(d);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", info->port);
	struct ts_otlp_opts o = { .endpoint = url, .flush_ms = 50 };
	assert_int_equal(ts_otlp_new(&x, &o), 0);
	ts_otlp_trace_id("team", "llm", 1000, tid);
	for (uint64_t s = 0; s < 10; s++)
		ts_otlp_step(x, &who, tid, s, 1000 + s * 100, 1000 + s * 100 + 95, ph, 4);
	ts_otlp_slow_rank(x, &who, tid, 1000, 2000, "Compute", "compute 39 ms vs 30 ms");
	ts_otlp_free(x); /* sends what is queued, with one retry after the 503 */
	pthread_mutex_lock(&r.lock);
	assert_true(r.requests >= 2);
	assert_string_equal(r.path, "/v1/traces");
	assert_string_equal(r.enc, "gzip");
	assert_string_equal(r.ctype, "application/x-protobuf");
	assert_int_equal(r.bad, 0);
	assert_int_equal(r.spans, 10 + 30 + 1); /* steps, 3 phases each (0 ns skipped), slow rank */
	assert_int_equal(r.children, 30);
	assert_int_equal(r.events, 1);
	assert_string_equal(r.pod, "llm-worker-5");
	pthread_mutex_unlock(&r.lock);
	MHD_stop_daemon(d);
}

static void test_unreachable_collector_counts_drops(void **state)
{
	struct ts_otlp_opts o = { .endpoint = "http://127.0.0.1:1", .flush_ms = 20,
				  .max_queue = 16, .max_retries = -1 };
	struct ts_otlp_phase ph[] = { { "compute", 5 } };
	struct ts_otlp_who who = { "n", "j", "", "", 0 };
	struct ts_otlp_stats st;
	struct ts_otlp *x;
	uint8_t tid[16] = { 1 };

	(void)state;
	assert_int_equal(ts_otlp_new(&x, &o), 0);
	for (int i = 0; i < 100; i++)
		ts_otlp_step(x, &who, tid, (uint64_t)i, 10, 20, ph, 1);
	ts_otlp_get_stats(x, &st);
	ts_otlp_free(x);
	/* every span is accounted for: sent (none), dropped, or still queued at stats time */
	assert_int_equal(st.queued, 200);
	assert_int_equal(st.sent, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_export_with_retry),
		cmocka_unit_test(test_unreachable_collector_counts_drops),
	};
	return cmocka_run_group_tests_name("otlp", tests, NULL, NULL);
}
