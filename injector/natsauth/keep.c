// SPDX-License-Identifier: Apache-2.0
#include "keep.h"
#include "kube.h"
#include "kube_secret.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/rand.h>

#define ATTEMPTS 5
#define CONFLICT 1
#define MAX_KEYS 8

int ts_random_text(char *out, size_t len)
{
	static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char raw[256];

	if (len > sizeof(raw) || RAND_bytes(raw, (int)len) != 1)
		return -EIO;
	/* 256 = 4 x 62 + 8: the first 8 characters come 5 times in 256, the rest 4; that is
	 * 5.95 bits a character, within 0.01 of a uniform pick */
	for (size_t i = 0; i < len; i++)
		out[i] = abc[raw[i] % (sizeof(abc) - 1)];
	out[len] = 0;
	return 0;
}

struct keep {
	const struct ts_keep_opts *o;
	struct ts_kube *kube;
	char ns[64], secrets[320], path[640], what[320];
	char *val[MAX_KEYS];
};

static void drop_values(struct keep *k)
{
	for (size_t i = 0; i < k->o->n_keys; i++) {
		free(k->val[i]);
		k->val[i] = NULL;
	}
}

/* The missing keys made into obj (a new Secret when NULL): how many, or -1. */
static int fill(struct keep *k, json_t *obj)
{
	char text[TS_KEEP_LEN + 1];
	int made = 0;

	for (size_t i = 0; i < k->o->n_keys; i++) {
		if ((k->val[i] = ts_kube_secret_value(obj, k->o->keys[i])))
			continue;
		if (ts_random_text(text, TS_KEEP_LEN) || !(k->val[i] = strdup(text)) ||
		    ts_kube_secret_set(obj, k->o->keys[i], text))
			return -1;
		made++;
	}
	return made;
}

/* One read and, when a key was missing, one write: 0, CONFLICT or -1. */
static int round_trip(struct keep *k)
{
	json_t *obj = NULL, *answer = NULL;
	int code = ts_kube_request(k->kube, "GET", k->path, NULL, NULL, &obj), made, create, rc = 0;
	char api[768];

	if (code != 200 && code != 404) {
		ts_kube_said(code, obj, api, sizeof(api));
		ts_error("cannot read %s: %s", k->what, api);
		json_decref(obj);
		return -1;
	}
	if ((create = code == 404)) {
		json_decref(obj);
		obj = ts_kube_secret_new(k->ns, k->o->secret, "nats", "Opaque");
	}
	made = obj ? fill(k, obj) : -1;
	if (made < 0) {
		ts_error("%s: out of memory or no random bytes", k->what);
		rc = -1;
	} else if (made == 0) {
		ts_info("%s: took its %zu keys", k->what, k->o->n_keys);
	} else {
		code = ts_kube_request(k->kube, create ? "POST" : "PUT", create ? k->secrets : k->path,
				       obj, NULL, &answer);
		ts_kube_said(code, answer, api, sizeof(api));
		if (code == 409) {
			rc = CONFLICT;
		} else if (code != 200 && code != 201) {
			ts_error("cannot %s %s: %s", create ? "create" : "update", k->what, api);
			rc = -1;
		} else {
			ts_info("%s: made %d of its %zu keys", k->what, made, k->o->n_keys);
		}
	}
	json_decref(answer);
	json_decref(obj);
	return rc;
}

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[4096];
	size_t n = strlen(text);
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		err = errno;
	else if (write(fd, text, n) != (ssize_t)n)
		err = errno ? errno : EIO;
	if (fd >= 0 && close(fd) && !err)
		err = errno;
	if (err)
		ts_error("cannot write %s: %s", path, strerror(err));
	return err ? -1 : 0;
}

static int keep(struct keep *k)
{
	int rc = CONFLICT;

	for (int i = 0; i < ATTEMPTS && rc == CONFLICT; i++) {
		drop_values(k);
		rc = round_trip(k);
	}
	if (rc == CONFLICT)
		ts_error("%s: still conflicting after %d writes", k->what, ATTEMPTS);
	for (size_t i = 0; !rc && i < k->o->n_keys; i++)
		rc = write_file(k->o->dir, k->o->keys[i], k->val[i]);
	return rc ? -1 : 0;
}

int ts_keep_secrets(const struct ts_keep_opts *o)
{
	struct keep k = { .o = o };
	char err[512] = "";
	int rc;

	if (o->n_keys > MAX_KEYS || !ts_kube_name_ok(o->secret, 253)) {
		ts_error("--secret '%s': not a Kubernetes name", o->secret);
		return -1;
	}
	if ((rc = ts_kube_namespace(k.ns, sizeof(k.ns)))) {
		ts_error("%s", rc == -ENOENT ? "no namespace: set POD_NAMESPACE, or run in a pod"
					     : "the pod's namespace is not a Kubernetes name");
		return -1;
	}
	snprintf(k.secrets, sizeof(k.secrets), "/api/v1/namespaces/%s/secrets", k.ns);
	snprintf(k.path, sizeof(k.path), "%s/%s", k.secrets, o->secret);
	snprintf(k.what, sizeof(k.what), "Secret %s/%s", k.ns, o->secret);
	if (ts_kube_open(&k.kube, o->kubeconfig, err, sizeof(err))) {
		ts_error("the API server: %s", err);
		return -1;
	}
	rc = keep(&k);
	drop_values(&k);
	ts_kube_close(k.kube);
	return rc;
}
