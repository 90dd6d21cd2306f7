/* A small Kubernetes API client over libcurl: in-cluster service account or a
 * kubeconfig file, JSON in and out. */
#ifndef TS_KUBE_H
#define TS_KUBE_H

#include <jansson.h>

struct ts_kube;

/* path NULL: in-cluster (KUBERNETES_SERVICE_HOST and the service account files).
 * Otherwise a kubeconfig: its current context's server, CA and credentials.
 * Returns 0 or a negative errno with err saying what is wrong. */
int ts_kube_open(struct ts_kube **out, const char *kubeconfig, char *err, size_t errlen);
void ts_kube_close(struct ts_kube *k);

/* method GET/POST/PUT/PATCH/DELETE; body may be NULL; content_type for PATCH.
 * Returns the HTTP status (or a negative errno when no answer came); *resp gets the
 * parsed JSON answer when there is one (caller decrefs). */
int ts_kube_request(struct ts_kube *k, const char *method, const char *path, json_t *body,
		    const char *content_type, json_t **resp);

#endif
