// SPDX-License-Identifier: Apache-2.0
/* A token vouched for by the Kubernetes API server (TokenReview, authentication.k8s.io/v1). */
#ifndef TS_NATSAUTH_REVIEW_H
#define TS_NATSAUTH_REVIEW_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "rights.h"

struct ts_kube;

struct ts_review {
	struct ts_kube *kube;
	const char *audience; /* the token must have been made for it */
};

/* ts_callout_review over the API server: -EACCES when the token is not valid for the
 * audience, -EAGAIN when the API server could not be asked. */
int ts_review_token(void *ctx, const char *token, struct ts_authz_who *who, int64_t *exp,
		    char *why, size_t whylen);

/* Reads a TokenReview's status into who: 0, or -EACCES with why. */
int ts_review_parse(json_t *status, const char *audience, struct ts_authz_who *who, char *why,
		    size_t whylen);

#endif
