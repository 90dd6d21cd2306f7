// SPDX-License-Identifier: Apache-2.0
/* Who may do what on trainscope's NATS: the rights each role gets, from the Kubernetes
 * identity a TokenReview vouched for. Pure: no I/O, so every rule is unit-tested. */
#ifndef TS_NATSAUTH_RIGHTS_H
#define TS_NATSAUTH_RIGHTS_H

#include <stddef.h>
#include <jansson.h>

#define TS_AUTHZ_MAX_CLI 8
#define TS_AUTHZ_MAX_PARTITIONS 1024 /* as the analyzer's --partitions */

/* What a TokenReview said of a token: the ServiceAccount and, for a token bound to a pod
 * (a projected volume), the pod and its node. */
struct ts_authz_who {
	char ns[64];
	char sa[254];
	char pod[254];
	char pod_uid[64];
	char node[254];
};

enum ts_authz_role { TS_ROLE_NONE, TS_ROLE_RELAY, TS_ROLE_AGENT, TS_ROLE_ANALYZER, TS_ROLE_CLI };

/* ServiceAccounts as "namespace:name". */
struct ts_authz_policy {
	const char *analyzer;
	const char *agent;
	const char *cli[TS_AUTHZ_MAX_CLI];
	int n_cli;
	const char *analyzer_durable; /* the consumer no other credential may touch */
	int analyzer_partitions;      /* > 0: and its partitions' <durable>-p<k> */
	const char *analyzer_bucket;  /* its snapshots' key-value bucket */
};

/* Parses "system:serviceaccount:<ns>:<name>" into who. Returns 0 or -EINVAL. */
int ts_authz_parse_username(struct ts_authz_who *who, const char *username);

/* The role and the "pub"/"sub" permissions (a NATS user claims' "nats" members) for who,
 * or TS_ROLE_NONE with why said: a relay in a system namespace, a pod-less token where a
 * pod is needed. *perms is new (caller decrefs) when a role is given. */
enum ts_authz_role ts_authz_rights(const struct ts_authz_policy *p, const struct ts_authz_who *who,
				   json_t **perms, char *why, size_t whylen);

const char *ts_authz_role_name(enum ts_authz_role r);

/* The inbox prefix a client of a pod uses, and that its rights allow: "_INBOX.<pod uid>". */
#define TS_AUTHZ_INBOX "_INBOX"

#endif
