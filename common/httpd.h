/* A small HTTP server over libmicrohttpd for /metrics and /healthz. */
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
void ts_httpd_stop(struct ts_httpd *d);

#endif
