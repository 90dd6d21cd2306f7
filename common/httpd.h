// SPDX-License-Identifier: Apache-2.0
/* A small HTTP server over libmicrohttpd for /metrics, /healthz and /readyz. */
#ifndef TS_HTTPD_H
#define TS_HTTPD_H

#include <stdint.h>
#include "buf.h"

/* Fills out with the body for path; returns the HTTP status (404 for unknown paths). */
typedef int (*ts_http_handler)(void *ctx, const char *path, struct ts_buf *out,
			       const char **content_type);

struct ts_httpd;

/* Listens on addr:port (addr NULL = 127.0.0.1, port 0 = any free port).
 * Returns 0 or a negative errno. */
int ts_httpd_start(struct ts_httpd **out, const char *addr, uint16_t port, ts_http_handler h,
		   void *ctx);
uint16_t ts_httpd_port(const struct ts_httpd *d);

/* Renders the Prometheus text of a component (called on the HTTP thread). */
typedef void (*ts_metrics_fn)(void *ctx, struct ts_buf *out);
/* Whether the component works: 0, or non-zero with the reason written to out (called on
 * the HTTP thread: it must not wait on the component's locks). */
typedef int (*ts_health_fn)(void *ctx, struct ts_buf *out);
/* The standard server of every daemon: GET /metrics from render, /healthz "ok" (200), or
 * the reason health gives (503) when health is set. */
int ts_httpd_start_metrics(struct ts_httpd **out, const char *addr, uint16_t port,
			   ts_metrics_fn render, void *ctx);
int ts_httpd_start_metrics_health(struct ts_httpd **out, const char *addr, uint16_t port,
				  ts_metrics_fn render, ts_health_fn health, void *ctx);

/* A daemon's endpoints (sz: sizeof, so that the struct can grow). health answers
 * /healthz, liveness: whether a restart would help; ready answers /readyz, readiness:
 * whether it does its work now, or what it waits on (a ts_health_fn; its text on 200
 * too, "ready" when it writes none). Without ready, /readyz answers as /healthz. */
struct ts_httpd_daemon {
	size_t sz;
	ts_metrics_fn render;
	ts_health_fn health, ready;
	void *ctx;
};
int ts_httpd_start_daemon(struct ts_httpd **out, const char *addr, uint16_t port,
			  const struct ts_httpd_daemon *d);

void ts_httpd_stop(struct ts_httpd *d);

#endif
