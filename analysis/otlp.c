#include "otlp.h"
#include "log.h"
#include "proto/otlp_trace.pb-c.h"
#include "tsclock.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

typedef Trainscope__Otlp__KeyValue KeyValue;
typedef Trainscope__Otlp__AnyValue AnyValue;
typedef Trainscope__Otlp__Span Span;

/* A span as queued: flat, owning its strings. */
struct qspan {
	uint8_t trace[16], id[8], parent[8];
	bool has_parent;
	char name[48];
	uint64_t start, end, step;
	char ns[64], job[64], pod[128], node[64];
	int rank;
	char cause[32], evidence[320]; /* slow-rank spans */
};

struct ts_otlp {
	struct ts_otlp_opts o;
	char url[512];
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct qspan *q;
	int head, count;
	bool stop;
	uint64_t next_id;
	struct ts_otlp_stats st;
};

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	while (*s)
		h = mix(h ^ (uint8_t)*s++);
	return h;
}

void ts_otlp_trace_id(const char *ns, const char *job, uint64_t first_start_ns, uint8_t out[16])
{
	uint64_t a = mix(hash_str(hash_str(1, ns), job) ^ first_start_ns), b = mix(a ^ 0xabcdef);

	memcpy(out, &a, 8);
	memcpy(out + 8, &b, 8);
}

/* Caller holds the lock. A full queue drops its oldest span. */
static struct qspan *slot(struct ts_otlp *x)
{
	struct qspan *s;

	if (x->count == x->o.max_queue) {
		x->head = (x->head + 1) % x->o.max_queue;
		x->count--;
		x->st.dropped++;
	}
	s = &x->q[(x->head + x->count++) % x->o.max_queue];
	memset(s, 0, sizeof(*s));
	x->st.queued++;
	uint64_t id = mix(++x->next_id ^ (uint64_t)(uintptr_t)x);
	memcpy(s->id, &id, 8);
	return s;
}

static void who_into(struct qspan *s, const struct ts_otlp_who *w, const uint8_t trace[16])
{
	memcpy(s->trace, trace, 16);
	snprintf(s->ns, sizeof(s->ns), "%s", w->ns ? w->ns : "");
	snprintf(s->job, sizeof(s->job), "%s", w->job ? w->job : "");
	snprintf(s->pod, sizeof(s->pod), "%s", w->pod ? w->pod : "");
	snprintf(s->node, sizeof(s->node), "%s", w->node ? w->node : "");
	s->rank = w->rank;
}

void ts_otlp_step(struct ts_otlp *x, const struct ts_otlp_who *who, const uint8_t trace_id[16],
		  uint64_t step, uint64_t start_ns, uint64_t end_ns,
		  const struct ts_otlp_phase *phases, int nphases)
{
	uint64_t at = start_ns;
	struct qspan *p;

	pthread_mutex_lock(&x->lock);
	p = slot(x);
	who_into(p, who, trace_id);
	snprintf(p->name, sizeof(p->name), "step %llu", (unsigned long long)step);
	p->start = start_ns;
	p->end = end_ns;
	p->step = step;
	uint8_t parent[8];
	memcpy(parent, p->id, 8);
	for (int i = 0; i < nphases; i++) {
		if (!phases[i].ns)
			continue;
		struct qspan *c = slot(x);
		who_into(c, who, trace_id);
		snprintf(c->name, sizeof(c->name), "%s", phases[i].name);
		memcpy(c->parent, parent, 8);
		c->has_parent = true;
		c->start = at;
		c->end = at + phases[i].ns;
		c->step = step;
		at = c->end;
	}
	if (x->count >= x->o.batch)
		pthread_cond_signal(&x->wake);
	pthread_mutex_unlock(&x->lock);
}

void ts_otlp_slow_rank(struct ts_otlp *x, const struct ts_otlp_who *who,
		       const uint8_t trace_id[16], uint64_t since_ns, uint64_t now_ns,
		       const char *cause, const char *evidence)
{
	struct qspan *s;

	pthread_mutex_lock(&x->lock);
	s = slot(x);
	who_into(s, who, trace_id);
	snprintf(s->name, sizeof(s->name), "slow rank %d: %s", who->rank, cause);
	s->start = since_ns;
	s->end = now_ns > since_ns ? now_ns : since_ns + 1;
	snprintf(s->cause, sizeof(s->cause), "%s", cause);
	snprintf(s->evidence, sizeof(s->evidence), "%s", evidence);
	pthread_mutex_unlock(&x->lock);
}

/* ---- encoding ------------------------------------------------------------------ */

struct enc {
	KeyValue *kv;
	AnyValue *av;
	KeyValue **kvp;
	int nkv, cap;
};

static KeyValue *kv_str(struct enc *e, const char *k, const char *v)
{
	KeyValue *kv = &e->kv[e->nkv];
	AnyValue *av = &e->av[e->nkv];

	trainscope__otlp__key_value__init(kv);
	trainscope__otlp__any_value__init(av);
	av->value_case = TRAINSCOPE__OTLP__ANY_VALUE__VALUE_STRING_VALUE;
	av->string_value = (char *)v;
	kv->key = (char *)k;
	kv->value = av;
	e->kvp[e->nkv] = kv;
	return &e->kv[e->nkv++];
}

static KeyValue *kv_int(struct enc *e, const char *k, int64_t v)
{
	KeyValue *kv = kv_str(e, k, "");

	kv->value->value_case = TRAINSCOPE__OTLP__ANY_VALUE__VALUE_INT_VALUE;
	kv->value->int_value = v;
	return kv;
}

static bool same_resource(const struct qspan *a, const struct qspan *b)
{
	return a->rank == b->rank && !strcmp(a->ns, b->ns) && !strcmp(a->job, b->job) &&
	       !strcmp(a->pod, b->pod);
}

/* Packs n spans (grouped by rank into ResourceSpans) as ExportTraceServiceRequest. */
static uint8_t *encode(const struct qspan *s, int n, size_t *len)
{
	Trainscope__Otlp__ExportTraceServiceRequest req = TRAINSCOPE__OTLP__EXPORT_TRACE_SERVICE_REQUEST__INIT;
	Trainscope__Otlp__ResourceSpans *rs = calloc((size_t)n, sizeof(*rs)), **rsp = calloc((size_t)n, sizeof(*rsp));
	Trainscope__Otlp__Resource *res = calloc((size_t)n, sizeof(*res));
	Trainscope__Otlp__ScopeSpans *ss = calloc((size_t)n, sizeof(*ss)), **ssp = calloc((size_t)n, sizeof(*ssp));
	Trainscope__Otlp__InstrumentationScope scope = TRAINSCOPE__OTLP__INSTRUMENTATION_SCOPE__INIT;
	Span *sp = calloc((size_t)n, sizeof(*sp)), **spp = calloc((size_t)n, sizeof(*spp));
	Trainscope__Otlp__Span__Event *ev = calloc((size_t)n, sizeof(*ev)), **evp = calloc((size_t)n, sizeof(*evp));
	struct enc e = { .cap = 10 * n };
	uint8_t *buf = NULL;
	int nres = 0;

	e.kv = calloc((size_t)e.cap, sizeof(*e.kv));
	e.av = calloc((size_t)e.cap, sizeof(*e.av));
	e.kvp = calloc((size_t)e.cap, sizeof(*e.kvp));
	if (!rs || !rsp || !res || !ss || !ssp || !sp || !spp || !ev || !evp || !e.kv || !e.av || !e.kvp)
		goto out;
	scope.name = (char *)"trainscope-analyzer";
	scope.version = (char *)"0.1.0";
	for (int i = 0; i < n;) {
		int j = i;
		while (j < n && same_resource(&s[i], &s[j]))
			j++;
		/* resource: OpenTelemetry's k8s.* conventions, plus the rank */
		trainscope__otlp__resource_spans__init(&rs[nres]);
		trainscope__otlp__resource__init(&res[nres]);
		trainscope__otlp__scope_spans__init(&ss[nres]);
		res[nres].attributes = &e.kvp[e.nkv];
		kv_str(&e, "service.name", "trainscope");
		kv_str(&e, "k8s.namespace.name", s[i].ns);
		kv_str(&e, "k8s.job.name", s[i].job);
		if (*s[i].pod)
			kv_str(&e, "k8s.pod.name", s[i].pod);
		kv_str(&e, "k8s.node.name", s[i].node);
		kv_int(&e, "trainscope.rank", s[i].rank);
		res[nres].n_attributes = (size_t)(&e.kvp[e.nkv] - res[nres].attributes);
		rs[nres].resource = &res[nres];
		ss[nres].scope = &scope;
		ss[nres].spans = &spp[i];
		ss[nres].n_spans = (size_t)(j - i);
		ssp[nres] = &ss[nres];
		rs[nres].scope_spans = &ssp[nres];
		rs[nres].n_scope_spans = 1;
		rsp[nres] = &rs[nres];
		for (int k = i; k < j; k++) {
			trainscope__otlp__span__init(&sp[k]);
			sp[k].trace_id = (ProtobufCBinaryData){ 16, (uint8_t *)s[k].trace };
			sp[k].span_id = (ProtobufCBinaryData){ 8, (uint8_t *)s[k].id };
			if (s[k].has_parent)
				sp[k].parent_span_id = (ProtobufCBinaryData){ 8, (uint8_t *)s[k].parent };
			sp[k].name = (char *)s[k].name;
			sp[k].kind = TRAINSCOPE__OTLP__SPAN__SPAN_KIND__SPAN_KIND_INTERNAL;
			sp[k].start_time_unix_nano = s[k].start;
			sp[k].end_time_unix_nano = s[k].end;
			sp[k].attributes = &e.kvp[e.nkv];
			kv_int(&e, "trainscope.rank", s[k].rank);
			kv_int(&e, "trainscope.step", (int64_t)s[k].step);
			if (*s[k].node)
				kv_str(&e, "k8s.node.name", s[k].node);
			sp[k].n_attributes = (size_t)(&e.kvp[e.nkv] - sp[k].attributes);
			if (*s[k].cause) {
				trainscope__otlp__span__event__init(&ev[k]);
				ev[k].time_unix_nano = s[k].end;
				ev[k].name = (char *)"SlowRank";
				ev[k].attributes = &e.kvp[e.nkv];
				kv_str(&e, "trainscope.cause", s[k].cause);
				kv_str(&e, "trainscope.evidence", s[k].evidence);
				ev[k].n_attributes = 2;
				evp[k] = &ev[k];
				sp[k].events = &evp[k];
				sp[k].n_events = 1;
			}
			spp[k] = &sp[k];
		}
		nres++;
		i = j;
	}
	req.resource_spans = rsp;
	req.n_resource_spans = (size_t)nres;
	*len = trainscope__otlp__export_trace_service_request__get_packed_size(&req);
	if ((buf = malloc(*len ? *len : 1)))
		trainscope__otlp__export_trace_service_request__pack(&req, buf);
out:
	free(rs), free(rsp), free(res), free(ss), free(ssp), free(sp), free(spp), free(ev), free(evp);
	free(e.kv), free(e.av), free(e.kvp);
	return buf;
}

static uint8_t *gzip(const uint8_t *in, size_t len, size_t *out_len)
{
	z_stream z = { 0 };
	size_t cap = compressBound((uLong)len) + 32;
	uint8_t *out = malloc(cap);

	if (!out || deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(out);
		return NULL;
	}
	z.next_in = (uint8_t *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	int rc = deflate(&z, Z_FINISH);
	*out_len = z.total_out;
	deflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(out);
		return NULL;
	}
	return out;
}

/* ---- sending --------------------------------------------------------------------- */

static size_t discard(char *p, size_t sz, size_t n, void *ud)
{
	(void)p, (void)ud;
	return sz * n;
}

/* Returns 0 when the collector took it, 1 to retry, -1 when it refused it for good. */
static int post(struct ts_otlp *x, CURL *c, const uint8_t *body, size_t len)
{
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/x-protobuf");
	long code = 0;
	CURLcode cc;

	h = curl_slist_append(h, "Content-Encoding: gzip");
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, x->url);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(h);
	if (cc == CURLE_OK && code >= 200 && code < 300)
		return 0;
	if (cc != CURLE_OK || code == 429 || code >= 500 || code == 408)
		return 1;
	ts_warn("otlp: %s refused a batch: HTTP %ld", x->url, code);
	return -1;
}

static void send_batch(struct ts_otlp *x, CURL *c, struct qspan *batch, int n)
{
	size_t raw_len = 0, gz_len = 0;
	uint8_t *raw = encode(batch, n, &raw_len), *gz = raw ? gzip(raw, raw_len, &gz_len) : NULL;
	int rc = -1, backoff_ms = 200;

	for (int attempt = 0; gz && attempt <= x->o.max_retries; attempt++) {
		if ((rc = post(x, c, gz, gz_len)) <= 0)
			break;
		pthread_mutex_lock(&x->lock);
		x->st.retries++;
		bool stopping = x->stop;
		pthread_mutex_unlock(&x->lock);
		if (stopping && attempt >= 1)
			break;
		struct timespec ts = { backoff_ms / 1000, (backoff_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL); /* back-off before the retry, on the sender thread */
		backoff_ms *= 2;
	}
	pthread_mutex_lock(&x->lock);
	if (rc == 0) {
		x->st.sent += (uint64_t)n;
		x->st.batches++;
	} else {
		x->st.failed_batches++;
		x->st.dropped += (uint64_t)n;
	}
	pthread_mutex_unlock(&x->lock);
	if (rc != 0)
		ts_warn("otlp: %d spans not delivered to %s", n, x->url);
	free(raw);
	free(gz);
}

static void *sender(void *arg)
{
	struct ts_otlp *x = arg;
	struct qspan *batch = calloc((size_t)x->o.batch, sizeof(*batch));
	CURL *c = curl_easy_init();

	pthread_mutex_lock(&x->lock);
	while (batch && c) {
		if (!x->count && x->stop)
			break;
		if (x->count < x->o.batch && !x->stop) {
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_nsec += (long)x->o.flush_ms * 1000000L;
			until.tv_sec += until.tv_nsec / 1000000000L;
			until.tv_nsec %= 1000000000L;
			pthread_cond_timedwait(&x->wake, &x->lock, &until);
		}
		int n = x->count < x->o.batch ? x->count : x->o.batch;
		for (int i = 0; i < n; i++)
			batch[i] = x->q[(x->head + i) % x->o.max_queue];
		x->head = (x->head + n) % x->o.max_queue;
		x->count -= n;
		pthread_mutex_unlock(&x->lock);
		if (n)
			send_batch(x, c, batch, n);
		pthread_mutex_lock(&x->lock);
	}
	pthread_mutex_unlock(&x->lock);
	if (c)
		curl_easy_cleanup(c);
	free(batch);
	return NULL;
}

int ts_otlp_new(struct ts_otlp **out, const struct ts_otlp_opts *o)
{
	struct ts_otlp *x = calloc(1, sizeof(*x));

	if (!x)
		return -ENOMEM;
	x->o = *o;
	if (x->o.max_queue <= 0)
		x->o.max_queue = 65536;
	if (x->o.batch <= 0 || x->o.batch > x->o.max_queue)
		x->o.batch = x->o.max_queue < 2048 ? x->o.max_queue : 2048;
	if (x->o.flush_ms <= 0)
		x->o.flush_ms = 1000;
	if (x->o.max_retries < 0)
		x->o.max_retries = 0;
	else if (!x->o.max_retries)
		x->o.max_retries = 5;
	snprintf(x->url, sizeof(x->url), "%s%s", o->endpoint,
		 strstr(o->endpoint, "/v1/traces") ? "" : "/v1/traces");
	pthread_mutex_init(&x->lock, NULL);
	pthread_cond_init(&x->wake, NULL);
	x->q = calloc((size_t)x->o.max_queue, sizeof(*x->q));
	if (!x->q || pthread_create(&x->thread, NULL, sender, x)) {
		free(x->q);
		free(x);
		return -ENOMEM;
	}
	*out = x;
	return 0;
}

void ts_otlp_free(struct ts_otlp *x)
{
	if (!x)
		return;
	pthread_mutex_lock(&x->lock);
	x->stop = true;
	pthread_cond_signal(&x->wake);
	pthread_mutex_unlock(&x->lock);
	pthread_join(x->thread, NULL);
	pthread_mutex_destroy(&x->lock);
	pthread_cond_destroy(&x->wake);
	free(x->q);
	free(x);
}

void ts_otlp_get_stats(struct ts_otlp *x, struct ts_otlp_stats *out)
{
	pthread_mutex_lock(&x->lock);
	*out = x->st;
	pthread_mutex_unlock(&x->lock);
}
