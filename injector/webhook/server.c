// SPDX-License-Identifier: Apache-2.0
#include "server.h"
#include "mutate.h"
#include "buf.h"
#include "httpd.h"
#include "log.h"
#include "tsclock.h"

#include <jansson.h>

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long a reload waits for the previous daemon's connections to end before it stops
 * that daemon, which closes what is left (idle keep-alive connections, which a client
 * retries on). */
#define DRAIN_MS 3000

struct webhook {
	struct webhook_opts o;
	struct MHD_Daemon *mhd;
	char *cert, *key; /* the PEM served: the daemon keeps pointers into it */
	uint16_t port;
	pthread_mutex_t lock; /* what follows: MHD serves from several threads */
	uint64_t reviews, patched, refused, too_large, not_found;
	uint64_t skipped; /* pods that asked for trainscope and were left unchanged */
	uint64_t cert_reloads, cert_failures;
	int64_t cert_not_after;
	struct MHD_Daemon *retiring; /* the previous daemon during a reload */
};

/* A request's body as it arrives. */
struct upload {
	char *data;
	size_t len;
	bool too_large;
};

/* Whether c belongs to the daemon a reload is retiring. */
static bool retiring(struct webhook *w, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_DAEMON);
	bool yes;

	pthread_mutex_lock(&w->lock);
	yes = i && w->retiring && i->daemon == w->retiring;
	pthread_mutex_unlock(&w->lock);
	return yes;
}

static enum MHD_Result send_text(struct webhook *w, struct MHD_Connection *c, unsigned status,
				 const char *ctype, const char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body,
								 MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", ctype);
	if (retiring(w, c)) /* the client's next request goes to the new daemon */
		MHD_add_response_header(r, "Connection", "close");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static void count(struct webhook *w, uint64_t *counter)
{
	pthread_mutex_lock(&w->lock);
	(*counter)++;
	pthread_mutex_unlock(&w->lock);
}

enum {
	WM_REVIEWS,
	WM_PATCHED,
	WM_EVENTS_POSTED,
	WM_EVENTS_FAILED,
	WM_EVENTS_DROPPED,
	WM_EVENTS_ALREADY,
	WM_MISSED_PODS,
	WM_MISSED_SCANS,
	WM_MISSED_SCAN_FAILURES,
	WM_MISSED_SCAN_SECONDS,
	WM_SKIPPED,
	WM_REFUSED,
	WM_TOO_LARGE,
	WM_CERT_RELOADS,
	WM_CERT_RELOAD_FAILURES,
	WM_CERT_EXPIRY_SECONDS,
};

static const struct ts_metric_family webhook_metrics[] = {
	[WM_REVIEWS] = { "trainscope_webhook_reviews_total", TS_COUNTER, NULL,
		"AdmissionReviews answered." },
	[WM_PATCHED] = { "trainscope_webhook_patched_total", TS_COUNTER, NULL,
		"Pods given trainscope." },
	[WM_EVENTS_POSTED] = { "trainscope_webhook_events_posted_total", TS_COUNTER, NULL,
		"Warning Events posted on pods left unchanged." },
	[WM_EVENTS_FAILED] = { "trainscope_webhook_events_failed_total", TS_COUNTER, NULL,
		"Warning Events the API server refused or did not answer." },
	[WM_EVENTS_DROPPED] = { "trainscope_webhook_events_dropped_total", TS_COUNTER, NULL,
		"Warning Events dropped: their queue was full." },
	[WM_EVENTS_ALREADY] = { "trainscope_webhook_events_already_total", TS_COUNTER, NULL,
		"Events on pods admitted without the webhook that were there already (a "
		"replica, or this webhook before a restart, said it): the API server "
		"answered 409." },
	[WM_MISSED_PODS] = { "trainscope_webhook_missed_pods", TS_GAUGE, NULL,
		"Pods that asked for trainscope and run without it (the API server did not "
		"reach the webhook when it admitted them), as the last look found." },
	[WM_MISSED_SCANS] = { "trainscope_webhook_missed_scans_total", TS_COUNTER, NULL,
		"Looks for such pods." },
	[WM_MISSED_SCAN_FAILURES] = { "trainscope_webhook_missed_scan_failures_total",
		TS_COUNTER, NULL, "Looks that failed (the log says why)." },
	[WM_MISSED_SCAN_SECONDS] = { "trainscope_webhook_missed_scan_seconds", TS_GAUGE, NULL,
		"How long the last look took." },
	[WM_SKIPPED] = { "trainscope_webhook_skipped_total", TS_COUNTER, NULL,
		"Pods that asked for trainscope and were left unchanged (the review's "
		"warning says why)." },
	[WM_REFUSED] = { "trainscope_webhook_refused_total", TS_COUNTER, NULL,
		"Requests refused as malformed." },
	[WM_TOO_LARGE] = { "trainscope_webhook_too_large_total", TS_COUNTER, NULL,
		"Requests refused for their size." },
	[WM_CERT_RELOADS] = { "trainscope_webhook_cert_reloads_total", TS_COUNTER, NULL,
		"New serving certificates taken from the files." },
	[WM_CERT_RELOAD_FAILURES] = { "trainscope_webhook_cert_reload_failures_total",
		TS_COUNTER, NULL,
		"New certificate files that did not load (the previous pair still "
		"served)." },
	[WM_CERT_EXPIRY_SECONDS] = { "trainscope_webhook_cert_expiry_seconds", TS_GAUGE, NULL,
		"notAfter of the certificate served, Unix seconds." },
};

const struct ts_metric_table webhook_metric_table = TS_METRIC_TABLE(webhook_metrics);

#define PUT(b, id, v) ts_metric_u64((b), &webhook_metrics[(id)], (uint64_t)(v))

static void metrics(struct webhook *w, struct ts_buf *b)
{
	struct ts_events_stats es;

	ts_events_stats(w->o.events, &es);
	pthread_mutex_lock(&w->lock);
	PUT(b, WM_REVIEWS, w->reviews);
	PUT(b, WM_PATCHED, w->patched);
	PUT(b, WM_EVENTS_POSTED, es.posted);
	PUT(b, WM_EVENTS_FAILED, es.failed);
	PUT(b, WM_EVENTS_DROPPED, es.dropped);
	PUT(b, WM_EVENTS_ALREADY, es.already);
	PUT(b, WM_MISSED_PODS, es.missed);
	PUT(b, WM_MISSED_SCANS, es.scans);
	PUT(b, WM_MISSED_SCAN_FAILURES, es.scan_failed);
	ts_metric_double(b, &webhook_metrics[WM_MISSED_SCAN_SECONDS], (double)es.scan_ns / 1e9);
	PUT(b, WM_SKIPPED, w->skipped);
	PUT(b, WM_REFUSED, w->refused);
	PUT(b, WM_TOO_LARGE, w->too_large);
	PUT(b, WM_CERT_RELOADS, w->cert_reloads);
	PUT(b, WM_CERT_RELOAD_FAILURES, w->cert_failures);
	if (w->cert_not_after > 0)
		PUT(b, WM_CERT_EXPIRY_SECONDS, (uint64_t)w->cert_not_after);
	pthread_mutex_unlock(&w->lock);
}

static enum MHD_Result serve_get(struct webhook *w, struct MHD_Connection *c, const char *url)
{
	struct ts_buf b = { 0 };
	enum MHD_Result ret;

	if (!strcmp(url, "/healthz"))
		return send_text(w, c, 200, "text/plain", "ok\n", 3);
	if (strcmp(url, "/metrics")) {
		count(w, &w->not_found);
		return send_text(w, c, 404, "text/plain", "not found\n", 10);
	}
	ts_metric_build_info(&b);
	metrics(w, &b);
	ret = send_text(w, c, 200, "text/plain; version=0.0.4", b.data ? b.data : "", b.len);
	ts_buf_free(&b);
	return ret;
}

/* A pod that asked for trainscope starts without it: the user sees the review's
 * warning; the operator a metric, the first time a line, and a Warning Event on the pod
 * (by its name, or its generateName before it has one). */
static void skipped(struct webhook *w, const struct upload *up, const char *review)
{
	json_t *in = json_loadb(up->data, up->len, 0, NULL), *out = json_loads(review, 0, NULL);
	json_t *req = json_object_get(in, "request"), *warn, *md;
	char why[512] = "";
	const char *pod;
	uint64_t n;
	size_t i, at = 0;

	md = json_object_get(json_object_get(req, "object"), "metadata");
	pod = json_string_value(json_object_get(md, "name"));
	pod = pod ? pod : json_string_value(json_object_get(md, "generateName"));
	json_array_foreach(json_object_get(json_object_get(out, "response"), "warnings"), i, warn)
		if (json_string_value(warn) && at < sizeof(why))
			at += (size_t)snprintf(why + at, sizeof(why) - at, "%s%s", at ? "; " : "",
					       json_string_value(warn));
	pthread_mutex_lock(&w->lock);
	n = w->skipped++;
	pthread_mutex_unlock(&w->lock);
	if (n == 0)
		ts_warn("webhook: a pod that asked for trainscope was left unchanged: %.300s (the "
			"first; trainscope_webhook_skipped_total counts them)", why);
	ts_events_skipped(w->o.events, json_string_value(json_object_get(req, "namespace")), pod,
			  why);
	json_decref(in);
	json_decref(out);
}

static enum MHD_Result serve_review(struct webhook *w, struct MHD_Connection *c, const char *url,
				    struct upload *up)
{
	struct ts_inject_opts io = w->o.inject;
	enum MHD_Result ret;
	char *out = NULL;
	int status;

	if (up->too_large) {
		count(w, &w->too_large);
		ts_warn("webhook: refused a review larger than %u bytes", TS_WEBHOOK_MAX_BODY);
		return send_text(w, c, 413, "text/plain", "request too large\n", 18);
	}
	io.namespace_opt_in = !strcmp(url, "/mutate-namespace");
	status = ts_mutate(up->data ? up->data : "", up->len, &io, &out);
	if (!out)
		return send_text(w, c, 500, "text/plain", "out of memory\n", 14);
	count(w, status == 200 ? &w->reviews : &w->refused);
	if (status == 200 && strstr(out, "\"patch\""))
		count(w, &w->patched);
	else if (status == 200 && strstr(out, TS_WARN_UNCHANGED))
		skipped(w, up, out);
	if (status != 200)
		ts_warn("webhook: refused a request on %s: %.200s", url, out);
	ret = send_text(w, c, (unsigned)status, "application/json", out, strlen(out));
	free(out);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *size, void **con_cls)
{
	struct webhook *w = cls;
	struct upload *up = *con_cls;

	(void)version;
	if (!strcmp(method, "GET"))
		return serve_get(w, c, url);
	if (strcmp(method, "POST"))
		return send_text(w, c, 405, "text/plain", "method not allowed\n", 19);
	if (strcmp(url, "/mutate") && strcmp(url, "/mutate-namespace")) {
		count(w, &w->not_found);
		return send_text(w, c, 404, "text/plain", "not found: POST /mutate\n", 24);
	}
	if (!up) { /* first call: headers only */
		*con_cls = up = calloc(1, sizeof(*up));
		return up ? MHD_YES : MHD_NO;
	}
	if (*size) {
		if (!up->too_large && up->len + *size <= TS_WEBHOOK_MAX_BODY) {
			char *p = realloc(up->data, up->len + *size + 1);
			if (!p)
				return MHD_NO;
			memcpy(p + up->len, data, *size);
			up->data = p;
			up->len += *size;
			up->data[up->len] = 0;
		} else {
			up->too_large = true;
		}
		*size = 0;
		return MHD_YES;
	}
	return serve_review(w, c, url, up);
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
		    enum MHD_RequestTerminationCode toe)
{
	struct upload *up = *con_cls;

	(void)cls, (void)c, (void)toe;
	if (up) {
		free(up->data);
		free(up);
		*con_cls = NULL;
	}
}

/* A connection idle this long is closed: the API server waits 10 s for a review by
 * default, and keeps its connections busy. */
#define CONN_TIMEOUT_S 10u
#define POOL_THREADS 2u

/* As many connections as the descriptors allow, the soft limit raised to the hard one:
 * held connections are cheap with epoll, and refusing new ones starves the API server. */
static unsigned conn_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1000;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur > 65536 ? 65000u : rl.rlim_cur > 128 ? (unsigned)rl.rlim_cur - 64 : 64u;
}

/* A daemon on sa, or on the listening socket fd when it is valid (a reload); TLS with
 * cert and key unless they are NULL. */
static struct MHD_Daemon *start_daemon(struct webhook *w, struct sockaddr_in *sa, MHD_socket fd,
				       const char *cert, const char *key)
{
	/* a few epoll threads, not a thread a connection: clients that connect and say
	 * nothing (1,000 of them from any pod) hold no thread and time out, and the API
	 * server's reviews are still answered; ITC: MHD_quiesce_daemon needs it. No
	 * MHD_USE_ERROR_LOG: any client can make MHD write a line (a broken TLS handshake,
	 * 1,000 lines for 1,000), and 0.9.75 writes those past MHD_OPTION_EXTERNAL_LOGGER;
	 * a daemon that does not start is said by webhook_start. */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC;
	struct MHD_OptionItem where[] = {
		{ MHD_OPTION_SOCK_ADDR, 0, sa },
		{ MHD_OPTION_END, 0, NULL },
	}, tls[] = {
		{ MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cert },
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)key },
		{ MHD_OPTION_END, 0, NULL },
	};

	if (fd != MHD_INVALID_SOCKET)
		where[0] = (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET, fd, NULL };
	if (cert && key)
		flags |= MHD_USE_TLS;
	else
		tls[0].option = MHD_OPTION_END;
	return MHD_start_daemon(flags, w->o.port, NULL, NULL, on_request, w, MHD_OPTION_ARRAY,
				where, MHD_OPTION_ARRAY, tls, MHD_OPTION_NOTIFY_COMPLETED, on_done,
				w, MHD_OPTION_CONNECTION_TIMEOUT, CONN_TIMEOUT_S,
				MHD_OPTION_THREAD_POOL_SIZE, POOL_THREADS,
				MHD_OPTION_CONNECTION_LIMIT, conn_limit(), MHD_OPTION_END);
}

static void webhook_free(struct webhook *w)
{
	pthread_mutex_destroy(&w->lock);
	free(w->cert);
	free(w->key);
	free(w);
}

int webhook_start(struct webhook **out, const struct webhook_opts *o)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(o->port) };
	const union MHD_DaemonInfo *info;
	struct webhook *w;

	if (inet_pton(AF_INET, o->addr ? o->addr : "0.0.0.0", &sa.sin_addr) != 1)
		return -EINVAL;
	if (!(w = calloc(1, sizeof(*w))))
		return -ENOMEM;
	w->o = *o;
	w->cert_not_after = o->cert_not_after;
	pthread_mutex_init(&w->lock, NULL);
	if (o->cert_pem && o->key_pem &&
	    (!(w->cert = strdup(o->cert_pem)) || !(w->key = strdup(o->key_pem)))) {
		webhook_free(w);
		return -ENOMEM;
	}
	w->o.cert_pem = w->o.key_pem = NULL; /* the caller's: ours are w->cert, w->key */
	if (!(w->mhd = start_daemon(w, &sa, MHD_INVALID_SOCKET, w->cert, w->key))) {
		ts_error("webhook: cannot listen on port %u%s", o->port,
			 o->cert_pem ? " (check the certificate and key)" : "");
		webhook_free(w);
		return -EADDRINUSE;
	}
	info = MHD_get_daemon_info(w->mhd, MHD_DAEMON_INFO_BIND_PORT);
	w->port = info ? info->port : o->port;
	*out = w;
	return 0;
}

uint16_t webhook_port(const struct webhook *w)
{
	return w->port;
}

static unsigned connections(struct MHD_Daemon *d)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(d,
							    MHD_DAEMON_INFO_CURRENT_CONNECTIONS);

	return i ? i->num_connections : 0;
}

static void set_retiring(struct webhook *w, struct MHD_Daemon *d)
{
	pthread_mutex_lock(&w->lock);
	w->retiring = d;
	pthread_mutex_unlock(&w->lock);
}

/* The old daemon, no longer accepting, finishes its connections (handshakes and reviews
 * under way; each answer asks the client to close) within a bound, then stops. */
static void retire(struct webhook *w, struct MHD_Daemon *old)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	unsigned left;
	int waited;

	set_retiring(w, old);
	for (waited = 0; (left = connections(old)) && waited < DRAIN_MS; waited += 10)
		nanosleep(&tick, NULL);
	if (left)
		ts_info("webhook: closing %u idle connections of the previous certificate", left);
	MHD_stop_daemon(old);
	set_retiring(w, NULL);
}

/* After a failed hand-over: the previous pair again, on the same socket (it loaded
 * before). Returns 0, or -1 when nothing accepts on the port any more. */
static int restore(struct webhook *w, struct MHD_Daemon *old, MHD_socket fd)
{
	struct MHD_Daemon *again = start_daemon(w, NULL, fd, w->cert, w->key);

	if (!again) {
		ts_error("webhook: cannot serve on port %u any more", w->port);
		return -1;
	}
	w->mhd = again;
	retire(w, old);
	return 0;
}

int webhook_reload_tls(struct webhook *w, const char *cert_pem, const char *key_pem,
		       int64_t not_after)
{
	char *cert = strdup(cert_pem), *key = strdup(key_pem);
	struct MHD_Daemon *old = w->mhd, *next = NULL;
	MHD_socket fd = MHD_INVALID_SOCKET, copy;

	if (cert && key && w->cert && (fd = MHD_quiesce_daemon(old)) != MHD_INVALID_SOCKET) {
		set_retiring(w, old); /* its answers from now on ask clients to reconnect */
		/* a daemon that fails to start closes the socket it was given: a copy, so
		 * that the previous pair can take the port back */
		if ((copy = dup(fd)) >= 0 && (next = start_daemon(w, NULL, copy, cert, key)))
			close(fd);
	}
	if (!next) {
		free(cert);
		free(key);
		count(w, &w->cert_failures);
		ts_error("webhook: the new certificate does not start a TLS server; still "
			 "serving the previous one");
		if (fd != MHD_INVALID_SOCKET && restore(w, old, fd))
			return -2;
		return -1;
	}
	w->mhd = next;
	pthread_mutex_lock(&w->lock);
	w->cert_reloads++;
	w->cert_not_after = not_after;
	pthread_mutex_unlock(&w->lock);
	retire(w, old);
	free(w->cert); /* the old daemon kept pointers into it */
	free(w->key);
	w->cert = cert;
	w->key = key;
	return 0;
}

void webhook_count_tls_failure(struct webhook *w)
{
	count(w, &w->cert_failures);
}

void webhook_stop(struct webhook *w)
{
	if (!w)
		return;
	MHD_stop_daemon(w->mhd);
	webhook_free(w);
}
