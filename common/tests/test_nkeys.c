// SPDX-License-Identifier: Apache-2.0
/* nkeys and JWTs against values made by the reference Go libraries (nats-io/nkeys and
 * nats-io/jwt v2): the same seed gives the same keys, their JWTs verify here, ours verify
 * there (checked by nats-server in the auth e2e), and a changed byte never verifies. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nkeys.h"

/* nkeys.FromRawSeed(PrefixByteAccount, {0, 7, 14, ...}) */
#define GO_SEED "SAAAABYOCUOCGKRRHA7UMTKULNRGS4DXP2CYZE42UGUK7NV5YTF5FWPEQA"
#define GO_PUBLIC "ABGQ5Q5A2A76774TVG6M4KREWQDNI32EV37R654H3LW3CPFK7JACZAFF"
#define USER "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4"
/* jwt.NewUserClaims(USER) with audience TS, encoded with that key */
#define GO_JWT                                                                                  \
	"eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ."                                        \
	"eyJhdWQiOiJUUyIsImp0aSI6IlFMN1dBUExZVlFMSlVKMklDSEJZUldSWlgzNzI0MlBUN1JMTERHS1BSR1NMNE" \
	"Y2QVVTM0EiLCJpYXQiOjE3OTU0MjI3MzgsImlzcyI6IkFCR1E1UTVBMkE3Njc3NFRWRzZNNEtSRVdRRE5JMzJF" \
	"VjM3UjY1NEgzTFczQ1BGSzdKQUNaQUZGIiwic3ViIjoiVURYVTRSQ1NKTlpPSVFIWk5XWEhYT1JEUFJUR05KQU" \
	"hBSEZSR1pORUVKQ1BRVFQyTTdOTENORjQiLCJuYXRzIjp7InB1YiI6e30sInN1YiI6e30sInN1YnMiOi0xLCJk" \
	"YXRhIjotMSwicGF5bG9hZCI6LTEsInR5cGUiOiJ1c2VyIiwidmVyc2lvbiI6Mn19."                     \
	"myDzbRrMroryoEzb9parXDoUdQl4DbHtXDcW1hiz1Mopxu6K3J97q5QSOF5qPDLGnDMDoFIz0OVrO_h9V2ySDg"

static void go_key(struct ts_nkey *k)
{
	uint8_t raw[32];

	for (int i = 0; i < 32; i++)
		raw[i] = (uint8_t)(i * 7);
	assert_int_equal(ts_nkey_from_raw(k, TS_NKEY_ACCOUNT, raw), 0);
}

static void test_keys_match_go(void **state)
{
	char pub[TS_NKEY_PUBLIC_LEN + 1], seed[TS_NKEY_SEED_LEN + 1];
	struct ts_nkey k, back;
	uint8_t raw[32];

	(void)state;
	go_key(&k);
	ts_nkey_public(&k, pub);
	ts_nkey_seed(&k, seed);
	assert_string_equal(pub, GO_PUBLIC);
	assert_string_equal(seed, GO_SEED);
	assert_int_equal(ts_nkey_from_seed(&back, GO_SEED), 0);
	assert_int_equal(back.kind, TS_NKEY_ACCOUNT);
	assert_memory_equal(back.pub, k.pub, 32);
	assert_int_equal(ts_nkey_decode_public(GO_PUBLIC, TS_NKEY_ACCOUNT, raw), 0);
	assert_memory_equal(raw, k.pub, 32);
	assert_int_equal(ts_nkey_decode_public(USER, TS_NKEY_USER, raw), 0);
	/* the wrong kind, a changed character, a public key given as a seed */
	assert_int_equal(ts_nkey_decode_public(GO_PUBLIC, TS_NKEY_USER, raw), -EINVAL);
	strcpy(pub, GO_PUBLIC);
	pub[10] = pub[10] == 'A' ? 'B' : 'A';
	assert_int_equal(ts_nkey_decode_public(pub, -1, raw), -EINVAL);
	assert_int_equal(ts_nkey_from_seed(&back, GO_PUBLIC), -EINVAL);
	assert_int_equal(ts_nkey_from_seed(&back, "S"), -EINVAL);
}

static void test_go_jwt_verifies(void **state)
{
	char why[128] = "", *bad;
	json_t *c;

	(void)state;
	c = ts_jwt_decode(GO_JWT, why, sizeof(why));
	assert_non_null(c);
	assert_string_equal(json_string_value(json_object_get(c, "sub")), USER);
	assert_string_equal(json_string_value(json_object_get(c, "iss")), GO_PUBLIC);
	json_decref(c);
	bad = strdup(GO_JWT);
	bad[60] = bad[60] == 'a' ? 'b' : 'a'; /* a claim changed */
	assert_null(ts_jwt_decode(bad, why, sizeof(why)));
	assert_non_null(strstr(why, "JWT"));
	free(bad);
	assert_null(ts_jwt_decode("a.b", why, sizeof(why)));
	assert_null(ts_jwt_decode("..", why, sizeof(why)));
	assert_null(ts_jwt_decode("a.b.c.d", why, sizeof(why)));
}

static void test_own_jwt_round_trip(void **state)
{
	json_t *claims = json_pack("{s:s, s:s, s:{s:s, s:i}}", "sub", USER, "aud", "TS", "nats",
				   "type", "user", "version", 2);
	char why[128] = "", *jwt, *dot;
	struct ts_nkey k;
	json_t *back;

	(void)state;
	go_key(&k);
	jwt = ts_jwt_encode(claims, &k);
	assert_non_null(jwt);
	assert_null(strchr(jwt, '=')); /* unpadded base64url */
	back = ts_jwt_decode(jwt, why, sizeof(why));
	assert_non_null(back);
	assert_string_equal(json_string_value(json_object_get(back, "iss")), GO_PUBLIC);
	assert_int_equal(strlen(json_string_value(json_object_get(back, "jti"))), 52);
	assert_true(json_integer_value(json_object_get(back, "iat")) > 0);
	json_decref(back);
	dot = strrchr(jwt, '.');
	dot[5] = dot[5] == 'A' ? 'B' : 'A'; /* the signature changed */
	assert_null(ts_jwt_decode(jwt, why, sizeof(why)));
	free(jwt);
	json_decref(claims);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys_match_go),
		cmocka_unit_test(test_go_jwt_verifies),
		cmocka_unit_test(test_own_jwt_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
