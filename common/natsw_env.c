// SPDX-License-Identifier: Apache-2.0
/* A client's NATS settings from the environment and the command line (tsn_opt_table),
 * the stream's from TRAINSCOPE_STREAM_*. */
#include "natsw_impl.h"
#include "log.h"
#include "numparse.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A unit suffix of a number and what it multiplies by. */
struct unit {
	char c;
	int64_t mul;
};

static const struct unit size_units[] = { { 'K', 1 << 10 }, { 'k', 1 << 10 }, { 'M', 1 << 20 },
					  { 'm', 1 << 20 }, { 'G', 1 << 30 }, { 'g', 1 << 30 },
					  { 0, 0 } };

static const struct unit time_units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 },
					  { 0, 0 } };

/* A positive number with an optional unit ("512M", "24h"); 0 when not set or not one, or
 * when it overflows (said, with what the variable wants). */
static int64_t env_number(const char *name, const struct unit *units, const char *what)
{
	const char *v = getenv(name);
	char digits[32];
	int64_t mul = 1;
	size_t len;
	long n;

	if (!v || !*v)
		return 0;
	len = strlen(v);
	for (const struct unit *u = units; u->c; u++)
		if (v[len - 1] == u->c) {
			mul = u->mul;
			len--;
			break;
		}
	snprintf(digits, sizeof(digits), "%.*s", (int)len, v);
	if (len >= sizeof(digits) || ts_parse_int(digits, 1, INT64_MAX / mul, &n)) {
		ts_warn("nats: %s=%s is not %s: ignored", name, v, what);
		return 0;
	}
	return (int64_t)n * mul;
}

/* The stream's settings from TRAINSCOPE_STREAM_MAX_BYTES, _MAX_AGE, _REPLICAS and
 * _DISCARD; what is not a valid value is said and left to its default. */
static void stream_from_env(struct tsn_opts *o)
{
	const char *r = getenv("TRAINSCOPE_STREAM_REPLICAS"), *d = getenv("TRAINSCOPE_STREAM_DISCARD");
	long replicas;

	o->stream_max_bytes = env_number("TRAINSCOPE_STREAM_MAX_BYTES", size_units,
					 "a size (bytes, or a number with K, M or G)");
	o->stream_max_age_s = env_number("TRAINSCOPE_STREAM_MAX_AGE", time_units,
					 "a duration (seconds, or a number with s, m, h or d)");
	if (r && *r) {
		if (ts_parse_int(r, 1, 5, &replicas)) {
			ts_warn("nats: TRAINSCOPE_STREAM_REPLICAS=%s is not 1 to 5: 1", r);
			replicas = 1;
		}
		o->stream_replicas = (int)replicas;
	}
	if (d && *d && strcmp(d, "old") && strcmp(d, "new"))
		ts_warn("nats: TRAINSCOPE_STREAM_DISCARD=%s is neither old nor new: old", d);
	o->stream_discard_new = d && !strcmp(d, "new");
}

/* Defaults from the environment (natsw.h). */
void tsn_opts_from_env(struct tsn_opts *o, const char *client_name)
{
	o->url = getenv("TRAINSCOPE_NATS_URL");
	o->token = getenv("TRAINSCOPE_NATS_TOKEN");
	o->token_file = getenv("TRAINSCOPE_NATS_TOKEN_FILE");
	o->user = getenv("TRAINSCOPE_NATS_USER");
	o->password = getenv("TRAINSCOPE_NATS_PASSWORD");
	o->tls_ca = getenv("TRAINSCOPE_NATS_CA");
	o->creds_file = getenv("TRAINSCOPE_NATS_CREDS");
	o->tls_ca_pem = getenv("TRAINSCOPE_NATS_CA_PEM");
	o->tls_name = getenv("TRAINSCOPE_NATS_TLS_NAME");
	o->pod_uid = getenv("TRAINSCOPE_POD_UID");
	o->name = client_name;
	stream_from_env(o);
}

/* The NATS options as a table (natsw.h). */
#define TSN_STR(field) TS_OPT_STR, offsetof(struct tsn_opts, field), 0, 0
const struct ts_opt tsn_opt_table[6] = {
	{ "nats", 's', TSN_STR(url), "URL", "TRAINSCOPE_NATS_URL",
	  "NATS server (default nats://127.0.0.1:4222)", NULL },
	{ "nats-creds", 0, TSN_STR(creds_file), "FILE", "TRAINSCOPE_NATS_CREDS",
	  "NATS credentials file (JWT and nkey seed)", NULL },
	{ "nats-token", 0, TSN_STR(token), "TOKEN", "TRAINSCOPE_NATS_TOKEN", "NATS token", NULL },
	{ "nats-token-file", 0, TSN_STR(token_file), "F", "TRAINSCOPE_NATS_TOKEN_FILE",
	  "NATS token read at each connect, such as a projected ServiceAccount token", NULL },
	{ "nats-user", 0, TSN_STR(user), "NAME", "TRAINSCOPE_NATS_USER",
	  "NATS user; its password from TRAINSCOPE_NATS_PASSWORD", NULL },
	{ "nats-ca", 0, TSN_STR(tls_ca), "FILE", "TRAINSCOPE_NATS_CA",
	  "CA bundle: connect with TLS (or the PEM text in TRAINSCOPE_NATS_CA_PEM)", NULL },
};

/* The options o holds into the variables tsn_opts_from_env reads (natsw.h). */
int tsn_opts_export(const struct tsn_opts *o)
{
	for (size_t i = 0; i < sizeof(tsn_opt_table) / sizeof(tsn_opt_table[0]); i++) {
		const char *v = *(const char *const *)((const char *)o + tsn_opt_table[i].off);
		if (v && *v && setenv(tsn_opt_table[i].env, v, 1))
			return -errno;
	}
	return 0;
}

/* Whether o carries credentials (natsw.h). */
bool tsn_opts_authenticated(const struct tsn_opts *o)
{
	return tsn_set(o->creds_file) || tsn_set(o->token) || tsn_set(o->token_file) ||
	       tsn_set(o->user);
}

/* The default URL where none is given (natsw.h). */
void tsn_opts_finish(struct tsn_opts *o)
{
	if (!o->url || !*o->url)
		o->url = "nats://127.0.0.1:4222";
}
