/* trainscope-webhook's HTTPS server: POST /mutate (pods that opt in by annotation) and
 * /mutate-namespace (pods of namespaces that opt in by label), /healthz, /metrics. */
#ifndef TS_WEBHOOK_SERVER_H
#define TS_WEBHOOK_SERVER_H

#include <stdint.h>
#include "mutate.h"

#define TS_WEBHOOK_MAX_BODY (1u << 20)

struct webhook_opts {
	const char *cert_pem, *key_pem; /* PEM text; NULL: plain HTTP (tests only) */
	const char *addr;               /* listen address (default 0.0.0.0) */
	uint16_t port;                  /* 0 = any free port */
	struct ts_inject_opts inject;
};

struct webhook;

int webhook_start(struct webhook **out, const struct webhook_opts *o);
uint16_t webhook_port(const struct webhook *w);
void webhook_stop(struct webhook *w);

#endif
