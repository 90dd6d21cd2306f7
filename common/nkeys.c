// SPDX-License-Identifier: Apache-2.0
#include "nkeys.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <openssl/evp.h>

#define PREFIX_SEED (18 << 3) /* 'S' */

static const char b32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/* CRC-16/XMODEM, appended little-endian: what nkeys checks. */
static uint16_t crc16(const uint8_t *p, size_t n)
{
	uint16_t crc = 0;

	while (n--) {
		crc ^= (uint16_t)(*p++ << 8);
		for (int i = 0; i < 8; i++)
			crc = crc & 0x8000 ? (uint16_t)(crc << 1 ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

static void b32_encode(const uint8_t *p, size_t n, char *out)
{
	uint32_t acc = 0;
	int bits = 0;

	for (size_t i = 0; i < n; i++) {
		acc = acc << 8 | p[i];
		for (bits += 8; bits >= 5; bits -= 5)
			*out++ = b32[acc >> (bits - 5) & 31];
	}
	if (bits)
		*out++ = b32[acc << (5 - bits) & 31];
	*out = 0;
}

/* Returns the bytes decoded, or -1 on a character outside the alphabet or overflow. */
static int b32_decode(const char *s, uint8_t *out, size_t cap)
{
	uint32_t acc = 0;
	int bits = 0;
	size_t n = 0;

	for (; *s; s++) {
		const char *c = strchr(b32, *s);
		if (!c)
			return -1;
		acc = acc << 5 | (uint32_t)(c - b32);
		if ((bits += 5) >= 8) {
			bits -= 8;
			if (n == cap)
				return -1;
			out[n++] = (uint8_t)(acc >> bits);
		}
	}
	return (int)n;
}

static void encode_with_crc(uint8_t *raw, size_t n, char *out)
{
	uint16_t c = crc16(raw, n);

	raw[n] = (uint8_t)c;
	raw[n + 1] = (uint8_t)(c >> 8);
	b32_encode(raw, n + 2, out);
}

/* The raw bytes of an encoded key whose checksum holds; -EINVAL otherwise. */
static int decode_with_crc(const char *s, uint8_t *raw, size_t want)
{
	int n = b32_decode(s, raw, want + 2);

	if (n != (int)want + 2)
		return -EINVAL;
	if (crc16(raw, want) != (uint16_t)(raw[want] | raw[want + 1] << 8))
		return -EINVAL;
	return 0;
}

int ts_nkey_from_raw(struct ts_nkey *k, enum ts_nkey_kind kind, const uint8_t seed[32])
{
	EVP_PKEY *p = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
	size_t len = sizeof(k->pub);
	int ok = p && EVP_PKEY_get_raw_public_key(p, k->pub, &len) == 1 && len == 32;

	EVP_PKEY_free(p);
	k->kind = (uint8_t)kind;
	memcpy(k->seed, seed, 32);
	return ok ? 0 : -EIO;
}

int ts_nkey_from_seed(struct ts_nkey *k, const char *seed)
{
	uint8_t raw[36];

	if (!seed || strlen(seed) != TS_NKEY_SEED_LEN || decode_with_crc(seed, raw, 34))
		return -EINVAL;
	if ((raw[0] & 0xf8) != PREFIX_SEED)
		return -EINVAL;
	return ts_nkey_from_raw(k, (enum ts_nkey_kind)((raw[0] & 7) << 5 | raw[1] >> 3), raw + 2);
}

void ts_nkey_public(const struct ts_nkey *k, char *out)
{
	uint8_t raw[35];

	raw[0] = k->kind;
	memcpy(raw + 1, k->pub, 32);
	encode_with_crc(raw, 33, out);
}

void ts_nkey_seed(const struct ts_nkey *k, char *out)
{
	uint8_t raw[36];

	raw[0] = (uint8_t)(PREFIX_SEED | k->kind >> 5);
	raw[1] = (uint8_t)((k->kind & 31) << 3);
	memcpy(raw + 2, k->seed, 32);
	encode_with_crc(raw, 34, out);
}

int ts_nkey_decode_public(const char *pub, int kind, uint8_t out[32])
{
	uint8_t raw[35];

	if (!pub || strlen(pub) != TS_NKEY_PUBLIC_LEN || decode_with_crc(pub, raw, 33))
		return -EINVAL;
	if (kind >= 0 && raw[0] != (uint8_t)kind)
		return -EINVAL;
	memcpy(out, raw + 1, 32);
	return 0;
}

/* base64url without padding (RFC 7515): malloc'ed. */
static char *b64url(const void *p, size_t n)
{
	char *out = malloc(4 * ((n + 2) / 3) + 1);
	int len;

	if (!out)
		return NULL;
	len = EVP_EncodeBlock((unsigned char *)out, p, (int)n);
	while (len > 0 && out[len - 1] == '=')
		len--;
	out[len] = 0;
	for (char *c = out; *c; c++)
		*c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
	return out;
}

/* Decodes n characters of base64url into a malloc'ed buffer (NUL-terminated); -1 length
 * when they are not base64url. */
static uint8_t *b64url_decode(const char *s, size_t n, int *len)
{
	size_t padded = (n + 3) / 4 * 4;
	char *t = malloc(padded + 1);
	uint8_t *out = malloc(padded / 4 * 3 + 1);
	int k = -1;

	if (t && out) {
		for (size_t i = 0; i < padded; i++)
			t[i] = i >= n ? '=' : s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
		k = n % 4 == 1 || memchr(s, '=', n) ? -1 : EVP_DecodeBlock(out, (unsigned char *)t,
									 (int)padded);
		if (k >= 0)
			k -= (int)(padded - n); /* the padding's zero bytes */
	}
	free(t);
	if (k < 0) {
		free(out);
		return NULL;
	}
	out[k] = 0;
	*len = k;
	return out;
}

static int sign(const struct ts_nkey *k, const void *data, size_t n, uint8_t sig[64])
{
	EVP_PKEY *p = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, k->seed, 32);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t len = 64;
	int ok = p && ctx && EVP_DigestSignInit(ctx, NULL, NULL, NULL, p) == 1 &&
		 EVP_DigestSign(ctx, sig, &len, data, n) == 1 && len == 64;

	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(p);
	return ok ? 0 : -EIO;
}

static bool verify(const uint8_t pub[32], const void *data, size_t n, const uint8_t *sig,
		   size_t siglen)
{
	EVP_PKEY *p = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, 32);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	bool ok = p && ctx && siglen == 64 && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, p) == 1 &&
		  EVP_DigestVerify(ctx, sig, siglen, data, n) == 1;

	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(p);
	return ok;
}

/* The claims' id as nats-io/jwt makes it: base32 of the SHA-512/256 of the claims. */
static int set_jti(json_t *claims)
{
	char *j = json_dumps(claims, JSON_COMPACT);
	uint8_t h[32];
	char id[64];
	unsigned hl = 0;
	int ok = j && EVP_Digest(j, strlen(j), h, &hl, EVP_sha512_256(), NULL) == 1 && hl == 32;

	free(j);
	if (!ok)
		return -EIO;
	b32_encode(h, 32, id);
	return json_object_set_new(claims, "jti", json_string(id));
}

char *ts_jwt_encode(json_t *claims, const struct ts_nkey *k)
{
	static const char hdr[] = "{\"typ\":\"JWT\",\"alg\":\"ed25519-nkey\"}";
	char iss[TS_NKEY_PUBLIC_LEN + 1], *h = NULL, *c = NULL, *body = NULL, *s = NULL, *out = NULL;
	uint8_t sig[64];
	size_t n;

	ts_nkey_public(k, iss);
	json_object_del(claims, "jti");
	if (json_object_set_new(claims, "iat", json_integer((json_int_t)time(NULL))) ||
	    json_object_set_new(claims, "iss", json_string(iss)) || set_jti(claims))
		return NULL;
	body = json_dumps(claims, JSON_COMPACT);
	h = b64url(hdr, strlen(hdr));
	c = body ? b64url(body, strlen(body)) : NULL;
	if (h && c) {
		n = strlen(h) + 1 + strlen(c);
		out = malloc(n + 1 + 88);
		if (out) {
			snprintf(out, n + 1, "%s.%s", h, c);
			if (sign(k, out, n, sig) || !(s = b64url(sig, 64))) {
				free(out);
				out = NULL;
			} else {
				snprintf(out + n, 88 + 1, ".%s", s);
			}
		}
	}
	free(h), free(c), free(body), free(s);
	return out;
}

json_t *ts_jwt_decode(const char *jwt, char *why, size_t whylen)
{
	const char *dot1 = strchr(jwt, '.'), *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
	uint8_t *body = NULL, *sig = NULL, pub[32];
	json_t *claims = NULL;
	const char *iss;
	int blen = 0, slen = 0;

	if (!dot2 || strchr(dot2 + 1, '.')) {
		snprintf(why, whylen, "not a JWT (three parts)");
		return NULL;
	}
	body = b64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), &blen);
	sig = b64url_decode(dot2 + 1, strlen(dot2 + 1), &slen);
	if (!body || !sig || !(claims = json_loadb((char *)body, (size_t)blen, 0, NULL))) {
		snprintf(why, whylen, "not a JWT (base64url JSON claims)");
	} else if (!(iss = json_string_value(json_object_get(claims, "iss"))) ||
		   ts_nkey_decode_public(iss, -1, pub)) {
		snprintf(why, whylen, "the JWT's issuer is not a public nkey");
		json_decref(claims), claims = NULL;
	} else if (!verify(pub, jwt, (size_t)(dot2 - jwt), sig, (size_t)slen)) {
		snprintf(why, whylen, "the JWT's signature does not verify with its issuer %s", iss);
		json_decref(claims), claims = NULL;
	}
	free(body), free(sig);
	return claims;
}

json_t *ts_jwt_claims_unverified(const char *jwt)
{
	const char *dot1 = strchr(jwt, '.'), *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
	uint8_t *body;
	json_t *claims;
	int len = 0;

	if (!dot2 || !(body = b64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), &len)))
		return NULL;
	claims = json_loadb((char *)body, (size_t)len, 0, NULL);
	free(body);
	return claims;
}
