// SPDX-License-Identifier: Apache-2.0
/* Secrets and names of the Kubernetes API, shared by the init containers that keep
 * generated material in a Secret (the webhook's and NATS's certificates, NATS's shared
 * keys): what the API server said, the pod's namespace, a Secret's data. */
#ifndef TS_KUBE_SECRET_H
#define TS_KUBE_SECRET_H

#include <jansson.h>
#include <stddef.h>

#define TS_KUBE_NS_FILE "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

/* What the API server answered: "HTTP 403: secrets \"x\" is forbidden: ...". */
void ts_kube_said(int code, json_t *answer, char *out, size_t n);

/* A DNS-1123 name of at most max characters: what may go into an API path. */
int ts_kube_name_ok(const char *s, size_t max);

/* The pod's namespace: env POD_NAMESPACE, else the service account's namespace file.
 * 0, -ENOENT (neither) or -EINVAL (not a Kubernetes name, left in out). */
int ts_kube_namespace(char *out, size_t n);

/* A key of a Secret's data, decoded (malloc'ed); NULL when absent or empty. */
char *ts_kube_secret_value(json_t *secret, const char *key);

/* key = value (base64'ed) into the Secret's data, other keys kept. 0 or -ENOMEM. */
int ts_kube_secret_set(json_t *secret, const char *key, const char *value);

/* A new Secret of type, labelled as trainscope's component. NULL when out of memory. */
json_t *ts_kube_secret_new(const char *ns, const char *name, const char *component,
			   const char *type);

#endif
