// SPDX-License-Identifier: Apache-2.0
#include "review.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "kube.h"
#include "nkeys.h"

static void extra(json_t *user, const char *key, char *out, size_t n)
{
	json_t *v = json_object_get(json_object_get(user, "extra"), key);
	const char *s = json_string_value(json_array_get(v, 0));

	snprintf(out, n, "%s", s ? s : "");
}

int ts_review_parse(json_t *status, const char *audience, struct ts_authz_who *who, char *why,
		    size_t whylen)
{
	json_t *user = json_object_get(status, "user"), *auds = json_object_get(status, "audiences");
	const char *err = json_string_value(json_object_get(status, "error"));
	bool aud_ok = false;
	size_t i;
	json_t *a;

	memset(who, 0, sizeof(*who));
	if (!json_is_true(json_object_get(status, "authenticated"))) {
		snprintf(why, whylen, "the API server does not accept the token%s%s",
			 err ? ": " : "", err ? err : "");
		return -EACCES;
	}
	json_array_foreach(auds, i, a)
		aud_ok |= json_is_string(a) && !strcmp(json_string_value(a), audience);
	if (!aud_ok) {
		snprintf(why, whylen, "the token is not for the audience %s", audience);
		return -EACCES;
	}
	if (ts_authz_parse_username(who, json_string_value(json_object_get(user, "username")))) {
		snprintf(why, whylen, "not a ServiceAccount's token");
		return -EACCES;
	}
	extra(user, "authentication.kubernetes.io/pod-name", who->pod, sizeof(who->pod));
	extra(user, "authentication.kubernetes.io/pod-uid", who->pod_uid, sizeof(who->pod_uid));
	extra(user, "authentication.kubernetes.io/node-name", who->node, sizeof(who->node));
	return 0;
}

int ts_review_token(void *ctx, const char *token, struct ts_authz_who *who, int64_t *exp,
		    char *why, size_t whylen)
{
	struct ts_review *r = ctx;
	json_t *body = json_pack("{s:s, s:s, s:{s:s, s:[s]}}", "apiVersion", "authentication.k8s.io/v1",
				 "kind", "TokenReview", "spec", "token", token, "audiences", r->audience);
	json_t *resp = NULL, *claims;
	int code, err;

	if (!body)
		return -ENOMEM;
	code = ts_kube_request(r->kube, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", body,
			       NULL, &resp);
	json_decref(body);
	if (code != 201 && code != 200) {
		const char *msg = json_string_value(json_object_get(resp, "message"));
		snprintf(why, whylen, "TokenReview: %s%d%s%s", code < 0 ? "no answer, " : "HTTP ",
			 code < 0 ? -code : code, msg ? ": " : "", msg ? msg : "");
		json_decref(resp);
		return -EAGAIN;
	}
	err = ts_review_parse(json_object_get(resp, "status"), r->audience, who, why, whylen);
	json_decref(resp);
	/* the API server checked the token; its own expiry bounds the NATS user's */
	claims = err ? NULL : ts_jwt_claims_unverified(token);
	*exp = (int64_t)json_integer_value(json_object_get(claims, "exp"));
	json_decref(claims);
	return err;
}
