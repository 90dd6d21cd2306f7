// SPDX-License-Identifier: Apache-2.0
#include "cert.h"

#include <errno.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MAX_PEM (1 << 20)
#define RENEW_BEFORE_S (30 * 86400)
#define CA_NAME "trainscope-webhook-ca"

/* An encrypted key is refused, never prompted for on a terminal. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf, (void)size, (void)rwflag, (void)u;
	return 0;
}

static void explain(char *why, size_t n, const char *what)
{
	char ssl[160] = "";
	unsigned long e = ERR_peek_last_error();

	if (e)
		ERR_error_string_n(e, ssl, sizeof(ssl));
	snprintf(why, n, "%s%s%s%s", what, e ? " (" : "", ssl, e ? ")" : "");
	ERR_clear_error();
}

/* Every certificate of pem, in order; NULL when there is none or any of them does not
 * parse (a file cut in the middle of a later one included). */
static STACK_OF(X509) *read_all(const char *pem)
{
	STACK_OF(X509) *sk = sk_X509_new_null();
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x;
	unsigned long e;

	while (sk && b && (x = PEM_read_bio_X509(b, NULL, no_passphrase, NULL))) {
		if (!sk_X509_push(sk, x)) {
			X509_free(x);
			break;
		}
	}
	e = ERR_peek_last_error();
	BIO_free(b);
	if (sk && sk_X509_num(sk) > 0 && ERR_GET_LIB(e) == ERR_LIB_PEM &&
	    ERR_GET_REASON(e) == PEM_R_NO_START_LINE) {
		ERR_clear_error(); /* the end of the file */
		return sk;
	}
	sk_X509_pop_free(sk, X509_free);
	return NULL;
}

/* The first certificate of the chain; NULL when any certificate of it does not parse. */
static X509 *read_chain(const char *pem)
{
	STACK_OF(X509) *sk = read_all(pem);
	X509 *leaf = sk ? sk_X509_shift(sk) : NULL;

	sk_X509_pop_free(sk, X509_free);
	return leaf;
}

static int64_t not_after_of(X509 *x)
{
	struct tm tm = { 0 };

	if (ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) != 1)
		return 0;
	return (int64_t)timegm(&tm);
}

int ts_cert_check(const char *cert_pem, const char *key_pem, int64_t *not_after, char *why,
		  size_t n)
{
	BIO *kb = NULL;
	EVP_PKEY *key = NULL;
	X509 *leaf;
	int rc = -1;

	ERR_clear_error();
	if (!(leaf = read_chain(cert_pem))) {
		explain(why, n, "the certificate does not parse");
		return -1;
	}
	if (!(kb = BIO_new_mem_buf(key_pem, -1)) ||
	    !(key = PEM_read_bio_PrivateKey(kb, NULL, no_passphrase, NULL)))
		explain(why, n, "the key does not parse");
	else if (X509_check_private_key(leaf, key) != 1)
		explain(why, n, "the key does not match the certificate");
	else
		rc = 0;
	if (!rc)
		*not_after = not_after_of(leaf);
	EVP_PKEY_free(key);
	BIO_free(kb);
	X509_free(leaf);
	return rc;
}

/* A whole file (follows symlinks), NUL-terminated; NULL with errno. */
static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, got;
	int err = 0;

	if (!f)
		return NULL;
	if (!(buf = malloc(MAX_PEM + 1)))
		err = ENOMEM;
	while (buf && (got = fread(buf + len, 1, MAX_PEM - len, f)) > 0)
		len += got;
	if (buf && ferror(f))
		err = EIO;
	else if (buf && len == MAX_PEM)
		err = EFBIG;
	fclose(f);
	if (err) {
		free(buf);
		errno = err;
		return NULL;
	}
	buf[len] = 0;
	return buf;
}

static int same(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

static enum ts_cert_change unreadable(struct ts_cert_files *f, const char *path, char *why,
				      size_t n)
{
	snprintf(why, n, "cannot read %s: %s", path, strerror(errno));
	if (f->unreadable)
		return TS_CERT_SAME;
	f->unreadable = 1;
	return TS_CERT_BAD;
}

enum ts_cert_change ts_cert_poll(struct ts_cert_files *f, struct ts_cert_pair *out, char *why,
				 size_t n)
{
	char *cert = read_file(f->cert_path), *key = cert ? read_file(f->key_path) : NULL;
	enum ts_cert_change rc = TS_CERT_SAME;

	memset(out, 0, sizeof(*out));
	if (!cert || !key) {
		rc = unreadable(f, cert ? f->key_path : f->cert_path, why, n);
		free(cert);
		return rc;
	}
	f->unreadable = 0;
	if (same(cert, f->cert_seen) && same(key, f->key_seen)) {
		free(cert);
		free(key);
		return TS_CERT_SAME;
	}
	free(f->cert_seen);
	free(f->key_seen);
	f->cert_seen = cert;
	f->key_seen = key;
	if (ts_cert_check(cert, key, &out->not_after, why, n))
		return TS_CERT_BAD;
	out->cert_pem = strdup(cert);
	out->key_pem = strdup(key);
	if (!out->cert_pem || !out->key_pem) {
		ts_cert_pair_free(out);
		snprintf(why, n, "out of memory");
		free(f->cert_seen); /* tried again at the next poll */
		f->cert_seen = NULL;
		return TS_CERT_BAD;
	}
	return TS_CERT_NEW;
}

void ts_cert_pair_free(struct ts_cert_pair *p)
{
	free(p->cert_pem);
	free(p->key_pem);
	p->cert_pem = p->key_pem = NULL;
}

void ts_cert_files_free(struct ts_cert_files *f)
{
	free(f->cert_seen);
	free(f->key_seen);
	f->cert_seen = f->key_seen = NULL;
}

void ts_cert_time(int64_t t, char *out, size_t n)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || !strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, n, "%lld", (long long)t);
}

/* ---- the CA and serving pair of --bootstrap-certs ------------------------------------ */

/* The verified chain of leaf (its intermediates in chain) up to a CA of cas, for purpose
 * (X509_PURPOSE_SSL_SERVER or _CLIENT), now; its earliest notAfter in *not_after. */
static int verify(X509 *leaf, STACK_OF(X509) *chain, STACK_OF(X509) *cas, int purpose,
		  int64_t *not_after, char *why, size_t n)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	STACK_OF(X509) *got;
	int ok = store && ctx;

	for (int i = 0; ok && i < sk_X509_num(cas); i++)
		ok = X509_STORE_add_cert(store, sk_X509_value(cas, i)) == 1;
	ok = ok && X509_STORE_CTX_init(ctx, store, leaf, chain) == 1 &&
	     X509_STORE_CTX_set_purpose(ctx, purpose) == 1 &&
	     X509_verify_cert(ctx) == 1;
	if (ok && (got = X509_STORE_CTX_get0_chain(ctx))) {
		*not_after = INT64_MAX;
		for (int i = 0; i < sk_X509_num(got); i++) {
			int64_t t = not_after_of(sk_X509_value(got, i));
			*not_after = t < *not_after ? t : *not_after;
		}
	} else {
		snprintf(why, n, "the certificate does not verify against ca.crt%s (%s)",
			 purpose == X509_PURPOSE_SSL_CLIENT ? " as a TLS client's" : "",
			 ctx ? X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx))
			     : "out of memory");
		ERR_clear_error();
		ok = 0;
	}
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return ok ? 0 : -1;
}

/* A DNS subjectAltName of x that is name, as written: a wildcard is no host to check. */
static bool has_san(X509 *x, const char *name)
{
	GENERAL_NAMES *sans = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	bool found = false;

	for (int i = 0; !found && i < sk_GENERAL_NAME_num(sans); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
		const ASN1_IA5STRING *d = g->type == GEN_DNS ? g->d.dNSName : NULL;

		found = d && (size_t)d->length == strlen(name) &&
			!strncasecmp((const char *)d->data, name, (size_t)d->length);
	}
	GENERAL_NAMES_free(sans);
	return found;
}

/* Every name is a DNS subjectAltName of x (the CN is not looked at, as Go does not). */
static int names_all(X509 *x, const char *const *dns, size_t ndns, char *why, size_t n)
{
	for (size_t i = 0; i < ndns; i++) {
		if (dns[i][0] == '*' ? !has_san(x, dns[i])
				     : X509_check_host(x, dns[i], 0, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT,
						       NULL) != 1) {
			snprintf(why, n, "the certificate does not name %s", dns[i]);
			return -1;
		}
	}
	return 0;
}

static const char *missing(const struct ts_cert_set *s)
{
	return !s->ca_pem ? "ca.crt" : !s->cert_pem ? "tls.crt" : !s->key_pem ? "tls.key" : NULL;
}

int ts_cert_set_check(struct ts_cert_set *s, const struct ts_cert_use *use, int64_t valid_until,
		      char *why, size_t n)
{
	STACK_OF(X509) *cas = NULL, *chain = NULL;
	X509 *leaf = NULL;
	char when[32];
	int64_t t;
	int rc = -1;

	if (missing(s)) {
		snprintf(why, n, "there is no %s", missing(s));
		return -1;
	}
	if (ts_cert_check(s->cert_pem, s->key_pem, &t, why, n))
		return -1;
	ERR_clear_error();
	if (!(cas = read_all(s->ca_pem)))
		explain(why, n, "ca.crt does not parse");
	else if (!(chain = read_all(s->cert_pem)) || !(leaf = sk_X509_shift(chain)))
		explain(why, n, "the certificate does not parse");
	else if (!verify(leaf, chain, cas, X509_PURPOSE_SSL_SERVER, &s->not_after, why, n) &&
		 (!use->client ||
		  !verify(leaf, chain, cas, X509_PURPOSE_SSL_CLIENT, &s->not_after, why, n)) &&
		 !names_all(leaf, use->dns, use->ndns, why, n)) {
		ts_cert_time(s->not_after, when, sizeof(when));
		if (s->not_after < valid_until)
			snprintf(why, n, "the certificate or its CA expires at %s", when);
		else
			rc = 0;
	}
	X509_free(leaf);
	sk_X509_pop_free(chain, X509_free);
	sk_X509_pop_free(cas, X509_free);
	return rc;
}

static int add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *e;
	int ok;

	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	if (!(e = X509V3_EXT_nconf_nid(NULL, &ctx, nid, value)))
		return 0;
	ok = X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	return ok;
}

/* A version 3 certificate of key named cn, with a random serial, valid days from an
 * hour ago (clocks differ), issued by issuer (NULL: itself). */
static X509 *new_cert(EVP_PKEY *key, const char *cn, X509 *issuer, unsigned days)
{
	X509 *x = X509_new();
	BIGNUM *bn = BN_new();
	X509_NAME *name = x ? X509_get_subject_name(x) : NULL;
	int ok = x && bn && X509_set_version(x, X509_VERSION_3) &&
		 BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) &&
		 BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) &&
		 X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
		 X509_time_adj_ex(X509_getm_notAfter(x), (int)days, 0, NULL) &&
		 X509_set_pubkey(x, key) &&
		 X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn,
					    -1, -1, 0) &&
		 X509_set_issuer_name(x, X509_get_subject_name(issuer ? issuer : x));

	BN_free(bn);
	if (!ok) {
		X509_free(x);
		return NULL;
	}
	return x;
}

static X509 *new_ca(EVP_PKEY *key, unsigned days)
{
	X509 *x = new_cert(key, CA_NAME, NULL, days);

	if (x && add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE") &&
	    add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature") &&
	    add_ext(x, x, NID_subject_key_identifier, "hash") && X509_sign(x, key, EVP_sha256()))
		return x;
	X509_free(x);
	return NULL;
}

/* "DNS:a,DNS:b": names with a comma would split, and are refused. */
static int san_list(char *out, size_t n, const char *const *dns, size_t ndns)
{
	size_t len = 0;

	out[0] = 0;
	for (size_t i = 0; i < ndns; i++) {
		int k = snprintf(out + len, n - len, "%sDNS:%s", i ? "," : "", dns[i]);

		if (strchr(dns[i], ',') || k < 0 || (size_t)k >= n - len)
			return 0;
		len += (size_t)k;
	}
	return ndns > 0;
}

/* The certificate: serverAuth and clientAuth for the names, CN the first (when it fits in
 * a CN's 64 characters). clientAuth costs a server nothing and lets a cluster's routes use
 * the same pair both ways. */
static X509 *new_leaf(EVP_PKEY *key, X509 *ca, EVP_PKEY *ca_key, const char *const *dns,
		      size_t ndns, unsigned days)
{
	char sans[4096];
	X509 *x;

	if (!san_list(sans, sizeof(sans), dns, ndns))
		return NULL;
	x = new_cert(key, strlen(dns[0]) <= 64 ? dns[0] : "trainscope-webhook", ca, days);
	if (x && add_ext(x, ca, NID_basic_constraints, "critical,CA:FALSE") &&
	    add_ext(x, ca, NID_key_usage, "critical,digitalSignature") &&
	    add_ext(x, ca, NID_ext_key_usage, "serverAuth,clientAuth") &&
	    add_ext(x, ca, NID_subject_key_identifier, "hash") &&
	    add_ext(x, ca, NID_authority_key_identifier, "keyid:always") &&
	    add_ext(x, ca, NID_subject_alt_name, sans) && X509_sign(x, ca_key, EVP_sha256()))
		return x;
	X509_free(x);
	return NULL;
}

/* The text of a memory BIO, malloc'ed; NULL when empty or out of memory. */
static char *bio_text(BIO *b, int written)
{
	char *data, *out;
	long len = written ? BIO_get_mem_data(b, &data) : 0;

	if (len <= 0 || !(out = malloc((size_t)len + 1)))
		return NULL;
	memcpy(out, data, (size_t)len);
	out[len] = 0;
	return out;
}

static char *cert_pem(X509 *x)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *pem = b ? bio_text(b, PEM_write_bio_X509(b, x)) : NULL;

	BIO_free(b);
	return pem;
}

static char *key_pem(EVP_PKEY *k)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *pem = b ? bio_text(b, PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL))
		      : NULL;

	BIO_free(b);
	return pem;
}

int ts_cert_set_generate(struct ts_cert_set *s, const struct ts_cert_use *use, unsigned days,
			 char *why, size_t n)
{
	EVP_PKEY *ca_key = NULL, *key = NULL;
	X509 *ca = NULL, *leaf = NULL;
	struct ts_cert_set out = { 0 };
	int rc = -1;

	if (!days || days > 36500) {
		snprintf(why, n, "a validity of %u days (1 to 36500)", days);
		return -1;
	}
	ERR_clear_error();
	if ((ca_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")) &&
	    (key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")) && (ca = new_ca(ca_key, days)) &&
	    (leaf = new_leaf(key, ca, ca_key, use->dns, use->ndns, days))) {
		out.ca_pem = cert_pem(ca);
		out.cert_pem = cert_pem(leaf);
		out.key_pem = key_pem(key);
		out.not_after = not_after_of(leaf) < not_after_of(ca) ? not_after_of(leaf)
								       : not_after_of(ca);
	}
	if (!leaf)
		explain(why, n, "cannot make the certificates");
	else if (missing(&out))
		snprintf(why, n, "out of memory");
	else
		rc = 0;
	if (rc) {
		ts_cert_set_free(&out);
	} else {
		ts_cert_set_free(s);
		*s = out;
	}
	X509_free(leaf);
	X509_free(ca);
	EVP_PKEY_free(key);
	EVP_PKEY_free(ca_key);
	return rc;
}

int ts_cert_set_ensure(struct ts_cert_set *s, const struct ts_cert_use *use, unsigned days,
		       char *why, size_t n)
{
	int64_t margin = days < 60 ? (int64_t)days * 86400 / 2 : RENEW_BEFORE_S;
	char old[256];

	if (!ts_cert_set_check(s, use, (int64_t)time(NULL) + margin, old, sizeof(old)))
		return 0;
	if (ts_cert_set_generate(s, use, days, why, n))
		return -1;
	snprintf(why, n, "%s", old);
	return 1;
}

void ts_cert_set_free(struct ts_cert_set *s)
{
	free(s->ca_pem);
	free(s->cert_pem);
	free(s->key_pem);
	s->ca_pem = s->cert_pem = s->key_pem = NULL;
}
