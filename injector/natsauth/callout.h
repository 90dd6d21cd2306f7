// SPDX-License-Identifier: Apache-2.0
/* NATS auth callout (nats-server 2.10+): reads the server's authorization request, has the
 * client's token vouched for, and answers with a signed user JWT carrying the rights of
 * the client's role, or with the reason it is refused. */
#ifndef TS_NATSAUTH_CALLOUT_H
#define TS_NATSAUTH_CALLOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nkeys.h"
#include "rights.h"

/* Vouches for a token: fills who and *exp (unix seconds, 0: none). Returns 0, -EACCES
 * (not valid: why says so) or another negative errno (could not ask: why says so). */
typedef int (*ts_callout_review)(void *ctx, const char *token, struct ts_authz_who *who,
				 int64_t *exp, char *why, size_t whylen);

struct ts_callout {
	struct ts_nkey issuer;        /* the account key nats-server trusts (auth_callout issuer) */
	const char *account;          /* the account granted users are placed in */
	struct ts_authz_policy policy;
	ts_callout_review review;
	void *review_ctx;
};

struct ts_callout_result {
	enum ts_authz_role role;      /* TS_ROLE_NONE: refused */
	struct ts_authz_who who;
	char why[256];                /* a refusal's reason */
	bool stale;                   /* the request expired: its server gave up waiting */
};

/* The signed answer (a JWT, malloc'ed) to one request as the server sent it; NULL when
 * the request cannot be read at all (then no answer can be addressed), or when it has
 * expired (res->stale: the server stops waiting at its exp, auth_timeout after it asked,
 * and refuses the client itself; a request that waited that long in a connect storm is
 * not worth a TokenReview). */
char *ts_callout_answer(const struct ts_callout *c, const void *req, size_t len,
			struct ts_callout_result *res);
/* The signed refusal, for why, of one request, its token never reviewed (a service too
 * busy to: the client retries); NULL as ts_callout_answer. */
char *ts_callout_refuse(const struct ts_callout *c, const void *req, size_t len,
			const char *why, struct ts_callout_result *res);

#endif
