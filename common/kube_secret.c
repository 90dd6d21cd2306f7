// SPDX-License-Identifier: Apache-2.0
#include "kube_secret.h"
#include "b64.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ts_kube_said(int code, json_t *answer, char *out, size_t n)
{
	const char *msg = json_string_value(json_object_get(answer, "message"));

	if (code < 0)
		snprintf(out, n, "no answer from the API server (%s; TRAINSCOPE_LOG=warn says more)",
			 strerror(-code));
	else
		snprintf(out, n, "HTTP %d%s%s", code, msg ? ": " : "", msg ? msg : "");
}

int ts_kube_name_ok(const char *s, size_t max)
{
	size_t n = strlen(s);
	const char *ok = "abcdefghijklmnopqrstuvwxyz0123456789-.";

	return n && n <= max && strspn(s, ok) == n && s[0] != '-' && s[0] != '.' &&
	       s[n - 1] != '-' && s[n - 1] != '.';
}

int ts_kube_namespace(char *out, size_t n)
{
	const char *env = getenv("POD_NAMESPACE");
	FILE *f;

	if (env && *env) {
		snprintf(out, n, "%s", env);
	} else if ((f = fopen(TS_KUBE_NS_FILE, "r"))) {
		if (!fgets(out, (int)n, f))
			out[0] = 0;
		fclose(f);
		out[strcspn(out, "\r\n")] = 0;
	} else {
		return -ENOENT;
	}
	return ts_kube_name_ok(out, 63) ? 0 : -EINVAL;
}

char *ts_kube_secret_value(json_t *secret, const char *key)
{
	const char *v = json_string_value(json_object_get(json_object_get(secret, "data"), key));
	char *text = v ? ts_b64_decode(v) : NULL;

	if (text && !*text) {
		free(text);
		text = NULL;
	}
	return text;
}

int ts_kube_secret_set(json_t *secret, const char *key, const char *value)
{
	json_t *data = json_object_get(secret, "data");
	char *enc = ts_b64_encode(value);
	json_t *j = enc ? json_string(enc) : NULL;

	free(enc);
	if (!json_is_object(data) && json_object_set_new(secret, "data", data = json_object())) {
		json_decref(j);
		return -ENOMEM;
	}
	return j && !json_object_set_new(data, key, j) ? 0 : -ENOMEM;
}

json_t *ts_kube_secret_new(const char *ns, const char *name, const char *component,
			   const char *type)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:s}", "apiVersion", "v1",
			 "kind", "Secret", "metadata", "name", name, "namespace", ns, "labels",
			 "app.kubernetes.io/name", "trainscope", "app.kubernetes.io/component",
			 component, "type", type);
}
