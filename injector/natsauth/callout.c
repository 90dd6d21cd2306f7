// SPDX-License-Identifier: Apache-2.0
#include "callout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *jstr(json_t *o, const char *path1, const char *path2)
{
	json_t *v = json_object_get(o, path1);

	return json_string_value(path2 ? json_object_get(v, path2) : v);
}

/* The user JWT of a granted client: its rights, in our account, until its token expires. */
static char *user_jwt(const struct ts_callout *c, const char *user_nkey, json_t *perms,
		      const struct ts_callout_result *r, int64_t exp)
{
	char name[600];
	json_t *claims;
	char *jwt;

	snprintf(name, sizeof(name), "%s/%s%s%s (%s)", r->who.ns, r->who.sa, *r->who.pod ? " pod " : "",
		 r->who.pod, ts_authz_role_name(r->role));
	json_object_set_new(perms, "subs", json_integer(-1));
	json_object_set_new(perms, "data", json_integer(-1));
	json_object_set_new(perms, "payload", json_integer(-1));
	json_object_set_new(perms, "type", json_string("user"));
	json_object_set_new(perms, "version", json_integer(2));
	claims = json_pack("{s:s, s:s, s:s, s:O}", "sub", user_nkey, "aud", c->account, "name", name,
			   "nats", perms);
	if (claims && exp > 0)
		json_object_set_new(claims, "exp", json_integer((json_int_t)exp));
	jwt = claims ? ts_jwt_encode(claims, &c->issuer) : NULL;
	json_decref(claims);
	return jwt;
}

static char *response(const struct ts_callout *c, const char *user_nkey, const char *server_id,
		      const char *user, const char *error)
{
	json_t *nats = json_pack("{s:s, s:i}", "type", "authorization_response", "version", 2);
	json_t *claims;
	char *jwt;

	json_object_set_new(nats, user ? "jwt" : "error", json_string(user ? user : error));
	claims = json_pack("{s:s, s:s, s:o}", "sub", user_nkey, "aud", server_id, "nats", nats);
	jwt = claims ? ts_jwt_encode(claims, &c->issuer) : NULL;
	json_decref(claims);
	return jwt;
}

static char *decide(const struct ts_callout *c, json_t *req, const char *user_nkey,
		    const char *server_id, const char *busy, struct ts_callout_result *r)
{
	const char *token = jstr(json_object_get(req, "nats"), "connect_opts", "auth_token");
	json_t *perms = NULL;
	char *user = NULL, *answer;
	int64_t exp = 0;
	int err;

	if (busy) {
		snprintf(r->why, sizeof(r->why), "%s", busy);
	} else if (!token || !*token) {
		snprintf(r->why, sizeof(r->why), "no token: trainscope's NATS takes a Kubernetes "
			 "ServiceAccount token with its audience");
	} else if ((err = c->review(c->review_ctx, token, &r->who, &exp, r->why, sizeof(r->why)))) {
		if (err != -EACCES && !*r->why)
			snprintf(r->why, sizeof(r->why), "the token could not be reviewed (%s)",
				 strerror(-err));
	} else if ((r->role = ts_authz_rights(&c->policy, &r->who, &perms, r->why,
					      sizeof(r->why))) != TS_ROLE_NONE) {
		user = user_jwt(c, user_nkey, perms, r, exp);
		if (!user) {
			r->role = TS_ROLE_NONE;
			snprintf(r->why, sizeof(r->why), "out of memory signing the user's JWT");
		}
	}
	json_decref(perms);
	answer = response(c, user_nkey, server_id, user, r->why);
	free(user);
	return answer;
}

static char *answer_request(const struct ts_callout *c, const void *req, size_t len,
			    const char *busy, struct ts_callout_result *res)
{
	char *text = malloc(len + 1), *answer = NULL;
	const char *user_nkey, *server_id, *type;
	json_t *claims = NULL, *nats;
	json_int_t exp;

	memset(res, 0, sizeof(*res));
	if (!text) {
		snprintf(res->why, sizeof(res->why), "out of memory");
		return NULL;
	}
	memcpy(text, req, len);
	text[len] = 0;
	claims = ts_jwt_decode(text, res->why, sizeof(res->why));
	free(text);
	nats = json_object_get(claims, "nats");
	user_nkey = jstr(nats, "user_nkey", NULL);
	server_id = jstr(nats, "server_id", "id");
	type = jstr(nats, "type", NULL);
	exp = json_integer_value(json_object_get(claims, "exp"));
	if (claims && (!user_nkey || !server_id || !type || strcmp(type, "authorization_request"))) {
		snprintf(res->why, sizeof(res->why), "not an authorization request (nats.type, "
			 "user_nkey and server_id.id)");
	} else if (claims && exp > 0 && (json_int_t)time(NULL) >= exp) {
		res->stale = true;
		snprintf(res->why, sizeof(res->why), "the request expired before it was read: its "
			 "server gave up waiting");
	} else if (claims)
		answer = decide(c, claims, user_nkey, server_id, busy, res);
	json_decref(claims);
	return answer;
}

char *ts_callout_answer(const struct ts_callout *c, const void *req, size_t len,
			struct ts_callout_result *res)
{
	return answer_request(c, req, len, NULL, res);
}

char *ts_callout_refuse(const struct ts_callout *c, const void *req, size_t len,
			const char *why, struct ts_callout_result *res)
{
	return answer_request(c, req, len, why, res);
}
