// SPDX-License-Identifier: Apache-2.0
/* Finds pods that asked for trainscope and were admitted without it (missed.h). */
#include "missed.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube.h"
#include "mutate.h"
#include "opts.h"

/* Pods a page by default: a page of metadata is about 1-4 KB a pod, kept well under
 * the webhook's memory limit. */
#define PAGE 250
#define NOT_DONE "status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed"

/* obj's string at key, or NULL (jansson's own answer for a missing key or a non-string). */
#define str_at(obj, key) json_string_value(json_object_get((obj), (key)))

/* Says what a request got in err: a negative errno for the caller. */
static int failed(const char *what, int code, char *err, size_t errlen)
{
	if (code == 200) {
		snprintf(err, errlen, "%s: the answer is not JSON", what);
		return -EBADMSG;
	}
	if (code < 0)
		snprintf(err, errlen, "%s: no answer from the API server (%s)", what,
			 strerror(-code));
	else
		snprintf(err, errlen, "%s: HTTP %d%s", what, code,
			 code == 403 ? " (the webhook's ServiceAccount may not; the chart "
				       "grants it with webhook.missedCheckSeconds)" : "");
	return code < 0 ? code : -EACCES;
}

/* The names of the namespaces labelled label=enabled, as a JSON object (name: true). */
static int opted_in(struct ts_kube *k, const char *label, json_t **out, char *err,
		    size_t errlen)
{
	char sel[300], path[400], *esc;
	const char *name;
	json_t *resp = NULL, *item;
	size_t i;
	int code;

	snprintf(sel, sizeof(sel), "%s=enabled", label);
	if (!(esc = curl_easy_escape(NULL, sel, 0)))
		return -ENOMEM;
	snprintf(path, sizeof(path), "/api/v1/namespaces?labelSelector=%s", esc);
	curl_free(esc);
	if ((code = ts_kube_list_meta(k, path, &resp)) != 200 || !resp) {
		json_decref(resp);
		return failed("list the namespaces that opt in", code, err, errlen);
	}
	*out = json_object();
	json_array_foreach(json_object_get(resp, "items"), i, item)
		if ((name = str_at(json_object_get(item, "metadata"), "name")))
			json_object_set_new(*out, name, json_true());
	json_decref(resp);
	return 0;
}

/* The whole pod of one that asks, checked as the webhook would: 1 found (said to
 * found()), 0 not, or a negative errno. Gone since the list: not found. */
static int check_pod(struct ts_kube *k, const char *ns, const char *name, bool ns_opt_in,
		     const struct ts_missed_cb *cb, char *err, size_t errlen)
{
	char path[600];
	json_t *pod = NULL;
	int code, rc = 0;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
	code = ts_kube_request(k, "GET", path, NULL, NULL, &pod);
	if (code == 200 && !pod)
		return failed("read a pod that asked for trainscope", code, err, errlen);
	if (code == 200 && ts_pod_would_inject(pod, ns_opt_in)) {
		const char *uid = str_at(json_object_get(pod, "metadata"), "uid");
		cb->found(ns, name, uid ? uid : "", cb->arg);
		rc = 1;
	} else if (code != 200 && code != 404) {
		rc = failed("read a pod that asked for trainscope", code, err, errlen);
	}
	json_decref(pod);
	return rc;
}

/* One page of the pods' metadata: each that asks checked. Returns how many were found
 * or a negative errno; *next gets the continue token (malloc'ed; NULL on the last page). */
static int scan_page(struct ts_kube *k, const struct ts_missed_opts *o, json_t *opted,
		     const char *cont, char **next, const struct ts_missed_cb *cb, char *err,
		     size_t errlen)
{
	char path[4200], *esc = cont ? curl_easy_escape(NULL, cont, 0) : NULL;
	json_t *resp = NULL, *item;
	int code, n = 0, rc = 0;
	size_t i;

	*next = NULL;
	snprintf(path, sizeof(path), "/api/v1/pods?limit=%u&fieldSelector=%s%s%s",
		 o->page ? o->page : PAGE, NOT_DONE, esc ? "&continue=" : "", esc ? esc : "");
	curl_free(esc);
	if ((code = ts_kube_list_meta(k, path, &resp)) != 200 || !resp) {
		json_decref(resp);
		return failed("list the pods", code, err, errlen);
	}
	json_array_foreach(json_object_get(resp, "items"), i, item) {
		json_t *md = json_object_get(item, "metadata");
		const char *ns = str_at(md, "namespace"), *name = str_at(md, "name");
		const char *uid = str_at(md, "uid");
		bool ns_in = ns && json_object_get(opted, ns);

		if (!ns || !name || ts_opt_list_has(o->exclude, ns) || !ts_pod_asks(item, ns_in))
			continue;
		if (uid && cb->known && cb->known(uid, cb->arg))
			rc = 1;
		else if ((rc = check_pod(k, ns, name, ns_in, cb, err, errlen)) < 0)
			break;
		n += rc;
	}
	const char *c = str_at(json_object_get(resp, "metadata"), "continue");
	if (rc >= 0 && c && *c && !(*next = strdup(c)))
		rc = -ENOMEM;
	json_decref(resp);
	if (cb->page_done)
		cb->page_done(cb->arg);
	return rc < 0 ? rc : n;
}

int ts_missed_scan(struct ts_kube *k, const struct ts_missed_opts *o,
		   const struct ts_missed_cb *cb, char *err, size_t errlen)
{
	const char *label = o->namespace_label ? o->namespace_label : "trainscope.dev/inject";
	json_t *opted = NULL;
	char *cont = NULL, *next;
	int rc, n = 0;

	if ((rc = opted_in(k, label, &opted, err, errlen)))
		return rc;
	do {
		rc = scan_page(k, o, opted, cont, &next, cb, err, errlen);
		free(cont);
		cont = next;
		n += rc > 0 ? rc : 0;
	} while (rc >= 0 && cont);
	free(cont);
	json_decref(opted);
	return rc < 0 ? rc : n;
}
