#include "cert.h"

#include <errno.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PEM (1 << 20)

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

/* The first certificate of the chain; NULL when any certificate of it does not parse
 * (a file cut in the middle of a later one included). */
static X509 *read_chain(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *leaf = NULL, *x;
	unsigned long e;

	while (b && (x = PEM_read_bio_X509(b, NULL, no_passphrase, NULL))) {
		if (leaf)
			X509_free(x);
		else
			leaf = x;
	}
	e = ERR_peek_last_error();
	BIO_free(b);
	if (leaf && ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE) {
		ERR_clear_error(); /* the end of the file */
		return leaf;
	}
	X509_free(leaf);
	return NULL;
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
