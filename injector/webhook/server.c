#include "server.h"
#include "buf.h"
#include "httpd.h"
#include "log.h"
#include "tsclock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct webhook {
	struct webhook_opts o;
	struct MHD_Daemon *mhd;
	uint16_t port;
	pthread_mutex_t lock; /* counters: MHD may serve from several threads */
	uint64_t reviews, patched, refused, too_large, not_found;
};

/* A request's body as it arrives. */
struct upload {
	char *data;
	size_t len;
	bool too_large;
};

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, const char *ctype,
				 const char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body,
								 MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", ctype);
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

static enum MHD_Result serve_get(struct webhook *w, struct MHD_Connection *c, const char *url)
{
	struct ts_buf b = { 0 };
	enum MHD_Result ret;

	if (!strcmp(url, "/healthz"))
		return send_text(c, 200, "text/plain", "ok\n", 3);
	if (strcmp(url, "/metrics")) {
		count(w, &w->not_found);
		return send_text(c, 404, "text/plain", "not found\n", 10);
	}
	pthread_mutex_lock(&w->lock);
	ts_prom(&b, "trainscope_webhook_reviews_total", "counter", "AdmissionReviews answered.",
		w->reviews);
	ts_prom(&b, "trainscope_webhook_patched_total", "counter", "Pods given trainscope.",
		w->patched);
	ts_prom(&b, "trainscope_webhook_refused_total", "counter",
		"Requests refused as malformed.", w->refused);
	ts_prom(&b, "trainscope_webhook_too_large_total", "counter",
		"Requests refused for their size.", w->too_large);
	pthread_mutex_unlock(&w->lock);
	ret = send_text(c, 200, "text/plain; version=0.0.4", b.data ? b.data : "", b.len);
	ts_buf_free(&b);
	return ret;
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
		return send_text(c, 413, "text/plain", "request too large\n", 18);
	}
	io.namespace_opt_in = !strcmp(url, "/mutate-namespace");
	status = ts_mutate(up->data ? up->data : "", up->len, &io, &out);
	if (!out)
		return send_text(c, 500, "text/plain", "out of memory\n", 14);
	count(w, status == 200 ? &w->reviews : &w->refused);
	if (status == 200 && strstr(out, "\"patch\""))
		count(w, &w->patched);
	if (status != 200)
		ts_warn("webhook: refused a request on %s: %.200s", url, out);
	ret = send_text(c, (unsigned)status, "application/json", out, strlen(out));
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
		return send_text(c, 405, "text/plain", "method not allowed\n", 19);
	if (strcmp(url, "/mutate") && strcmp(url, "/mutate-namespace")) {
		count(w, &w->not_found);
		return send_text(c, 404, "text/plain", "not found: POST /mutate\n", 24);
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

int webhook_start(struct webhook **out, const struct webhook_opts *o)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(o->port) };
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_ERROR_LOG;
	const union MHD_DaemonInfo *info;
	struct webhook *w;

	if (inet_pton(AF_INET, o->addr ? o->addr : "0.0.0.0", &sa.sin_addr) != 1)
		return -EINVAL;
	if (!(w = calloc(1, sizeof(*w))))
		return -ENOMEM;
	w->o = *o;
	pthread_mutex_init(&w->lock, NULL);
	if (o->cert_pem && o->key_pem)
		w->mhd = MHD_start_daemon(flags | MHD_USE_TLS, o->port, NULL, NULL, on_request, w,
					  MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_HTTPS_MEM_CERT,
					  o->cert_pem, MHD_OPTION_HTTPS_MEM_KEY, o->key_pem,
					  MHD_OPTION_NOTIFY_COMPLETED, on_done, w,
					  MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
	else
		w->mhd = MHD_start_daemon(flags, o->port, NULL, NULL, on_request, w,
					  MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED,
					  on_done, w, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
					  MHD_OPTION_END);
	if (!w->mhd) {
		ts_error("webhook: cannot listen on port %u%s", o->port,
			 o->cert_pem ? " (check the certificate and key)" : "");
		pthread_mutex_destroy(&w->lock);
		free(w);
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

void webhook_stop(struct webhook *w)
{
	if (!w)
		return;
	MHD_stop_daemon(w->mhd);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
