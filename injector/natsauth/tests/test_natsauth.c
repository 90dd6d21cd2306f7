// SPDX-License-Identifier: Apache-2.0
/* The auth callout's decisions: each role's rights exactly, every refusal with its
 * reason, and answers that carry a user JWT signed by the issuer, addressed to the
 * requesting client and server. The API server is a stub here; the auth e2e
 * (e2e/k8s/test-auth.sh) runs the same code against a real one and nats-server. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "injector/natsauth/callout.h"
#include "injector/natsauth/review.h"

#define USER_NKEY "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4"
#define UID "6f1c2b9e-1d2a-4c3b-9e8f-0a1b2c3d4e5f"

static const struct ts_authz_policy policy = {
	.analyzer = "trainscope:trainscope-analyzer",
	.agent = "trainscope:trainscope-agent",
	.cli = { "trainscope:trainscope-cli" },
	.n_cli = 1,
	.analyzer_durable = "trainscope-analyzer",
	.analyzer_bucket = "trainscope-analyzer",
};

static struct ts_authz_who who_of(const char *ns, const char *sa, const char *uid,
				  const char *node)
{
	struct ts_authz_who w = { 0 };

	snprintf(w.ns, sizeof(w.ns), "%s", ns);
	snprintf(w.sa, sizeof(w.sa), "%s", sa);
	snprintf(w.pod, sizeof(w.pod), "%s", *uid ? "p-0" : "");
	snprintf(w.pod_uid, sizeof(w.pod_uid), "%s", uid);
	snprintf(w.node, sizeof(w.node), "%s", node);
	return w;
}

/* "pub allow" etc. joined by spaces, for one comparison. */
static char *list(json_t *perms, const char *dir, const char *kind)
{
	json_t *a = json_object_get(json_object_get(perms, dir), kind), *v;
	char *out = calloc(1, 4096);
	size_t i;

	json_array_foreach(a, i, v) {
		if (i)
			strcat(out, " ");
		strcat(out, json_string_value(v));
	}
	return out;
}

static void expect(json_t *perms, const char *dir, const char *kind, const char *want)
{
	char *got = list(perms, dir, kind);

	assert_string_equal(got, want);
	free(got);
}

static void test_roles(void **state)
{
	struct ts_authz_who w;
	json_t *p = NULL;
	char why[256];

	(void)state;
	w = who_of("team-a", "default", UID, "gpu-node-1.example");
	assert_int_equal(ts_authz_rights(&policy, &w, &p, why, sizeof(why)), TS_ROLE_RELAY);
	expect(p, "pub", "allow",
	       "ts.v1.team-a.*.rank.* ts.v1.team-a.*.pod.* ts.v1.team-a.*.hang.* "
	       "ts.v1.team-a.*.ctl.gpu-node-1_example");
	expect(p, "sub", "allow", "_INBOX." UID ".>");
	json_decref(p);

	w = who_of("trainscope", "trainscope-agent", UID, "n1");
	assert_int_equal(ts_authz_rights(&policy, &w, &p, why, sizeof(why)), TS_ROLE_AGENT);
	expect(p, "pub", "allow", "ts.v1.*.*.host.n1 ts.v1.*.*.dev.n1");
	expect(p, "sub", "allow", "_INBOX." UID ".> ts.v1.*.*.ctl.n1");
	json_decref(p);

	w = who_of("trainscope", "trainscope-analyzer", UID, "n1");
	assert_int_equal(ts_authz_rights(&policy, &w, &p, why, sizeof(why)), TS_ROLE_ANALYZER);
	expect(p, "pub", "allow", "$JS.API.> $JS.ACK.> $KV.trainscope-analyzer.>");
	json_decref(p);

	/* the CLI: no pod needed; never the analyzer's consumer */
	w = who_of("trainscope", "trainscope-cli", "", "");
	assert_int_equal(ts_authz_rights(&policy, &w, &p, why, sizeof(why)), TS_ROLE_CLI);
	expect(p, "pub", "deny",
	       "$JS.API.CONSUMER.*.TRAINSCOPE.trainscope-analyzer "
	       "$JS.API.CONSUMER.*.TRAINSCOPE.trainscope-analyzer.> "
	       "$JS.API.CONSUMER.*.*.TRAINSCOPE.trainscope-analyzer "
	       "$JS.ACK.TRAINSCOPE.trainscope-analyzer.>");
	json_decref(p);

	/* partitioned analyzers: each partition's consumer kept from the CLI too */
	{
		struct ts_authz_policy parted = policy;
		json_t *deny;

		parted.analyzer_partitions = 2;
		assert_int_equal(ts_authz_rights(&parted, &w, &p, why, sizeof(why)), TS_ROLE_CLI);
		deny = json_object_get(json_object_get(p, "pub"), "deny");
		assert_int_equal(json_array_size(deny), 12);
		assert_string_equal(json_string_value(json_array_get(deny, 4)),
				    "$JS.API.CONSUMER.*.TRAINSCOPE.trainscope-analyzer-p0");
		assert_string_equal(json_string_value(json_array_get(deny, 11)),
				    "$JS.ACK.TRAINSCOPE.trainscope-analyzer-p1.>");
		json_decref(p);
	}

	/* the agent's ServiceAccount name in another namespace is just a relay */
	w = who_of("team-a", "trainscope-agent", UID, "n1");
	assert_int_equal(ts_authz_rights(&policy, &w, &p, why, sizeof(why)), TS_ROLE_RELAY);
	json_decref(p);
}

static void test_refusals(void **state)
{
	struct ts_authz_who w;
	json_t *p = NULL;
	char why[256];

	(void)state;
	w = who_of("kube-system", "default", UID, "n1");
	assert_int_equal(ts_authz_rights(&policy, &w, &p, why, sizeof(why)), TS_ROLE_NONE);
	assert_null(p);
	assert_non_null(strstr(why, "system namespace"));
	w = who_of("team-a", "default", "", ""); /* a token not bound to a pod */
	assert_int_equal(ts_authz_rights(&policy, &w, &p, why, sizeof(why)), TS_ROLE_NONE);
	assert_non_null(strstr(why, "projected"));
	w = who_of("trainscope", "trainscope-analyzer", "", "");
	assert_int_equal(ts_authz_rights(&policy, &w, &p, why, sizeof(why)), TS_ROLE_NONE);
	w = who_of("team-a", "default", "x.>", "n1"); /* a uid that is not one subject token */
	assert_int_equal(ts_authz_rights(&policy, &w, &p, why, sizeof(why)), TS_ROLE_NONE);
	assert_int_equal(ts_authz_parse_username(&w, "system:serviceaccount:team-a:default"), 0);
	assert_string_equal(w.ns, "team-a");
	assert_string_equal(w.sa, "default");
	assert_int_equal(ts_authz_parse_username(&w, "system:serviceaccount:../x:default"), -EINVAL);
	assert_int_equal(ts_authz_parse_username(&w, "alice"), -EINVAL);
	assert_int_equal(ts_authz_parse_username(&w, "system:serviceaccount:team-a:"), -EINVAL);
}

static void test_review_status(void **state)
{
	struct ts_authz_who w;
	char why[256];
	json_t *st;

	(void)state;
	st = json_loads("{\"authenticated\":true,\"audiences\":[\"trainscope-nats\"],\"user\":{"
			"\"username\":\"system:serviceaccount:team-a:default\",\"extra\":{"
			"\"authentication.kubernetes.io/pod-name\":[\"p-0\"],"
			"\"authentication.kubernetes.io/pod-uid\":[\"" UID "\"],"
			"\"authentication.kubernetes.io/node-name\":[\"n1\"]}}}", 0, NULL);
	assert_int_equal(ts_review_parse(st, "trainscope-nats", &w, why, sizeof(why)), 0);
	assert_string_equal(w.pod_uid, UID);
	assert_string_equal(w.node, "n1");
	/* a token made for another audience (the API server's own) is not ours */
	assert_int_equal(ts_review_parse(st, "other", &w, why, sizeof(why)), -EACCES);
	json_decref(st);
	st = json_loads("{\"authenticated\":false,\"error\":\"token expired\"}", 0, NULL);
	assert_int_equal(ts_review_parse(st, "trainscope-nats", &w, why, sizeof(why)), -EACCES);
	assert_non_null(strstr(why, "token expired"));
	json_decref(st);
}

/* The stub API server: tokens "<ns>:<sa>:<uid>:<node>", "bad" refused, "down" unanswered. */
static int stub_review(void *ctx, const char *token, struct ts_authz_who *who, int64_t *exp,
		       char *why, size_t whylen)
{
	char ns[64] = "", sa[64] = "", uid[64] = "", node[64] = "";

	(void)ctx;
	*exp = 2000000000;
	if (!strcmp(token, "down")) {
		snprintf(why, whylen, "TokenReview: no answer");
		return -EAGAIN;
	}
	if (sscanf(token, "%63[^:]:%63[^:]:%63[^:]:%63s", ns, sa, uid, node) < 2) {
		snprintf(why, whylen, "the API server does not accept the token");
		return -EACCES;
	}
	*who = who_of(ns, sa, uid, node);
	return 0;
}

static struct ts_callout callout(void)
{
	struct ts_callout c = { .account = "TS", .policy = policy, .review = stub_review };
	uint8_t raw[32] = { 1, 2, 3 };

	assert_int_equal(ts_nkey_from_raw(&c.issuer, TS_NKEY_ACCOUNT, raw), 0);
	return c;
}

/* An authorization request as nats-server sends one, signed by a server key. */
static char *request(const char *token)
{
	struct ts_nkey server;
	uint8_t raw[32] = { 9 };
	json_t *c = json_pack("{s:s, s:s, s:{s:s, s:{s:s}, s:{}, s:s, s:i}}", "sub", USER_NKEY, "aud",
			      "nats-authorization-request", "nats", "user_nkey", USER_NKEY,
			      "server_id", "id", "NSERVERID", "connect_opts", "type",
			      "authorization_request", "version", 2);
	char *jwt;

	if (token)
		json_object_set_new(json_object_get(json_object_get(c, "nats"), "connect_opts"),
				    "auth_token", json_string(token));
	assert_int_equal(ts_nkey_from_raw(&server, TS_NKEY_SERVER, raw), 0);
	jwt = ts_jwt_encode(c, &server);
	json_decref(c);
	return jwt;
}

/* The answer's claims, checked to be signed by the issuer and addressed right. */
static json_t *answer(struct ts_callout *c, const char *token, struct ts_callout_result *r)
{
	char *req = request(token), *ans, why[128], issuer[TS_NKEY_PUBLIC_LEN + 1];
	json_t *claims;

	ans = ts_callout_answer(c, req, strlen(req), r);
	free(req);
	assert_non_null(ans);
	claims = ts_jwt_decode(ans, why, sizeof(why));
	free(ans);
	assert_non_null(claims);
	ts_nkey_public(&c->issuer, issuer);
	assert_string_equal(json_string_value(json_object_get(claims, "iss")), issuer);
	assert_string_equal(json_string_value(json_object_get(claims, "sub")), USER_NKEY);
	assert_string_equal(json_string_value(json_object_get(claims, "aud")), "NSERVERID");
	return claims;
}

static void test_callout_answers(void **state)
{
	struct ts_callout c = callout();
	struct ts_callout_result r;
	json_t *claims, *user;
	const char *ujwt;
	char why[128];

	(void)state;
	claims = answer(&c, "team-a:default:" UID ":n1", &r);
	assert_int_equal(r.role, TS_ROLE_RELAY);
	ujwt = json_string_value(json_object_get(json_object_get(claims, "nats"), "jwt"));
	assert_non_null(ujwt);
	user = ts_jwt_decode(ujwt, why, sizeof(why));
	assert_non_null(user);
	assert_string_equal(json_string_value(json_object_get(user, "aud")), "TS");
	assert_string_equal(json_string_value(json_object_get(user, "sub")), USER_NKEY);
	assert_int_equal(json_integer_value(json_object_get(user, "exp")), 2000000000);
	expect(json_object_get(user, "nats"), "sub", "allow", "_INBOX." UID ".>");
	json_decref(user);
	json_decref(claims);

	const char *refused[][2] = { { NULL, "no token" }, { "bad", "does not accept" },
				     { "down", "TokenReview" }, { "kube-system:x:" UID ":n1",
								   "system namespace" } };
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		claims = answer(&c, refused[i][0], &r);
		assert_int_equal(r.role, TS_ROLE_NONE);
		json_t *nats = json_object_get(claims, "nats");
		assert_null(json_object_get(nats, "jwt"));
		assert_non_null(strstr(json_string_value(json_object_get(nats, "error")), refused[i][1]));
		json_decref(claims);
	}
	/* not a request, or not signed: nothing to answer */
	assert_null(ts_callout_answer(&c, "garbage", 7, &r));
	assert_non_null(strstr(r.why, "JWT"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roles),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_review_status),
		cmocka_unit_test(test_callout_answers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
