// SPDX-License-Identifier: Apache-2.0
/* The webhook's serving certificate and key, read from their files and checked with
 * OpenSSL, and the files watched for rotation. Kubernetes updates a mounted Secret by
 * swapping a ..data symlink, so what is compared is the content of the files the paths
 * resolve to, not the paths. */
#ifndef TS_WEBHOOK_CERT_H
#define TS_WEBHOOK_CERT_H

#include <stddef.h>
#include <stdbool.h>
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

/* ---- the CA and serving pair of --bootstrap-certs ------------------------------------ */

/* What the webhook's Secret holds: ca.crt, tls.crt, tls.key (PEM, malloc'ed; NULL when
 * absent). */
struct ts_cert_set {
	char *ca_pem, *cert_pem, *key_pem;
	int64_t not_after; /* the earlier notAfter of the certificate and its CA */
};

/* What a certificate of --bootstrap-certs is for: the DNS names it holds (the first is
 * its CN; "*.x" names x's subdomains), and whether it is a TLS client's too. A NATS
 * cluster's routes want that: each server dials the others with the same pair. */
struct ts_cert_use {
	const char *const *dns;
	size_t ndns;
	bool client; /* clientAuth besides serverAuth */
};

/* A set keeps serving when the certificate and key load (ts_cert_check), the certificate
 * verifies against ca.crt for serverAuth (and clientAuth when use->client), names every
 * one of use->dns, and neither it nor its CA expires before valid_until (Unix seconds).
 * 0, or -1 with the reason in why. */
int ts_cert_set_check(struct ts_cert_set *s, const struct ts_cert_use *use, int64_t valid_until,
		      char *why, size_t n);

/* A new CA (EC P-256, self-signed, CA:TRUE) and a certificate it signs (EC P-256,
 * serverAuth and clientAuth, SANs use->dns, CN dns[0]), valid days from an hour ago; the
 * CA's key is dropped. Replaces what *s held. 0, or -1 with why. */
int ts_cert_set_generate(struct ts_cert_set *s, const struct ts_cert_use *use, unsigned days,
			 char *why, size_t n);

/* Keeps *s when it passes ts_cert_set_check for the next 30 days (half the validity when
 * days < 60), else generates a new set in its place. Returns 0 (kept), 1 (new; why says
 * what was wrong with the old one) or -1 (why). */
int ts_cert_set_ensure(struct ts_cert_set *s, const struct ts_cert_use *use, unsigned days,
		       char *why, size_t n);
void ts_cert_set_free(struct ts_cert_set *s);

#endif
