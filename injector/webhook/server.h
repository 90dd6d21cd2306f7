// SPDX-License-Identifier: Apache-2.0
/* trainscope-webhook's HTTPS server: POST /mutate (pods that opt in by annotation) and
 * /mutate-namespace (pods of namespaces that opt in by label), /healthz, /metrics. */
#ifndef TS_WEBHOOK_SERVER_H
#define TS_WEBHOOK_SERVER_H

#include <stdint.h>
#include "events.h"
#include "metric.h"
#include "mutate.h"

#define TS_WEBHOOK_MAX_BODY (1u << 20)

struct webhook_opts {
	const char *cert_pem, *key_pem; /* PEM text (copied); NULL: plain HTTP (tests only) */
	int64_t cert_not_after;         /* its notAfter, Unix seconds (0: not exported) */
	const char *addr;               /* listen address (default 0.0.0.0) */
	uint16_t port;                  /* 0 = any free port */
	struct ts_inject_opts inject;
	struct ts_events *events;       /* NULL: no Events on pods left unchanged */
};

struct webhook;

int webhook_start(struct webhook **out, const struct webhook_opts *o);
uint16_t webhook_port(const struct webhook *w);
void webhook_stop(struct webhook *w);
/* The families /metrics serves. */
extern const struct ts_metric_table webhook_metric_table;

/* Serves another certificate and key, a pair checked to load, without closing the
 * listening socket: the running daemon stops accepting (MHD_quiesce_daemon), a new one
 * takes its socket with the new pair, the old one finishes what it was answering and
 * stops. Returns 0; -1 when the new daemon does not start, the old pair then served
 * again (counted, logged); -2 when not even that starts: nothing accepts on the port any
 * more, the caller should exit so that it is restarted. */
int webhook_reload_tls(struct webhook *w, const char *cert_pem, const char *key_pem,
		       int64_t not_after);
/* Counts a new pair that did not load (the caller checked it and logged why). */
void webhook_count_tls_failure(struct webhook *w);

#endif
