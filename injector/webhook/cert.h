/* The webhook's serving certificate and key, read from their files and checked with
 * OpenSSL, and the files watched for rotation. Kubernetes updates a mounted Secret by
 * swapping a ..data symlink, so what is compared is the content of the files the paths
 * resolve to, not the paths. */
#ifndef TS_WEBHOOK_CERT_H
#define TS_WEBHOOK_CERT_H

#include <stddef.h>
#include <stdint.h>

struct ts_cert_pair {
	char *cert_pem, *key_pem; /* malloc'ed PEM text */
	int64_t not_after;        /* the leaf certificate's notAfter, Unix seconds */
};

/* A pair loads when every certificate of the chain parses and the key parses and
 * matches the first one. Returns 0 with *not_after set, or -1 with the reason (a phrase)
 * in why. */
int ts_cert_check(const char *cert_pem, const char *key_pem, int64_t *not_after, char *why,
		  size_t n);

struct ts_cert_files {
	const char *cert_path, *key_path;
	char *cert_seen, *key_seen; /* the content last tried; NULL before the first poll */
	int unreadable;            /* the files could not be read at the last poll */
};

enum ts_cert_change {
	TS_CERT_SAME, /* nothing new since the last poll */
	TS_CERT_NEW,  /* a new pair that loads: in *out, the caller's to free */
	TS_CERT_BAD,  /* new content that does not load (or unreadable files): why says so */
};

/* Rereads both files. A given content is tried once, so a bad pair is reported once per
 * change, however often it is polled. */
enum ts_cert_change ts_cert_poll(struct ts_cert_files *f, struct ts_cert_pair *out, char *why,
				 size_t n);
void ts_cert_files_free(struct ts_cert_files *f);
void ts_cert_pair_free(struct ts_cert_pair *p);

/* notAfter as "2006-01-02T15:04:05Z". */
void ts_cert_time(int64_t t, char *out, size_t n);

#endif
