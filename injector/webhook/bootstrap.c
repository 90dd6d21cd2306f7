// SPDX-License-Identifier: Apache-2.0
#include "bootstrap.h"
#include "b64.h"
#include "cert.h"
#include "kube.h"
#include "kube_secret.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MWC_API "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
#define ATTEMPTS 5 /* reads and writes, when a write meets a 409 conflict */
#define CONFLICT 1
#define NSVC 4  /* the service's names */
#define NDNS (NSVC + TS_BOOTSTRAP_MAX_PEER_NAMES)

struct boot {
	const struct ts_bootstrap_opts *o;
	struct ts_kube *kube;
	char ns[64];
	char names[NDNS][320];
	const char *dns[NDNS];
	struct ts_cert_use use;
	char secrets[320], secret_path[640], secret_what[320], mwc_path[640];
};

__attribute__((format(printf, 1, 2))) static int fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "trainscope-webhook: --bootstrap-certs: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

static int pod_namespace(char *out, size_t n)
{
	int err = ts_kube_namespace(out, n);

	if (err == -ENOENT)
		return fail("no namespace: set POD_NAMESPACE, or run in a pod (%s: %s)",
			    TS_KUBE_NS_FILE, strerror(errno));
	if (err)
		return fail("the namespace '%s' is not a Kubernetes name", out);
	return 0;
}

/* --peer-names: more names, and a client's certificate too (routes dial both ways). */
static int peer_names(struct boot *b)
{
	const char *p = b->o->peer_names;

	while (p && *p) {
		size_t len = strcspn(p, ",");
		char *name = b->names[b->use.ndns];

		if (b->use.ndns == NDNS || !len || len >= sizeof(b->names[0]))
			return fail("--peer-names '%s': at most %d names, none empty",
				    b->o->peer_names, TS_BOOTSTRAP_MAX_PEER_NAMES);
		memcpy(name, p, len);
		name[len] = 0;
		if (!ts_kube_name_ok(name[0] == '*' && name[1] == '.' ? name + 2 : name, 253))
			return fail("--peer-names: '%s' is not a DNS name (a wildcard only as "
				    "'*.' before one)", name);
		b->use.ndns++;
		b->use.client = true;
		p += len + (p[len] == ',');
	}
	return 0;
}

static int names(struct boot *b)
{
	const struct ts_bootstrap_opts *o = b->o;
	const char *svc = o->service, *ns = b->ns;

	if (!ts_kube_name_ok(o->secret, 253) || (o->webhook_config && !ts_kube_name_ok(o->webhook_config, 253)) ||
	    !ts_kube_name_ok(svc, 63) || strchr(svc, '.'))
		return fail("--secret '%s', --service '%s', --webhook-config '%s': not Kubernetes "
			    "names (a service has no dots)", o->secret, svc,
			    o->webhook_config ? o->webhook_config : "");
	/* the name the API server calls first: it is the certificate's CN */
	snprintf(b->names[0], sizeof(b->names[0]), "%s.%s.svc", svc, ns);
	snprintf(b->names[1], sizeof(b->names[1]), "%s", svc);
	snprintf(b->names[2], sizeof(b->names[2]), "%s.%s", svc, ns);
	snprintf(b->names[3], sizeof(b->names[3]), "%s.%s.svc.cluster.local", svc, ns);
	b->use = (struct ts_cert_use){ b->dns, NSVC, false };
	if (peer_names(b))
		return -1;
	for (int i = 0; i < NDNS; i++)
		b->dns[i] = b->names[i];
	snprintf(b->secrets, sizeof(b->secrets), "/api/v1/namespaces/%s/secrets", ns);
	snprintf(b->secret_path, sizeof(b->secret_path), "%s/%s", b->secrets, o->secret);
	snprintf(b->secret_what, sizeof(b->secret_what), "Secret %s/%s", ns, o->secret);
	snprintf(b->mwc_path, sizeof(b->mwc_path), MWC_API "/%s",
		 o->webhook_config ? o->webhook_config : "");
	return 0;
}

/* ---- the Secret ------------------------------------------------------------------------ */

/* The set into the Secret's data (other keys kept; its type too, which cannot change). */
static int put_data(json_t *secret, const struct ts_cert_set *s)
{
	return ts_kube_secret_set(secret, "ca.crt", s->ca_pem) ||
	       ts_kube_secret_set(secret, "tls.crt", s->cert_pem) ||
	       ts_kube_secret_set(secret, "tls.key", s->key_pem);
}

static json_t *new_secret(const struct boot *b)
{
	return ts_kube_secret_new(b->ns, b->o->secret, "webhook", "kubernetes.io/tls");
}

/* Writes the new set: PUT over the Secret read (obj), or POST when there was none. done
 * says what became of the Secret ("replaced by"). */
static int write_secret(struct boot *b, json_t *obj, const struct ts_cert_set *s,
			const char *done, const char *why)
{
	int create = obj == NULL, code, rc = 0;
	json_t *body = create ? new_secret(b) : json_incref(obj), *answer = NULL;
	char api[768], when[32];

	if (!body || put_data(body, s)) {
		rc = fail("%s: out of memory", b->secret_what);
	} else {
		code = ts_kube_request(b->kube, create ? "POST" : "PUT",
				       create ? b->secrets : b->secret_path, body, NULL, &answer);
		ts_kube_said(code, answer, api, sizeof(api));
		ts_cert_time(s->not_after, when, sizeof(when));
		if (code == 409)
			rc = CONFLICT;
		else if (code != 200 && code != 201)
			rc = fail("cannot %s %s: %s", create ? "create" : "update", b->secret_what, api);
		else
			printf("trainscope-webhook: %s: %s a new CA and certificate for %s, valid "
			       "until %s (%s)\n", b->secret_what, done, b->names[0], when, why);
	}
	json_decref(body);
	json_decref(answer);
	return rc;
}

/* One read of the Secret, its set kept or written anew: 0, CONFLICT or -1. *out gets the
 * set on 0 (the caller frees it). */
static int secret_round(struct boot *b, struct ts_cert_set *out)
{
	struct ts_cert_set s = { 0 };
	json_t *obj = NULL;
	char why[256], api[768], when[32];
	int code = ts_kube_request(b->kube, "GET", b->secret_path, NULL, NULL, &obj), rc, had;

	if (code != 200 && code != 404) {
		ts_kube_said(code, obj, api, sizeof(api));
		json_decref(obj);
		return fail("cannot read %s: %s", b->secret_what, api);
	}
	if (code == 404) {
		json_decref(obj);
		obj = NULL;
	}
	s.ca_pem = ts_kube_secret_value(obj, "ca.crt");
	s.cert_pem = ts_kube_secret_value(obj, "tls.crt");
	s.key_pem = ts_kube_secret_value(obj, "tls.key");
	had = s.ca_pem || s.cert_pem || s.key_pem;
	rc = ts_cert_set_ensure(&s, &b->use, b->o->validity_days, why, sizeof(why));
	if (rc < 0) {
		rc = fail("%s: %s", b->secret_what, why);
	} else if (rc == 0) {
		ts_cert_time(s.not_after, when, sizeof(when));
		printf("trainscope-webhook: %s: kept its CA and certificate, valid until %s\n",
		       b->secret_what, when);
	} else {
		rc = write_secret(b, obj, &s, !obj ? "created with" : had ? "replaced by" : "filled with",
				  obj ? why : "there was none");
	}
	if (!rc) {
		*out = s;
		s = (struct ts_cert_set){ 0 };
	}
	ts_cert_set_free(&s);
	json_decref(obj);
	return rc;
}

/* ---- the pair as files, for the webhook container beside this init container ---------- */

/* DIR/name written whole (a temporary file renamed over it). */
static int write_pem(const char *dir, const char *name, const char *pem, mode_t mode)
{
	char path[512], tmp[520];
	size_t n = strlen(pem);
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return fail("cannot write %s: %s", tmp, strerror(errno));
	if (write(fd, pem, n) != (ssize_t)n)
		err = errno ? errno : EIO;
	if (close(fd) && !err)
		err = errno;
	if (!err && rename(tmp, path))
		err = errno;
	if (err) {
		unlink(tmp);
		return fail("cannot write %s: %s", path, strerror(err));
	}
	return 0;
}

static int write_pair(const struct boot *b, const struct ts_cert_set *s)
{
	const char *dir = b->o->out_dir;

	if (write_pem(dir, "tls.crt", s->cert_pem, 0644) || write_pem(dir, "tls.key", s->key_pem, 0600) ||
	    write_pem(dir, "ca.crt", s->ca_pem, 0644))
		return -1;
	printf("trainscope-webhook: wrote %s/tls.crt, %s/tls.key and %s/ca.crt\n", dir, dir, dir);
	return 0;
}

/* ---- the MutatingWebhookConfiguration ------------------------------------------------- */

/* Sets the caBundle of every webhook; how many changed, -1 when there is none. */
static int set_bundles(json_t *mwc, const char *bundle)
{
	json_t *hooks = json_object_get(mwc, "webhooks"), *h, *cc;
	int changed = 0;
	size_t i;

	if (!json_array_size(hooks))
		return -1;
	json_array_foreach(hooks, i, h) {
		const char *cur;

		if (!json_is_object(h))
			continue;
		if (!json_is_object(cc = json_object_get(h, "clientConfig")))
			json_object_set_new(h, "clientConfig", cc = json_object());
		cur = json_string_value(json_object_get(cc, "caBundle"));
		if (!cur || strcmp(cur, bundle)) {
			json_object_set_new(cc, "caBundle", json_string(bundle));
			changed++;
		}
	}
	return changed;
}

static int put_webhooks(struct boot *b, json_t *mwc, int changed)
{
	const char *name = b->o->webhook_config;
	json_t *answer = NULL;
	int code = ts_kube_request(b->kube, "PUT", b->mwc_path, mwc, NULL, &answer);
	char api[768];

	ts_kube_said(code, answer, api, sizeof(api));
	json_decref(answer);
	if (code == 409)
		return CONFLICT;
	if (code != 200)
		return fail("cannot update MutatingWebhookConfiguration %s: %s", name, api);
	printf("trainscope-webhook: MutatingWebhookConfiguration %s: caBundle set on %d "
	       "webhooks\n", name, changed);
	return 0;
}

/* GET of the configuration; a 404 is retried each second for --wait-s (an init container
 * may start before `helm install` or `kubectl apply` created it). */
static int get_webhooks(struct boot *b, json_t **obj)
{
	time_t until = time(NULL) + b->o->wait_s;
	int code, said_once = 0;

	for (;;) {
		code = ts_kube_request(b->kube, "GET", b->mwc_path, NULL, NULL, obj);
		if (code != 404 || time(NULL) >= until)
			return code;
		if (!said_once++) {
			printf("trainscope-webhook: waiting up to %u s for MutatingWebhookConfiguration "
			       "%s to exist\n", b->o->wait_s, b->o->webhook_config);
			fflush(stdout);
		}
		json_decref(*obj);
		*obj = NULL;
		sleep(1);
	}
}

/* One read of the configuration and, when a webhook lacks the CA, one write: 0,
 * CONFLICT or -1. */
static int webhook_round(struct boot *b, const char *bundle)
{
	const char *name = b->o->webhook_config;
	json_t *obj = NULL;
	int code = get_webhooks(b, &obj), changed, rc = 0;
	char api[768];

	ts_kube_said(code, obj, api, sizeof(api));
	if (code != 200)
		rc = fail("cannot read MutatingWebhookConfiguration %s: %s", name, api);
	else if ((changed = set_bundles(obj, bundle)) < 0)
		rc = fail("MutatingWebhookConfiguration %s has no webhooks", name);
	else if (!changed)
		printf("trainscope-webhook: MutatingWebhookConfiguration %s: its %zu webhooks "
		       "already trust the CA\n", name, json_array_size(json_object_get(obj, "webhooks")));
	else
		rc = put_webhooks(b, obj, changed);
	json_decref(obj);
	return rc;
}

/* ---- the whole -------------------------------------------------------------------------- */

static int run(struct boot *b)
{
	struct ts_cert_set s = { 0 };
	char *bundle;
	int rc = CONFLICT;

	for (int i = 0; i < ATTEMPTS && rc == CONFLICT; i++)
		rc = secret_round(b, &s);
	if (rc == CONFLICT)
		return fail("%s: still conflicting after %d writes", b->secret_what, ATTEMPTS);
	if (rc)
		return -1;
	rc = b->o->out_dir ? write_pair(b, &s) : 0;
	bundle = rc || !b->o->webhook_config ? NULL : ts_b64_encode(s.ca_pem);
	ts_cert_set_free(&s);
	if (rc)
		return -1;
	if (!b->o->webhook_config) /* a certificate for another server (NATS): no webhook */
		return 0;
	if (!bundle)
		return fail("out of memory");
	rc = CONFLICT;
	for (int i = 0; i < ATTEMPTS && rc == CONFLICT; i++)
		rc = webhook_round(b, bundle);
	free(bundle);
	if (rc == CONFLICT)
		return fail("MutatingWebhookConfiguration %s: still conflicting after %d writes",
			    b->o->webhook_config, ATTEMPTS);
	return rc ? -1 : 0;
}

int ts_bootstrap_certs(const struct ts_bootstrap_opts *o)
{
	struct boot b = { .o = o };
	char err[512] = "";
	int rc;

	if (pod_namespace(b.ns, sizeof(b.ns)) || names(&b))
		return -1;
	if (ts_kube_open(&b.kube, o->kubeconfig, err, sizeof(err)))
		return fail("the API server: %s", err);
	rc = run(&b);
	ts_kube_close(b.kube);
	fflush(stdout);
	return rc;
}
