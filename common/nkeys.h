// SPDX-License-Identifier: Apache-2.0
/* NATS nkeys and JWTs (Ed25519 through OpenSSL): the keys in NATS's base32 form, and the
 * signed JWTs an auth callout reads and answers with. Only what an issuer needs. */
#ifndef TS_NKEYS_H
#define TS_NKEYS_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

/* Key kinds: the first character of a public key. */
enum ts_nkey_kind {
	TS_NKEY_ACCOUNT = 0,       /* 'A' */
	TS_NKEY_SERVER = 13 << 3,  /* 'N' */
	TS_NKEY_USER = 20 << 3,    /* 'U' */
};

#define TS_NKEY_PUBLIC_LEN 56 /* characters of an encoded public key */
#define TS_NKEY_SEED_LEN 58

struct ts_nkey {
	uint8_t kind;
	uint8_t seed[32];
	uint8_t pub[32];
};

/* The key of a raw 32-byte seed. Returns 0 or -EIO (OpenSSL refused). */
int ts_nkey_from_raw(struct ts_nkey *k, enum ts_nkey_kind kind, const uint8_t seed[32]);
/* Decodes an encoded seed ("SA..."). Returns 0, -EINVAL (not a seed: bad base32, checksum
 * or prefix) or -EIO. */
int ts_nkey_from_seed(struct ts_nkey *k, const char *seed);
/* Writes the encoded public key (out: TS_NKEY_PUBLIC_LEN + 1 bytes). */
void ts_nkey_public(const struct ts_nkey *k, char *out);
/* Writes the encoded seed (out: TS_NKEY_SEED_LEN + 1 bytes). */
void ts_nkey_seed(const struct ts_nkey *k, char *out);
/* Decodes an encoded public key of the given kind (-1: any) into 32 raw bytes: 0 or
 * -EINVAL. */
int ts_nkey_decode_public(const char *pub, int kind, uint8_t raw[32]);

/* A JWT of claims (iat, iss and jti are set here), signed by k: malloc'ed, or NULL. */
char *ts_jwt_encode(json_t *claims, const struct ts_nkey *k);
/* The claims of a JWT whose signature the public key of its "iss" claim verifies, or NULL
 * with why said. The caller decides whether it trusts that issuer. */
json_t *ts_jwt_decode(const char *jwt, char *why, size_t whylen);

/* The claims of a JWT another party verified (a Kubernetes token after its TokenReview),
 * not checked here; NULL when it is not a JWT. */
json_t *ts_jwt_claims_unverified(const char *jwt);

#endif
