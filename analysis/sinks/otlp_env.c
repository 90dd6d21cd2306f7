// SPDX-License-Identifier: Apache-2.0
/* The exporter's settings from the OpenTelemetry environment variables: the
 * traces-specific OTEL_EXPORTER_OTLP_TRACES_* win over OTEL_EXPORTER_OTLP_*. */
#include "otlp.h"
#include "numparse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* OTEL_EXPORTER_OTLP_TRACES_<what>, else OTEL_EXPORTER_OTLP_<what>, else NULL; name
 * gets the variable's name. */
static const char *setting(const char *what, char name[64])
{
	static const char *const prefix[] = { "OTEL_EXPORTER_OTLP_TRACES_", "OTEL_EXPORTER_OTLP_" };
	const char *v;

	for (int i = 0; i < 2; i++) {
		snprintf(name, 64, "%s%s", prefix[i], what);
		if ((v = getenv(name)) && *v)
			return v;
	}
	return NULL;
}

static bool is_true(const char *v)
{
	return v && !strcasecmp(v, "true");
}

static int url_of(struct ts_otlp_env *env, const char *flag, char *err, size_t errlen)
{
	const char *v = getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
	const char *base = flag && *flag ? flag : getenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	size_t n;

	if (flag && *flag)
		v = NULL; /* the flag takes a base URL or a full one */
	if (v && *v) {
		snprintf(env->url, sizeof(env->url), "%s", v); /* used as given, by the spec */
	} else if (base && *base) {
		n = strlen(base);
		if (n >= 10 && !strcmp(base + n - 10, "/v1/traces"))
			snprintf(env->url, sizeof(env->url), "%s", base);
		else
			snprintf(env->url, sizeof(env->url), "%s%sv1/traces", base,
				 base[n - 1] == '/' ? "" : "/");
	} else {
		return 0;
	}
	if (strncmp(env->url, "http://", 7) && strncmp(env->url, "https://", 8)) {
		snprintf(err, errlen, "OTLP endpoint %s: only http:// and https:// (OTLP/HTTP) are "
			 "supported", env->url);
		return -EINVAL;
	}
	env->enabled = true;
	return 0;
}

static int protocol_ok(char *err, size_t errlen)
{
	char name[64];
	const char *v = setting("PROTOCOL", name);

	if (!v || !strcmp(v, "http/protobuf"))
		return 0;
	snprintf(err, errlen, "%s=%s: trainscope sends OTLP/HTTP with protobuf only "
		 "(http/protobuf); gRPC collectors take it on port 4318", name, v);
	return -EINVAL;
}

static int numbers(struct ts_otlp_env *env, char *err, size_t errlen)
{
	char name[64];
	const char *v = setting("TIMEOUT", name);
	long ms;

	if (v) {
		if (ts_parse_int(v, 1, 3600000, &ms)) {
			snprintf(err, errlen, "%s=%s: want milliseconds, 1 to 3600000", name, v);
			return -EINVAL;
		}
		env->opts.timeout_ms = (int)ms;
	}
	if ((v = setting("COMPRESSION", name))) {
		if (strcmp(v, "gzip") && strcmp(v, "none")) {
			snprintf(err, errlen, "%s=%s: want gzip or none", name, v);
			return -EINVAL;
		}
		env->opts.no_gzip = !strcmp(v, "none");
	}
	return 0;
}

int ts_otlp_env_load(struct ts_otlp_env *env, const char *endpoint_flag, char *err, size_t errlen)
{
	const char *exp = getenv("OTEL_TRACES_EXPORTER");
	char name[64];
	int rc;

	memset(env, 0, sizeof(*env));
	if (is_true(getenv("OTEL_SDK_DISABLED")) || (exp && !strcmp(exp, "none") &&
						     !(endpoint_flag && *endpoint_flag)))
		return 0;
	if (exp && *exp && strcmp(exp, "otlp") && strcmp(exp, "none")) {
		snprintf(err, errlen, "OTEL_TRACES_EXPORTER=%s: trainscope exports otlp or none", exp);
		return -EINVAL;
	}
	if ((rc = url_of(env, endpoint_flag, err, errlen)) || !env->enabled)
		return rc;
	if ((rc = protocol_ok(err, errlen)) || (rc = numbers(env, err, errlen)))
		return rc;
	env->opts.endpoint = env->url;
	env->opts.headers = setting("HEADERS", name);
	env->opts.ca_file = setting("CERTIFICATE", name);
	env->opts.client_cert = setting("CLIENT_CERTIFICATE", name);
	env->opts.client_key = setting("CLIENT_KEY", name);
	env->opts.service = getenv("OTEL_SERVICE_NAME");
	env->opts.resource = getenv("OTEL_RESOURCE_ATTRIBUTES");
	return 0;
}
