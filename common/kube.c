// SPDX-License-Identifier: Apache-2.0
#include "kube.h"
#include "b64.h"
#include "buf.h"
#include "log.h"
#include "tsclock.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct ts_kube {
	CURL *curl;
	char server[512];
	char *token;
	char *ca_file, *cert_file, *key_file;  /* paths */
	char *ca_data, *cert_data, *key_data;  /* PEM, decoded from kubeconfig *-data */
	int insecure;
	_Atomic uint64_t stop_by_ns; /* realtime; 0: none (ts_kube_stop_by) */
};

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	struct ts_buf b = { 0 };
	char chunk[4096];
	size_t n;

	if (!f)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		ts_buf_printf(&b, "%.*s", (int)n, chunk);
	fclose(f);
	if (!b.data)
		return strdup("");
	return b.data;
}

/* kubeconfig: the current context's cluster and user, read from the YAML document. */
static yaml_node_t *get(yaml_document_t *d, yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(d, p->key);
		if (k && k->type == YAML_SCALAR_NODE && !strcmp((char *)k->data.scalar.value, key))
			return yaml_document_get_node(d, p->value);
	}
	return NULL;
}

static const char *scalar(yaml_document_t *d, yaml_node_t *map, const char *key)
{
	yaml_node_t *v = get(d, map, key);

	return v && v->type == YAML_SCALAR_NODE ? (const char *)v->data.scalar.value : NULL;
}

/* The entry of a list ("clusters", "users", "contexts") whose name is name. */
static yaml_node_t *named(yaml_document_t *d, yaml_node_t *root, const char *list, const char *name,
			  const char *inner)
{
	yaml_node_t *seq = get(d, root, list);

	if (!seq || seq->type != YAML_SEQUENCE_NODE || !name)
		return NULL;
	for (yaml_node_item_t *i = seq->data.sequence.items.start; i < seq->data.sequence.items.top; i++) {
		yaml_node_t *e = yaml_document_get_node(d, *i);
		const char *n = scalar(d, e, "name");
		if (n && !strcmp(n, name))
			return get(d, e, inner);
	}
	return NULL;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int load_kubeconfig(struct ts_kube *k, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	yaml_parser_t p;
	yaml_document_t d;
	int rc = -EINVAL;

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	yaml_parser_initialize(&p);
	yaml_parser_set_input_file(&p, f);
	if (!yaml_parser_load(&p, &d)) {
		snprintf(err, errlen, "%s:%zu: YAML: %s", path, p.problem_mark.line + 1,
			 p.problem ? p.problem : "error");
		goto out_parser;
	}
	yaml_node_t *root = yaml_document_get_root_node(&d);
	const char *cur = scalar(&d, root, "current-context");
	yaml_node_t *ctx = named(&d, root, "contexts", cur, "context");
	yaml_node_t *cl = named(&d, root, "clusters", scalar(&d, ctx, "cluster"), "cluster");
	yaml_node_t *us = named(&d, root, "users", scalar(&d, ctx, "user"), "user");
	const char *server = scalar(&d, cl, "server");
	if (!ctx || !cl || !server) {
		snprintf(err, errlen, "%s: no cluster server for current-context '%s'", path,
			 cur ? cur : "(none)");
		goto out_doc;
	}
	snprintf(k->server, sizeof(k->server), "%s", server);
	k->ca_file = dup_or_null(scalar(&d, cl, "certificate-authority"));
	if (scalar(&d, cl, "certificate-authority-data"))
		k->ca_data = ts_b64_decode(scalar(&d, cl, "certificate-authority-data"));
	k->insecure = scalar(&d, cl, "insecure-skip-tls-verify") &&
		      !strcmp(scalar(&d, cl, "insecure-skip-tls-verify"), "true");
	k->token = dup_or_null(scalar(&d, us, "token"));
	if (!k->token && scalar(&d, us, "tokenFile"))
		k->token = slurp(scalar(&d, us, "tokenFile"));
	k->cert_file = dup_or_null(scalar(&d, us, "client-certificate"));
	k->key_file = dup_or_null(scalar(&d, us, "client-key"));
	if (scalar(&d, us, "client-certificate-data"))
		k->cert_data = ts_b64_decode(scalar(&d, us, "client-certificate-data"));
	if (scalar(&d, us, "client-key-data"))
		k->key_data = ts_b64_decode(scalar(&d, us, "client-key-data"));
	rc = 0;
out_doc:
	yaml_document_delete(&d);
out_parser:
	yaml_parser_delete(&p);
	fclose(f);
	return rc;
}

static int load_in_cluster(struct ts_kube *k, char *err, size_t errlen)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");

	if (!host || !port) {
		snprintf(err, errlen, "not in a cluster (KUBERNETES_SERVICE_HOST unset): pass "
				      "--kubeconfig");
		return -ENOENT;
	}
	snprintf(k->server, sizeof(k->server), strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s",
		 host, port);
	k->token = slurp(SA_DIR "/token");
	k->ca_file = strdup(SA_DIR "/ca.crt");
	if (!k->token) {
		snprintf(err, errlen, "cannot read the service account token in %s", SA_DIR);
		return -ENOENT;
	}
	return 0;
}

int ts_kube_open(struct ts_kube **out, const char *kubeconfig, char *err, size_t errlen)
{
	struct ts_kube *k = calloc(1, sizeof(*k));
	int rc;

	if (!k)
		return -ENOMEM;
	rc = kubeconfig ? load_kubeconfig(k, kubeconfig, err, errlen) : load_in_cluster(k, err, errlen);
	if (!rc && !(k->curl = curl_easy_init()))
		rc = -ENOMEM;
	if (rc) {
		ts_kube_close(k);
		return rc;
	}
	if (k->token) /* token files end with a newline */
		k->token[strcspn(k->token, "\r\n")] = 0;
	*out = k;
	return 0;
}

void ts_kube_close(struct ts_kube *k)
{
	if (!k)
		return;
	if (k->curl)
		curl_easy_cleanup(k->curl);
	free(k->token), free(k->ca_file), free(k->cert_file), free(k->key_file);
	free(k->ca_data), free(k->cert_data), free(k->key_data);
	free(k);
}

static size_t collect(char *p, size_t sz, size_t n, void *ud)
{
	ts_buf_append(ud, p, sz * n);
	return ((struct ts_buf *)ud)->oom ? 0 : sz * n;
}

static void blob(CURL *c, CURLoption opt, const char *pem)
{
	struct curl_blob b = { (void *)pem, strlen(pem), CURL_BLOB_COPY };

	curl_easy_setopt(c, opt, &b);
}

static void tls_options(struct ts_kube *k)
{
	CURL *c = k->curl;

	if (k->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, k->ca_file);
	if (k->ca_data)
		blob(c, CURLOPT_CAINFO_BLOB, k->ca_data);
	if (k->cert_file)
		curl_easy_setopt(c, CURLOPT_SSLCERT, k->cert_file);
	if (k->cert_data)
		blob(c, CURLOPT_SSLCERT_BLOB, k->cert_data);
	if (k->key_file)
		curl_easy_setopt(c, CURLOPT_SSLKEY, k->key_file);
	if (k->key_data)
		blob(c, CURLOPT_SSLKEY_BLOB, k->key_data);
	if (k->insecure) {
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
}

void ts_kube_stop_by(struct ts_kube *k, uint64_t realtime_ns)
{
	if (k)
		atomic_store(&k->stop_by_ns, realtime_ns);
}

/* libcurl's progress callback (called about once a second while a request waits):
 * non-zero aborts the request once the stop deadline has passed. */
static int past_stop(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	uint64_t by = atomic_load(&((struct ts_kube *)arg)->stop_by_ns);

	(void)dt, (void)dn, (void)ut, (void)un;
	return by && ts_real_ns() > by;
}

/* ts_kube_request with the Accept header given; quiet: failures are the caller's to say
 * (one that asks again every period says them once). */
static int request(struct ts_kube *k, const char *method, const char *path, const char *accept,
		   bool quiet, json_t *body, const char *content_type, json_t **resp)
{
	struct curl_slist *h = NULL;
	struct ts_buf in = { 0 };
	char url[1024], auth[4200], ctype[128];
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	long code = 0;
	CURLcode cc;

	if (resp)
		*resp = NULL;
	if ((size_t)snprintf(url, sizeof(url), "%s%s", k->server, path) >= sizeof(url)) {
		if (!quiet)
			ts_warn("kube: %s %s: the URL is too long", method, path);
		free(text);
		return -ENAMETOOLONG;
	}
	curl_easy_reset(k->curl);
	/* libcurl may not touch SIGPIPE: it saves and restores the handler around a
	 * request, racing a program's own setting on another thread */
	curl_easy_setopt(k->curl, CURLOPT_NOSIGNAL, 1L);
	tls_options(k);
	curl_easy_setopt(k->curl, CURLOPT_URL, url);
	curl_easy_setopt(k->curl, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(k->curl, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(k->curl, CURLOPT_XFERINFOFUNCTION, past_stop);
	curl_easy_setopt(k->curl, CURLOPT_XFERINFODATA, k);
	curl_easy_setopt(k->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(k->curl, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(k->curl, CURLOPT_WRITEDATA, &in);
	snprintf(ctype, sizeof(ctype), "Accept: %s", accept);
	h = curl_slist_append(h, ctype);
	if (k->token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", k->token);
		h = curl_slist_append(h, auth);
	}
	if (text) {
		snprintf(ctype, sizeof(ctype), "Content-Type: %s",
			 content_type ? content_type : "application/json");
		h = curl_slist_append(h, ctype);
		curl_easy_setopt(k->curl, CURLOPT_POSTFIELDS, text);
	}
	curl_easy_setopt(k->curl, CURLOPT_HTTPHEADER, h);
	cc = curl_easy_perform(k->curl);
	curl_easy_getinfo(k->curl, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(h);
	free(text);
	if (cc != CURLE_OK) {
		if (!quiet)
			ts_warn("kube: %s %s: %s", method, path, curl_easy_strerror(cc));
		ts_buf_free(&in);
		return -EIO;
	}
	if (resp && in.data)
		*resp = json_loadb(in.data, in.len, 0, NULL);
	if (code >= 400 && code != 404 && code != 409 && !quiet)
		ts_warn("kube: %s %s: HTTP %ld %.300s", method, path, code, in.data ? in.data : "");
	ts_buf_free(&in);
	return (int)code;
}

int ts_kube_request(struct ts_kube *k, const char *method, const char *path, json_t *body,
		    const char *content_type, json_t **resp)
{
	return request(k, method, path, "application/json", false, body, content_type, resp);
}

int ts_kube_list_meta(struct ts_kube *k, const char *path, json_t **resp)
{
	return request(k, "GET", path,
		       "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
		       "application/json", true, NULL, NULL, resp);
}

int ts_kube_warn(struct ts_kube *k, const struct ts_kube_event *e)
{
	char stamp[32], path[512];
	json_t *ev;
	int code;

	ts_rfc3339(e->now_ns, stamp);
	ev = json_pack("{s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s}, s:s, s:s, s:s, s:{s:s, s:s}, s:s, s:s,"
		       " s:i, s:s, s:s}",
		       "metadata", e->event_name ? "name" : "generateName",
		       e->event_name ? e->event_name : e->name, "namespace", e->ns, "involvedObject",
		       "apiVersion", e->api_version, "kind", e->kind, "namespace",
		       e->cluster_scoped ? "" : e->ns, "name", e->name, "reason", e->reason,
		       "message", e->message, "type", e->type ? e->type : "Warning",
		       "source", "component", e->component, "host", e->host, "firstTimestamp", stamp,
		       "lastTimestamp", stamp, "count", 1, "reportingComponent", e->component,
		       "reportingInstance", e->host);
	if (!ev)
		return -ENOMEM;
	if (e->uid) /* kubectl describe finds an object's Events by its uid too */
		json_object_set_new(json_object_get(ev, "involvedObject"), "uid",
				    json_string(e->uid));
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", e->ns);
	code = ts_kube_request(k, "POST", path, ev, NULL, NULL);
	json_decref(ev);
	return code;
}
