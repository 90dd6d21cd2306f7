// SPDX-License-Identifier: Apache-2.0
/* A small Kubernetes API client over libcurl: in-cluster service account or a
 * kubeconfig file, JSON in and out. */
#ifndef TS_KUBE_H
#define TS_KUBE_H

#include <jansson.h>
#include <stdint.h>

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

/* GET of a list at path, metadata only (PartialObjectMetadataList: each item's
 * metadata, its annotations with it, no spec): a cluster's pods at a fraction of their
 * size. Returns as ts_kube_request. */
int ts_kube_list_meta(struct ts_kube *k, const char *path, json_t **resp);

/* From realtime_ns on, a request under way, and any made after it, is aborted within
 * about a second (libcurl's progress callback): a stopping process gives the API server
 * only so long. Safe from any thread; 0 takes the deadline back. */
void ts_kube_stop_by(struct ts_kube *k, uint64_t realtime_ns);

/* An Event about one object, in its namespace (a cluster-scoped object's, such as a
 * Node's, goes to namespace ns with no namespace on the object). */
struct ts_kube_event {
	const char *ns;
	const char *api_version, *kind, *name; /* the object it is about */
	const char *reason, *message;
	const char *component, *host;          /* who says it */
	uint64_t now_ns;                       /* realtime */
	const char *type;                      /* NULL: "Warning"; or "Normal" */
	int cluster_scoped;                    /* the object has no namespace */
	/* the Event's own name, so that saying it again answers 409 (whoever said it
	 * first); NULL: one made from the object's name */
	const char *event_name;
	const char *uid; /* the object's, when known (kubectl describe matches on it) */
};

/* POSTs the Event. Returns the HTTP status (201) or a negative errno. */
int ts_kube_warn(struct ts_kube *k, const struct ts_kube_event *e);

#endif
