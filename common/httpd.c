// SPDX-License-Identifier: Apache-2.0
#include "httpd.h"
#include "metric.h"
#include "log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

struct ts_httpd {
	struct MHD_Daemon *mhd;
	ts_http_handler handler;
	void *ctx;
	void *owned; /* freed with the server */
	uint16_t port;
};

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct ts_httpd *d = cls;
	const char *ctype = "text/plain; charset=utf-8";
	struct ts_buf body = { 0 };
	struct MHD_Response *resp;
	enum MHD_Result ret;
	int status;

	(void)version, (void)upload, (void)upload_size, (void)con_cls;
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		ts_buf_printf(&body, "method %s not allowed\n", method);
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else {
		status = d->handler(d->ctx, url, &body, &ctype);
	}
	resp = MHD_create_response_from_buffer(body.len, body.data ? body.data : (char *)"",
					       MHD_RESPMEM_MUST_COPY);
	ts_buf_free(&body);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", ctype);
	ret = MHD_queue_response(conn, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return ret;
}

int ts_httpd_start(struct ts_httpd **out, const char *addr, uint16_t port, ts_http_handler h,
		   void *ctx)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	const union MHD_DaemonInfo *info;
	struct ts_httpd *d;

	if (inet_pton(AF_INET, addr ? addr : "127.0.0.1", &sa.sin_addr) != 1)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->handler = h;
	d->ctx = ctx;
	/* a thread a connection: /healthz never waits behind a /metrics that renders a large
	 * state (1.4 s at 100,000 ranks, a liveness probe's timeout is 1 s); the limit bounds
	 * the threads */
	d->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
					  MHD_USE_ERROR_LOG, port, NULL, NULL, on_request, d,
				  MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
				  MHD_OPTION_CONNECTION_LIMIT, 32u, MHD_OPTION_END);
	if (!d->mhd) {
		ts_error("http: cannot listen on %s:%u", addr ? addr : "127.0.0.1", port);
		free(d);
		return -EADDRINUSE;
	}
	info = MHD_get_daemon_info(d->mhd, MHD_DAEMON_INFO_BIND_PORT);
	d->port = info ? info->port : port;
	*out = d;
	return 0;
}

uint16_t ts_httpd_port(const struct ts_httpd *d)
{
	return d->port;
}

void ts_httpd_stop(struct ts_httpd *d)
{
	if (!d)
		return;
	MHD_stop_daemon(d->mhd);
	free(d->owned);
	free(d);
}

static int serve_metrics(void *ctx, const char *path, struct ts_buf *out, const char **ctype)
{
	struct ts_httpd_daemon *m = ctx;
	bool ready = strcmp(path, "/readyz") == 0 && m->ready;
	ts_health_fn check = ready ? m->ready : m->health;

	if (strcmp(path, "/metrics") == 0) {
		*ctype = "text/plain; version=0.0.4";
		ts_metric_build_info(out);
		m->render(m->ctx, out);
		return 200;
	}
	if (strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0) {
		if (check && check(m->ctx, out))
			return 503;
		if (!out->len)
			ts_buf_printf(out, ready ? "ready\n" : "ok\n");
		return 200;
	}
	ts_buf_printf(out, "not found: try /metrics, /healthz or /readyz\n");
	return 404;
}

int ts_httpd_start_metrics(struct ts_httpd **out, const char *addr, uint16_t port,
			   ts_metrics_fn render, void *ctx)
{
	return ts_httpd_start_metrics_health(out, addr, port, render, NULL, ctx);
}

int ts_httpd_start_metrics_health(struct ts_httpd **out, const char *addr, uint16_t port,
				  ts_metrics_fn render, ts_health_fn health, void *ctx)
{
	struct ts_httpd_daemon d = { sizeof(d), render, health, NULL, ctx };

	return ts_httpd_start_daemon(out, addr, port, &d);
}

int ts_httpd_start_daemon(struct ts_httpd **out, const char *addr, uint16_t port,
			  const struct ts_httpd_daemon *d)
{
	struct ts_httpd_daemon *m = calloc(1, sizeof(*m));
	int err;

	if (!m)
		return -ENOMEM;
	/* a caller built against a smaller struct: what it lacks stays NULL */
	memcpy(m, d, d->sz < sizeof(*m) ? d->sz : sizeof(*m));
	m->sz = sizeof(*m);
	err = ts_httpd_start(out, addr, port, serve_metrics, m);
	if (err)
		free(m);
	else
		(*out)->owned = m;
	return err;
}

