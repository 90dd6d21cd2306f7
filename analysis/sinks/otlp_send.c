// SPDX-License-Identifier: Apache-2.0
/* Encoding queued spans as ExportTraceServiceRequest and sending them: the sender
 * thread, gzip, headers, TLS, retries. */
#include "otlp_impl.h"
#include "log.h"
#include "proto/otlp_trace.pb-c.h"
#include "version.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

typedef Trainscope__Otlp__KeyValue KeyValue;
typedef Trainscope__Otlp__AnyValue AnyValue;
typedef Trainscope__Otlp__Span Span;

#define RES_ATTRS 11 /* resource attributes trainscope sets at most */
#define SPAN_ATTRS 12 /* a span's and its event's attributes at most */

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

static KeyValue *kv_double(struct enc *e, const char *k, double v)
{
	KeyValue *kv = kv_str(e, k, "");

	kv->value->value_case = TRAINSCOPE__OTLP__ANY_VALUE__VALUE_DOUBLE_VALUE;
	kv->value->double_value = v;
	return kv;
}

static bool same_resource(const struct qspan *a, const struct qspan *b)
{
	return a->rank == b->rank && !strcmp(a->ns, b->ns) && !strcmp(a->job, b->job) &&
	       !strcmp(a->pod, b->pod) && !strcmp(a->node, b->node);
}

static const char *extra(const struct ts_otlp *x, const char *key)
{
	for (int i = 0; i + 1 < x->nres_kv; i += 2)
		if (!strcmp(x->res_kv[i], key))
			return x->res_kv[i + 1];
	return NULL;
}

/* What trainscope knows better than a setting made for the whole analyzer. */
static bool reserved(const char *key)
{
	static const char *const prefix[] = { "service.", "k8s.", "trainscope.", "telemetry.sdk." };

	for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (!strncmp(key, prefix[i], strlen(prefix[i])))
			return true;
	return false;
}

/* The OpenTelemetry semantic conventions' service.* and k8s.* attributes, the job and
 * rank (no convention names them), then the user's OTEL_RESOURCE_ATTRIBUTES, which
 * cannot set what trainscope knows, but may name the service (OTEL_SERVICE_NAME wins). */
static void resource(const struct ts_otlp *x, struct enc *e, const struct qspan *s, char *inst,
		     size_t instlen)
{
	const char *service = x->o.service && *x->o.service ? x->o.service : extra(x, "service.name");

	kv_str(e, "service.name", service ? service : s->job);
	kv_str(e, "service.namespace", s->ns);
	if (s->rank >= 0)
		snprintf(inst, instlen, "%s/%s/%d", s->ns, s->job, s->rank);
	else
		snprintf(inst, instlen, "%s/%s", s->ns, s->job);
	kv_str(e, "service.instance.id", inst);
	kv_str(e, "k8s.namespace.name", s->ns);
	if (*s->pod)
		kv_str(e, "k8s.pod.name", s->pod);
	if (*s->node)
		kv_str(e, "k8s.node.name", s->node);
	kv_str(e, "trainscope.job.name", s->job);
	if (s->rank >= 0)
		kv_int(e, "trainscope.rank", s->rank);
	kv_str(e, "telemetry.sdk.name", "trainscope");
	kv_str(e, "telemetry.sdk.version", TS_VERSION);
	for (int i = 0; i + 1 < x->nres_kv; i += 2)
		if (!reserved(x->res_kv[i]))
			kv_str(e, x->res_kv[i], x->res_kv[i + 1]);
}

/* A window's lost time: shares of its step time, and the rank that cost the most. */
static void lost_attrs(struct enc *e, const struct ts_otlp_lost *l)
{
	kv_double(e, "trainscope.lost_time.share", l->share);
	kv_double(e, "trainscope.lost_time.ranks", l->ranks);
	kv_double(e, "trainscope.lost_time.stages", l->stages);
	kv_double(e, "trainscope.lost_time.data", l->data);
	if (l->top_rank >= 0)
		kv_int(e, "trainscope.lost_time.top_rank", l->top_rank);
}

static void span_attrs(struct enc *e, const struct qspan *s)
{
	switch (s->kind) {
	case Q_WINDOW:
		kv_int(e, "trainscope.window", s->attr[0]);
		kv_int(e, "trainscope.first_step", s->attr[1]);
		kv_int(e, "trainscope.last_step", s->attr[2]);
		kv_int(e, "trainscope.ranks", s->attr[3]);
		kv_int(e, "trainscope.steps_sampled_out", s->attr[4]);
		kv_int(e, "trainscope.spans_over_size", s->attr[5]);
		if (s->has_lost)
			lost_attrs(e, &s->lost);
		break;
	case Q_STEP:
	case Q_PHASE:
		kv_int(e, "trainscope.step", s->attr[0]);
		break;
	case Q_SLOW:
		kv_str(e, "trainscope.cause", s->cause);
		break;
	}
}

struct arrays {
	Trainscope__Otlp__ResourceSpans *rs, **rsp;
	Trainscope__Otlp__Resource *res;
	Trainscope__Otlp__ScopeSpans *ss, **ssp;
	Span *sp, **spp;
	Trainscope__Otlp__Span__Event *ev, **evp;
	Trainscope__Otlp__Span__Link *ln, **lnp;
	Trainscope__Otlp__Status *st;
	char (*inst)[256];
	struct enc e;
};

static void arrays_free(struct arrays *a)
{
	free(a->rs), free(a->rsp), free(a->res), free(a->ss), free(a->ssp), free(a->sp);
	free(a->spp), free(a->ev), free(a->evp), free(a->ln), free(a->lnp), free(a->st);
	free(a->inst), free(a->e.kv), free(a->e.av), free(a->e.kvp);
}

static bool arrays_alloc(struct arrays *a, size_t n, int nres_kv)
{
	a->e.cap = (int)n * (RES_ATTRS + SPAN_ATTRS + nres_kv / 2);
	a->rs = calloc(n, sizeof(*a->rs)), a->rsp = calloc(n, sizeof(*a->rsp));
	a->res = calloc(n, sizeof(*a->res));
	a->ss = calloc(n, sizeof(*a->ss)), a->ssp = calloc(n, sizeof(*a->ssp));
	a->sp = calloc(n, sizeof(*a->sp)), a->spp = calloc(n, sizeof(*a->spp));
	a->ev = calloc(n, sizeof(*a->ev)), a->evp = calloc(n, sizeof(*a->evp));
	a->ln = calloc(n, sizeof(*a->ln)), a->lnp = calloc(n, sizeof(*a->lnp));
	a->st = calloc(n, sizeof(*a->st));
	a->inst = calloc(n, sizeof(*a->inst));
	a->e.kv = calloc((size_t)a->e.cap, sizeof(*a->e.kv));
	a->e.av = calloc((size_t)a->e.cap, sizeof(*a->e.av));
	a->e.kvp = calloc((size_t)a->e.cap, sizeof(*a->e.kvp));
	return a->rs && a->rsp && a->res && a->ss && a->ssp && a->sp && a->spp && a->ev &&
	       a->evp && a->ln && a->lnp && a->st && a->inst && a->e.kv && a->e.av && a->e.kvp;
}

static void one_span(struct arrays *a, const struct qspan *s, int k)
{
	struct enc *e = &a->e;
	Span *sp = &a->sp[k];

	trainscope__otlp__span__init(sp);
	sp->trace_id = (ProtobufCBinaryData){ 16, (uint8_t *)s->trace };
	sp->span_id = (ProtobufCBinaryData){ 8, (uint8_t *)s->id };
	if (s->has_parent)
		sp->parent_span_id = (ProtobufCBinaryData){ 8, (uint8_t *)s->parent };
	sp->name = (char *)s->name;
	sp->kind = TRAINSCOPE__OTLP__SPAN__SPAN_KIND__SPAN_KIND_INTERNAL;
	sp->start_time_unix_nano = s->start;
	sp->end_time_unix_nano = s->end;
	sp->attributes = &e->kvp[e->nkv];
	span_attrs(e, s);
	sp->n_attributes = (size_t)(&e->kvp[e->nkv] - sp->attributes);
	if (s->kind == Q_SLOW) {
		Trainscope__Otlp__Span__Event *ev = &a->ev[k];
		trainscope__otlp__span__event__init(ev);
		ev->time_unix_nano = s->end;
		ev->name = (char *)"slow_rank.named";
		ev->attributes = &e->kvp[e->nkv];
		kv_str(e, "trainscope.cause", s->cause);
		kv_str(e, "trainscope.evidence", s->evidence);
		ev->n_attributes = 2;
		a->evp[k] = ev;
		sp->events = &a->evp[k];
		sp->n_events = 1;
	}
	if (s->has_link) {
		trainscope__otlp__span__link__init(&a->ln[k]);
		a->ln[k].trace_id = (ProtobufCBinaryData){ 16, (uint8_t *)s->link_trace };
		a->ln[k].span_id = (ProtobufCBinaryData){ 8, (uint8_t *)s->link_span };
		a->lnp[k] = &a->ln[k];
		sp->links = &a->lnp[k];
		sp->n_links = 1;
	}
	if (s->error) {
		trainscope__otlp__status__init(&a->st[k]);
		a->st[k].code = TRAINSCOPE__OTLP__STATUS__STATUS_CODE__STATUS_CODE_ERROR;
		a->st[k].message = (char *)s->status;
		sp->status = &a->st[k];
	}
	a->spp[k] = sp;
}

/* Packs n spans (grouped by resource) as one ExportTraceServiceRequest. */
static uint8_t *encode(const struct ts_otlp *x, const struct qspan *s, int n, size_t *len)
{
	Trainscope__Otlp__ExportTraceServiceRequest req = TRAINSCOPE__OTLP__EXPORT_TRACE_SERVICE_REQUEST__INIT;
	Trainscope__Otlp__InstrumentationScope scope = TRAINSCOPE__OTLP__INSTRUMENTATION_SCOPE__INIT;
	struct arrays a = { 0 };
	uint8_t *buf = NULL;
	int nres = 0;

	if (!arrays_alloc(&a, (size_t)n, x->nres_kv))
		goto out;
	scope.name = (char *)"trainscope.analyzer";
	scope.version = (char *)TS_VERSION;
	for (int i = 0; i < n;) {
		int j = i;
		while (j < n && same_resource(&s[i], &s[j]))
			j++;
		trainscope__otlp__resource_spans__init(&a.rs[nres]);
		trainscope__otlp__resource__init(&a.res[nres]);
		trainscope__otlp__scope_spans__init(&a.ss[nres]);
		a.res[nres].attributes = &a.e.kvp[a.e.nkv];
		resource(x, &a.e, &s[i], a.inst[nres], sizeof(a.inst[nres]));
		a.res[nres].n_attributes = (size_t)(&a.e.kvp[a.e.nkv] - a.res[nres].attributes);
		a.rs[nres].resource = &a.res[nres];
		a.ss[nres].scope = &scope;
		a.ss[nres].spans = &a.spp[i];
		a.ss[nres].n_spans = (size_t)(j - i);
		a.ssp[nres] = &a.ss[nres];
		a.rs[nres].scope_spans = &a.ssp[nres];
		a.rs[nres].n_scope_spans = 1;
		a.rsp[nres] = &a.rs[nres];
		for (int k = i; k < j; k++)
			one_span(&a, &s[k], k);
		nres++;
		i = j;
	}
	req.resource_spans = a.rsp;
	req.n_resource_spans = (size_t)nres;
	*len = trainscope__otlp__export_trace_service_request__get_packed_size(&req);
	if ((buf = malloc(*len ? *len : 1)))
		trainscope__otlp__export_trace_service_request__pack(&req, buf);
out:
	arrays_free(&a);
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
	long code = 0;
	CURLcode cc;

	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, x->url);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, x->headers);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)x->o.timeout_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	if (x->o.ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, x->o.ca_file);
	if (x->o.client_cert)
		curl_easy_setopt(c, CURLOPT_SSLCERT, x->o.client_cert);
	if (x->o.client_key)
		curl_easy_setopt(c, CURLOPT_SSLKEY, x->o.client_key);
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (cc == CURLE_OK && code >= 200 && code < 300)
		return 0;
	if (cc != CURLE_OK || code == 429 || code >= 500 || code == 408)
		return 1;
	ts_warn("otlp: %s refused a batch: HTTP %ld%s", x->url, code,
		code == 401 || code == 403 ? " (check OTEL_EXPORTER_OTLP_HEADERS)" : "");
	return -1;
}

static void send_batch(struct ts_otlp *x, CURL *c, struct qspan *batch, int n)
{
	size_t raw_len = 0, gz_len = 0;
	uint8_t *raw = encode(x, batch, n, &raw_len), *gz = NULL;
	const uint8_t *body = raw;
	int rc = -1, backoff_ms = 200;

	if (raw && !x->o.no_gzip) {
		gz = gzip(raw, raw_len, &gz_len);
		body = gz;
		raw_len = gz_len;
	}
	for (int attempt = 0; body && attempt <= x->o.max_retries; attempt++) {
		if ((rc = post(x, c, body, raw_len)) <= 0)
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

/* ---- settings ------------------------------------------------------------------- */

static int hex(int c)
{
	return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

void ts_otlp_pct_decode(char *s)
{
	char *o = s;

	for (; *s; s++)
		if (*s == '%' && isxdigit((unsigned char)s[1]) && isxdigit((unsigned char)s[2])) {
			*o++ = (char)(hex((unsigned char)s[1]) * 16 + hex((unsigned char)s[2]));
			s += 2;
		} else {
			*o++ = *s;
		}
	*o = 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

/* "k=v,k2=v2" into key/value pointers into text (changed in place). */
static int pairs(char *text, const char ***out, int *n, const char *what, char *err,
		 size_t errlen)
{
	char *save = NULL;

	for (char *p = strtok_r(text, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(p, '=');
		const char **kv;
		if (!*trim(p))
			continue;
		if (!eq || eq == p) {
			snprintf(err, errlen, "%s: \"%s\" is not key=value", what, trim(p));
			return -EINVAL;
		}
		*eq = 0;
		if (!(kv = realloc(*out, (size_t)(*n + 2) * sizeof(*kv))))
			return -ENOMEM;
		*out = kv;
		char *v = trim(eq + 1);
		ts_otlp_pct_decode(v);
		kv[(*n)++] = trim(p);
		kv[(*n)++] = v;
	}
	return 0;
}

static int make_headers(struct ts_otlp *x, char *err, size_t errlen)
{
	const char **kv = NULL;
	char *text = strdup(x->o.headers ? x->o.headers : ""), line[1024];
	int n = 0, rc = text ? 0 : -ENOMEM;
	struct curl_slist *h = NULL;

	if (!rc)
		rc = pairs(text, &kv, &n, "OTEL_EXPORTER_OTLP_HEADERS", err, errlen);
	h = curl_slist_append(h, "Content-Type: application/x-protobuf");
	if (!x->o.no_gzip)
		h = curl_slist_append(h, "Content-Encoding: gzip");
	for (int i = 0; !rc && i + 1 < n; i += 2) {
		if (strpbrk(kv[i], ": \t\r\n") || strpbrk(kv[i + 1], "\r\n")) {
			snprintf(err, errlen, "OTEL_EXPORTER_OTLP_HEADERS: header \"%s\" has a "
				 "character HTTP does not allow there", kv[i]);
			rc = -EINVAL;
			break;
		}
		snprintf(line, sizeof(line), "%s: %s", kv[i], kv[i + 1]);
		h = curl_slist_append(h, line);
	}
	x->headers = h;
	free(kv);
	free(text);
	return rc;
}

static int readable(const char *path, const char *what, char *err, size_t errlen)
{
	FILE *f;

	if (!path)
		return 0;
	if (!(f = fopen(path, "r"))) {
		snprintf(err, errlen, "%s: cannot read %s: %s", what, path, strerror(errno));
		return -EINVAL;
	}
	fclose(f);
	return 0;
}

int ts_otlp_start(struct ts_otlp *x, char *err, size_t errlen)
{
	int rc;

	snprintf(x->url, sizeof(x->url), "%s", x->o.endpoint);
	if ((rc = make_headers(x, err, errlen)) ||
	    (rc = readable(x->o.ca_file, "OTEL_EXPORTER_OTLP_CERTIFICATE", err, errlen)) ||
	    (rc = readable(x->o.client_cert, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", err, errlen)) ||
	    (rc = readable(x->o.client_key, "OTEL_EXPORTER_OTLP_CLIENT_KEY", err, errlen)))
		goto fail;
	if (x->o.resource && !(x->resource_text = strdup(x->o.resource))) {
		rc = -ENOMEM;
		goto fail;
	}
	x->resource_len = x->o.resource ? strlen(x->o.resource) : 0; /* pairs() cuts the text */
	if (x->resource_text && (rc = pairs(x->resource_text, &x->res_kv, &x->nres_kv,
					    "OTEL_RESOURCE_ATTRIBUTES", err, errlen)))
		goto fail;
	pthread_mutex_init(&x->lock, NULL);
	pthread_cond_init(&x->wake, NULL);
	x->q = calloc((size_t)x->o.max_queue, sizeof(*x->q));
	if (!x->q || pthread_create(&x->thread, NULL, sender, x)) {
		pthread_mutex_destroy(&x->lock);
		pthread_cond_destroy(&x->wake);
		rc = -ENOMEM;
		goto fail;
	}
	return 0;
fail:
	free(x->q);
	free(x->res_kv);
	free(x->resource_text);
	curl_slist_free_all(x->headers);
	return rc;
}

void ts_otlp_stop(struct ts_otlp *x)
{
	pthread_mutex_lock(&x->lock);
	x->stop = true;
	pthread_cond_signal(&x->wake);
	pthread_mutex_unlock(&x->lock);
	pthread_join(x->thread, NULL);
	pthread_mutex_destroy(&x->lock);
	pthread_cond_destroy(&x->wake);
	free(x->q);
	free(x->res_kv);
	free(x->resource_text);
	curl_slist_free_all(x->headers);
}
