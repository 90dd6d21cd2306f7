// SPDX-License-Identifier: Apache-2.0
/* The webhook's patch applied to real pod shapes: what it adds, what it keeps, job
 * names, idempotency, and refusal of malformed reviews; and its certificate files:
 * which pairs load, and a rotation seen once per change; and the CA and serving pair of
 * --bootstrap-certs: what is made, what is kept and what is replaced. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ftw.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "injector/webhook/cert.h"
#include "injector/webhook/mutate.h"

static const struct ts_inject_opts opts = { "trainscope:test", "nats://nats:4222", false };

static int b64val(char c)
{
	const char *tab = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = strchr(tab, c);

	return p && c ? (int)(p - tab) : -1;
}

static char *unb64(const char *s)
{
	size_t n = strlen(s), k = 0;
	char *out = malloc(n + 1);

	for (size_t i = 0; i + 3 < n; i += 4) {
		int a = b64val(s[i]), b = b64val(s[i + 1]), c = b64val(s[i + 2]), d = b64val(s[i + 3]);
		out[k++] = (char)(a << 2 | b >> 4);
		if (c >= 0)
			out[k++] = (char)((b & 15) << 4 | c >> 2);
		if (d >= 0)
			out[k++] = (char)((c & 3) << 6 | d);
	}
	out[k] = 0;
	return out;
}

/* Just enough RFC 6902 for the ops the webhook emits: add and replace. */
static void apply(json_t *doc, json_t *patch)
{
	json_t *o;
	size_t i;

	json_array_foreach(patch, i, o) {
		char path[512], *tok, *save, key[256];
		json_t *cur = doc, *parent = NULL;
		snprintf(path, sizeof(path), "%s", json_string_value(json_object_get(o, "path")));
		const char *kind = json_string_value(json_object_get(o, "op"));
		json_t *value = json_deep_copy(json_object_get(o, "value"));
		key[0] = 0;
		for (tok = strtok_r(path + 1, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
			size_t k = 0;
			for (char *c = tok; *c; c++)
				key[k++] = (*c == '~') ? (*++c == '1' ? '/' : '~') : *c;
			key[k] = 0;
			parent = cur;
			cur = json_is_array(cur) ? json_array_get(cur, strtoul(key, NULL, 10))
						 : json_object_get(cur, key);
		}
		assert_non_null(parent);
		if (json_is_array(parent)) {
			if (!strcmp(key, "-"))
				json_array_append_new(parent, value);
			else
				json_array_set_new(parent, strtoul(key, NULL, 10), value);
		} else {
			if (!strcmp(kind, "replace"))
				assert_non_null(cur);
			json_object_set_new(parent, key, value);
		}
	}
}

static json_t *review(json_t *pod)
{
	return json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:o}}", "apiVersion",
			 "admission.k8s.io/v1", "kind", "AdmissionReview", "request", "uid", "u-1",
			 "kind", "group", "", "version", "v1", "kind", "Pod", "operation", "CREATE",
			 "namespace", "team", "object", pod);
}

/* Runs the webhook on pod; returns the patched pod (NULL when no patch) and checks
 * the response envelope. *warnings (when asked for) gets the response's warnings, or
 * NULL. */
static json_t *mutate_warn(json_t *pod, const struct ts_inject_opts *o, json_t **warnings)
{
	json_t *rev = review(json_deep_copy(pod)), *root, *resp, *patch;
	char *in = json_dumps(rev, 0), *out = NULL;
	json_error_t err;

	assert_int_equal(ts_mutate(in, strlen(in), o, &out), 200);
	root = json_loads(out, 0, &err);
	resp = json_object_get(root, "response");
	assert_string_equal(json_string_value(json_object_get(resp, "uid")), "u-1");
	assert_true(json_is_true(json_object_get(resp, "allowed")));
	if (warnings)
		*warnings = json_incref(json_object_get(resp, "warnings"));
	free(in);
	free(out);
	json_decref(rev);
	if (!json_object_get(resp, "patch")) {
		json_decref(root);
		return NULL;
	}
	assert_string_equal(json_string_value(json_object_get(resp, "patchType")), "JSONPatch");
	char *text = unb64(json_string_value(json_object_get(resp, "patch")));
	json_decref(root);
	patch = json_loads(text, 0, &err);
	assert_non_null(patch);
	free(text);
	json_t *done = json_deep_copy(pod);
	apply(done, patch);
	json_decref(patch);
	return done;
}

static json_t *mutate(json_t *pod, const struct ts_inject_opts *o)
{
	return mutate_warn(pod, o, NULL);
}

/* The element of spec's list (containers, initContainers) with that name, or NULL. */
static json_t *named(json_t *pod, const char *list, const char *name)
{
	json_t *c;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(pod, "spec"), list), i, c)
		if (!strcmp(json_string_value(json_object_get(c, "name")), name))
			return c;
	return NULL;
}

static bool mounts(json_t *c, const char *volume, const char *path)
{
	json_t *m;
	size_t i;

	json_array_foreach(json_object_get(c, "volumeMounts"), i, m)
		if (!strcmp(json_string_value(json_object_get(m, "name")), volume) &&
		    !strcmp(json_string_value(json_object_get(m, "mountPath")), path))
			return true;
	return false;
}

static const char *env_of(json_t *c, const char *name)
{
	json_t *e;
	size_t i;

	json_array_foreach(json_object_get(c, "env"), i, e)
		if (!strcmp(json_string_value(json_object_get(e, "name")), name))
			return json_string_value(json_object_get(e, "value"));
	return NULL;
}

static json_t *training_pod(void)
{
	return json_pack("{s:{s:s, s:{s:s}, s:{s:s}}, s:{s:[{s:s, s:s, s:[{s:s, s:s}]}, {s:s, s:s}],"
			 " s:[{s:s}]}}",
			 "metadata", "name", "llm-worker-3", "annotations", TS_ANNOT_INJECT, "true",
			 "labels", "training.kubeflow.org/job-name", "llm", "spec", "containers",
			 "name", "trainer", "image", "pytorch", "env", "name", "LD_PRELOAD", "value",
			 "/opt/jemalloc.so", "name", "logger", "image", "busybox", "volumes", "name",
			 "data");
}

#define PRELOAD "/trainscope/lib/$PLATFORM/libtrainscope.so"

static void test_injects_and_keeps_user_values(void **state)
{
	json_t *pod = training_pod(), *done = mutate(pod, &opts);
	json_t *spec = json_object_get(done, "spec"), *trainer, *init;

	(void)state;
	assert_non_null(done);
	trainer = json_array_get(json_object_get(spec, "containers"), 0);
	assert_string_equal(env_of(trainer, "LD_PRELOAD"), "/opt/jemalloc.so:" PRELOAD);
	assert_string_equal(env_of(trainer, "PYTHONPATH"), "/trainscope/python");
	assert_string_equal(env_of(trainer, "NCCL_PROFILER_PLUGIN"), "/trainscope/lib/libtrainscope.so");
	assert_string_equal(env_of(trainer, "TRAINSCOPE_JOB"), "llm");
	assert_string_equal(env_of(trainer, "TRAINSCOPE_RING_DIR"), "/trainscope-rings/r");
	assert_string_equal(env_of(trainer, "TRAINSCOPE_CONTAINER"), "trainer");
	assert_true(mounts(trainer, "trainscope-lib", "/trainscope"));
	assert_true(mounts(trainer, "trainscope-rings", "/trainscope-rings"));
	assert_int_equal(json_array_size(json_object_get(spec, "volumes")), 3);
	init = json_object_get(spec, "initContainers");
	assert_int_equal(json_array_size(init), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(init, 1), "name")),
			    "trainscope-relay");
	assert_string_equal(json_string_value(json_object_get(json_array_get(init, 1),
							      "restartPolicy")), "Always");
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(done,
		"metadata"), "annotations"), TS_ANNOT_INJECTED)), "true");
	/* a second pass changes nothing */
	assert_null(mutate(done, &opts));
	json_decref(pod);
	json_decref(done);
}

/* A user's LD_PRELOAD and PYTHONPATH of any length survive whole, ours added to them. */
/* Authenticated NATS: the relay alone gets the pod's projected token (for the NATS
 * audience, renewed by the kubelet) and the CA; the trainer gets neither. */
static void test_nats_identity(void **state)
{
	struct ts_inject_opts authn = opts;
	json_t *pod = training_pod(), *done, *relay, *trainer, *v, *src;
	size_t i;
	bool found = false;

	(void)state;
	authn.nats_audience = "trainscope-nats";
	authn.nats_ca_pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
	done = mutate(pod, &authn);
	relay = named(done, "initContainers", "trainscope-relay");
	trainer = named(done, "containers", "trainer");
	assert_string_equal(env_of(relay, "TRAINSCOPE_NATS_TOKEN_FILE"), TS_NATS_TOKEN_DIR "/token");
	assert_string_equal(env_of(relay, "TRAINSCOPE_NATS_CA_PEM"), authn.nats_ca_pem);
	assert_true(mounts(relay, "trainscope-nats-token", TS_NATS_TOKEN_DIR));
	assert_null(env_of(trainer, "TRAINSCOPE_NATS_TOKEN_FILE"));
	assert_false(mounts(trainer, "trainscope-nats-token", TS_NATS_TOKEN_DIR));
	json_array_foreach(json_object_get(json_object_get(done, "spec"), "volumes"), i, v) {
		if (strcmp(json_string_value(json_object_get(v, "name")), "trainscope-nats-token"))
			continue;
		src = json_object_get(json_array_get(json_object_get(json_object_get(v, "projected"),
								   "sources"), 0), "serviceAccountToken");
		assert_string_equal(json_string_value(json_object_get(src, "audience")), "trainscope-nats");
		assert_int_equal(json_integer_value(json_object_get(src, "expirationSeconds")),
				 TS_NATS_TOKEN_S);
		found = true;
	}
	assert_true(found);
	json_decref(done);
	/* an open NATS: no token, no volume */
	done = mutate(pod, &opts);
	relay = named(done, "initContainers", "trainscope-relay");
	assert_null(env_of(relay, "TRAINSCOPE_NATS_TOKEN_FILE"));
	assert_false(mounts(relay, "trainscope-nats-token", TS_NATS_TOKEN_DIR));
	json_decref(done);
	json_decref(pod);
}

static void test_long_env_values(void **state)
{
	static char preload[10241], pypath[10241], want[20480];
	json_t *pod = training_pod(), *done, *trainer, *env;

	(void)state;
	memset(preload, 'p', sizeof(preload) - 1);
	memset(pypath, 'y', sizeof(pypath) - 1);
	preload[0] = pypath[0] = '/';
	trainer = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
	env = json_object_get(trainer, "env");
	json_object_set_new(json_array_get(env, 0), "value", json_string(preload));
	json_array_append_new(env, json_pack("{s:s, s:s}", "name", "PYTHONPATH", "value", pypath));
	done = mutate(pod, &opts);
	assert_non_null(done);
	trainer = json_array_get(json_object_get(json_object_get(done, "spec"), "containers"), 0);
	snprintf(want, sizeof(want), "%s:%s", preload, PRELOAD);
	assert_string_equal(env_of(trainer, "LD_PRELOAD"), want);
	snprintf(want, sizeof(want), "/trainscope/python:%s", pypath);
	assert_string_equal(env_of(trainer, "PYTHONPATH"), want);
	json_decref(pod);
	json_decref(done);
}

/* Without the annotation only the first container is instrumented: a logging sidecar
 * next to the trainer is left exactly as it was. */
static void test_only_first_container_by_default(void **state)
{
	json_t *pod = training_pod(), *done = mutate(pod, &opts);
	json_t *logger = named(done, "containers", "logger");

	(void)state;
	assert_non_null(logger);
	assert_true(json_equal(logger, named(pod, "containers", "logger")));
	assert_null(json_object_get(logger, "env"));
	assert_null(json_object_get(logger, "volumeMounts"));
	json_decref(pod);
	json_decref(done);
}

static json_t *three_containers(const char *names)
{
	return json_pack("{s:{s:s, s:{s:s, s:s}}, s:{s:[{s:s}, {s:s}, {s:s}]}}", "metadata", "name",
			 "p", "annotations", TS_ANNOT_INJECT, "true", TS_ANNOT_CONTAINER_NAMES,
			 names, "spec", "containers", "name", "a", "name", "b", "name", "c");
}

static bool instrumented(json_t *pod, const char *name)
{
	json_t *c = named(pod, "containers", name);
	const char *v = env_of(c, "LD_PRELOAD");

	if (!v) { /* nothing of ours at all */
		assert_null(json_object_get(c, "env"));
		assert_null(json_object_get(c, "volumeMounts"));
		return false;
	}
	assert_string_equal(v, PRELOAD);
	assert_string_equal(env_of(c, "TRAINSCOPE_CONTAINER"), name);
	assert_non_null(env_of(c, "PYTHONPATH"));
	assert_non_null(env_of(c, "NCCL_PROFILER_PLUGIN"));
	assert_true(mounts(c, "trainscope-lib", "/trainscope"));
	assert_true(mounts(c, "trainscope-rings", "/trainscope-rings"));
	return true;
}

/* trainscope.dev/container-names picks the containers; a name that matches none is
 * skipped, the pod is still admitted, and a warning says which. */
static void test_container_names_annotation(void **state)
{
	json_t *pod = three_containers(" c,missing, a"), *warnings, *done;

	(void)state;
	done = mutate_warn(pod, &opts, &warnings);
	assert_non_null(done);
	assert_true(instrumented(done, "a"));
	assert_false(instrumented(done, "b"));
	assert_true(instrumented(done, "c"));
	assert_int_equal(json_array_size(warnings), 1);
	assert_non_null(strstr(json_string_value(json_array_get(warnings, 0)), "\"missing\""));
	assert_non_null(strstr(json_string_value(json_array_get(warnings, 0)),
			       TS_ANNOT_CONTAINER_NAMES));
	json_decref(warnings);
	json_decref(done);
	json_decref(pod);

	/* the second container alone, no warning */
	pod = three_containers("b");
	done = mutate_warn(pod, &opts, &warnings);
	assert_false(instrumented(done, "a"));
	assert_true(instrumented(done, "b"));
	assert_false(instrumented(done, "c"));
	assert_null(warnings);
	json_decref(done);
	json_decref(pod);

	/* an empty list is no list: the first container */
	pod = three_containers(" , ");
	done = mutate_warn(pod, &opts, &warnings);
	assert_true(instrumented(done, "a"));
	assert_false(instrumented(done, "b"));
	json_decref(done);
	json_decref(pod);
}

/* No name matches: admitted unchanged, with the warnings. */
static void test_container_names_none_found(void **state)
{
	json_t *pod = three_containers("x,y"), *warnings;

	(void)state;
	assert_null(mutate_warn(pod, &opts, &warnings));
	assert_int_equal(json_array_size(warnings), 3);
	assert_non_null(strstr(json_string_value(json_array_get(warnings, 0)), "\"x\""));
	assert_non_null(strstr(json_string_value(json_array_get(warnings, 1)), "\"y\""));
	json_decref(warnings);
	json_decref(pod);
}

/* The injected containers pass the Pod Security Standard "restricted". */
static void test_restricted_security_context(void **state)
{
	json_t *pod = training_pod(), *done = mutate(pod, &opts);
	json_t *want = json_pack("{s:b, s:i, s:i, s:b, s:{s:[s]}, s:{s:s}, s:b}", "runAsNonRoot", 1,
				 "runAsUser", 65532, "runAsGroup", 65532,
				 "allowPrivilegeEscalation", 0, "capabilities", "drop", "ALL",
				 "seccompProfile", "type", "RuntimeDefault",
				 "readOnlyRootFilesystem", 1);

	(void)state;
	assert_true(json_equal(json_object_get(named(done, "initContainers", "trainscope-init"),
					       "securityContext"), want));
	assert_true(json_equal(json_object_get(named(done, "initContainers", "trainscope-relay"),
					       "securityContext"), want));
	json_decref(want);
	json_decref(pod);
	json_decref(done);
}

/* The init container makes the ring folder the relay reads: setgid and sticky, owned by
 * the injected user; the trainer and the relay are told that folder. */
static void test_ring_folder(void **state)
{
	json_t *pod = training_pod(), *done = mutate(pod, &opts);
	json_t *init = named(done, "initContainers", "trainscope-init");
	json_t *relay = named(done, "initContainers", "trainscope-relay");
	json_t *cmd = json_object_get(init, "command"), *args = json_object_get(relay, "args");
	size_t i;

	(void)state;
	assert_int_equal(json_array_size(cmd), 3);
	assert_string_equal(json_string_value(json_array_get(cmd, 0)), "/bin/sh");
	assert_string_equal(json_string_value(json_array_get(cmd, 1)), "-c");
	assert_string_equal(json_string_value(json_array_get(cmd, 2)),
			    "cp -R /opt/trainscope/. /trainscope/ && mkdir -p /trainscope-rings/r"
			    " && chmod 3777 /trainscope-rings/r");
	assert_true(mounts(init, "trainscope-lib", "/trainscope"));
	assert_true(mounts(init, "trainscope-rings", "/trainscope-rings"));
	assert_true(mounts(relay, "trainscope-rings", "/trainscope-rings"));
	for (i = 0; i < json_array_size(args); i++)
		if (!strcmp(json_string_value(json_array_get(args, i)), "--ring-dir"))
			break;
	assert_string_equal(json_string_value(json_array_get(args, i + 1)), "/trainscope-rings/r");
	assert_string_equal(env_of(relay, "TRAINSCOPE_RING_DIR"), "/trainscope-rings/r");
	/* still an emptyDir: per pod */
	assert_non_null(json_object_get(json_array_get(json_object_get(json_object_get(done, "spec"),
		"volumes"), 2), "emptyDir"));
	json_decref(pod);
	json_decref(done);
}

static void assert_resources(json_t *c, const char *cpu, const char *memory)
{
	json_t *want = json_pack("{s:{s:s, s:s}, s:{s:s, s:s}}", "requests", "cpu", cpu, "memory",
				 memory, "limits", "cpu", cpu, "memory", memory);

	assert_true(json_equal(json_object_get(c, "resources"), want));
	json_decref(want);
}

/* A pod that declares resources gets ours with requests = limits (Guaranteed stays
 * Guaranteed); one that declares none gets none (BestEffort stays BestEffort). */
static void test_qos_kept(void **state)
{
	struct ts_inject_opts big = opts;
	json_t *pod = training_pod(), *done = mutate(pod, &opts), *c;

	(void)state;
	assert_null(json_object_get(named(done, "initContainers", "trainscope-init"), "resources"));
	assert_null(json_object_get(named(done, "initContainers", "trainscope-relay"), "resources"));
	json_decref(done);

	c = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 1);
	json_object_set_new(c, "resources", json_pack("{s:{s:s, s:s}, s:{s:s, s:s}}", "requests",
						      "cpu", "1", "memory", "1Gi", "limits",
						      "cpu", "1", "memory", "1Gi"));
	done = mutate(pod, &opts);
	assert_resources(named(done, "initContainers", "trainscope-init"), "50m", "32Mi");
	assert_resources(named(done, "initContainers", "trainscope-relay"), "100m", "128Mi");
	json_decref(done);

	/* limits alone count, in an init container too; the sizes are options */
	json_object_del(c, "resources");
	json_object_set_new(json_object_get(pod, "spec"), "initContainers",
			    json_pack("[{s:s, s:{s:{s:s}}}]", "name", "setup", "resources",
				      "limits", "memory", "64Mi"));
	big.relay_cpu = "250m";
	big.relay_memory = "1Gi";
	done = mutate(pod, &big);
	assert_resources(named(done, "initContainers", "trainscope-init"), "50m", "32Mi");
	assert_resources(named(done, "initContainers", "trainscope-relay"), "250m", "1Gi");
	json_decref(done);

	/* empty requests and limits declare nothing */
	json_object_set_new(json_array_get(json_object_get(json_object_get(pod, "spec"),
							   "initContainers"), 0),
			    "resources", json_pack("{s:{}, s:{}}", "requests", "limits"));
	done = mutate(pod, &opts);
	assert_null(json_object_get(named(done, "initContainers", "trainscope-relay"), "resources"));
	json_decref(done);
	json_decref(pod);
}

/* A pod whose one container sets env (a JSON array); the container after the webhook.
 * *done keeps it alive (json_decref it). */
static json_t *container_after(json_t *env, json_t **done)
{
	json_t *pod = json_pack("{s:{s:s, s:{s:s}}, s:{s:[{s:s, s:o}]}}", "metadata", "name", "p",
				"annotations", TS_ANNOT_INJECT, "true", "spec", "containers",
				"name", "c", "env", env);

	*done = mutate(pod, &opts);
	assert_non_null(*done);
	json_decref(pod);
	return json_array_get(json_object_get(json_object_get(*done, "spec"), "containers"), 0);
}

static int env_count(json_t *c, const char *name)
{
	json_t *e;
	size_t i;
	int n = 0;

	json_array_foreach(json_object_get(c, "env"), i, e)
		n += !strcmp(json_string_value(json_object_get(e, "name")), name);
	return n;
}

#define CHAIN "TRAINSCOPE_NCCL_PROFILER_CHAIN"

/* A user's own NCCL profiler plugin (a path, or NCCL's short name) moves to the chain,
 * which the library loads behind its own; NCCL_PROFILER_PLUGIN names ours, once. */
static void test_chains_user_nccl_plugin(void **state)
{
	static const char *const mine[] = { "/opt/mine.so", "inspector" };
	json_t *done, *c;

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		c = container_after(json_pack("[{s:s, s:s}]", "name", "NCCL_PROFILER_PLUGIN", "value",
					      mine[i]),
				    &done);
		assert_string_equal(env_of(c, "NCCL_PROFILER_PLUGIN"),
				    "/trainscope/lib/libtrainscope.so");
		assert_int_equal(env_count(c, "NCCL_PROFILER_PLUGIN"), 1);
		assert_string_equal(env_of(c, CHAIN), mine[i]);
		json_decref(done);
	}
}

/* Ours already (any path to libtrainscope.so), "none" (no plugin at all), or a chain the
 * user set up: left as they are. */
static void test_keeps_nccl_plugin_choices(void **state)
{
	static const char *const kept[] = { "/trainscope/lib/libtrainscope.so",
					    "/opt/trainscope/lib/libtrainscope.so", "none", "NONE" };
	json_t *done, *c;

	(void)state;
	for (size_t i = 0; i < 4; i++) {
		c = container_after(json_pack("[{s:s, s:s}]", "name", "NCCL_PROFILER_PLUGIN", "value",
					      kept[i]),
				    &done);
		assert_string_equal(env_of(c, "NCCL_PROFILER_PLUGIN"), kept[i]);
		assert_int_equal(env_count(c, "NCCL_PROFILER_PLUGIN"), 1);
		assert_int_equal(env_count(c, CHAIN), 0);
		json_decref(done);
	}
	c = container_after(json_pack("[{s:s, s:s}, {s:s, s:s}]", "name", "NCCL_PROFILER_PLUGIN",
				      "value", "/opt/a.so", "name", CHAIN, "value", "/opt/b.so"),
			    &done);
	assert_string_equal(env_of(c, "NCCL_PROFILER_PLUGIN"), "/opt/a.so");
	assert_string_equal(env_of(c, CHAIN), "/opt/b.so");
	assert_int_equal(env_count(c, CHAIN), 1);
	json_decref(done);
	/* the user's chain alone: NCCL still gets ours */
	c = container_after(json_pack("[{s:s, s:s}]", "name", CHAIN, "value", "/opt/b.so"), &done);
	assert_string_equal(env_of(c, "NCCL_PROFILER_PLUGIN"), "/trainscope/lib/libtrainscope.so");
	assert_string_equal(env_of(c, CHAIN), "/opt/b.so");
	json_decref(done);
}

/* A plugin from valueFrom (a ConfigMap) moves as it is; an empty value (NCCL's default
 * file name) leaves nothing to chain. */
static void test_chains_nccl_plugin_value_from(void **state)
{
	json_t *done, *c, *e, *from = NULL;
	size_t i;

	(void)state;
	c = container_after(json_pack("[{s:s, s:{s:{s:s, s:s}}}]", "name", "NCCL_PROFILER_PLUGIN",
				      "valueFrom", "configMapKeyRef", "name", "prof", "key",
				      "plugin"),
			    &done);
	assert_string_equal(env_of(c, "NCCL_PROFILER_PLUGIN"), "/trainscope/lib/libtrainscope.so");
	assert_int_equal(env_count(c, "NCCL_PROFILER_PLUGIN"), 1);
	json_array_foreach(json_object_get(c, "env"), i, e)
		if (!strcmp(json_string_value(json_object_get(e, "name")), CHAIN))
			from = json_object_get(json_object_get(e, "valueFrom"), "configMapKeyRef");
	assert_non_null(from);
	assert_string_equal(json_string_value(json_object_get(from, "name")), "prof");
	assert_string_equal(json_string_value(json_object_get(from, "key")), "plugin");
	assert_null(json_object_get(json_object_get(
		json_array_get(json_object_get(c, "env"), 0), "valueFrom"), "configMapKeyRef"));
	json_decref(done);

	c = container_after(json_pack("[{s:s, s:s}]", "name", "NCCL_PROFILER_PLUGIN", "value", ""),
			    &done);
	assert_string_equal(env_of(c, "NCCL_PROFILER_PLUGIN"), "/trainscope/lib/libtrainscope.so");
	assert_int_equal(env_count(c, CHAIN), 0);
	json_decref(done);
}

static void test_opt_in_and_out(void **state)
{
	struct ts_inject_opts ns_opt_in = opts;
	json_t *plain = json_pack("{s:{s:s}, s:{s:[{s:s}]}}", "metadata", "name", "p", "spec",
				  "containers", "name", "c");
	json_t *out = json_pack("{s:{s:s, s:{s:s}}, s:{s:[{s:s}]}}", "metadata", "name", "p",
				"annotations", TS_ANNOT_INJECT, "false", "spec", "containers",
				"name", "c");
	json_t *done;

	(void)state;
	ns_opt_in.namespace_opt_in = true;
	assert_null(mutate(plain, &opts));
	assert_non_null(done = mutate(plain, &ns_opt_in));
	/* no annotations before: the map is created, the bare pod names the job */
	assert_string_equal(env_of(json_array_get(json_object_get(json_object_get(done, "spec"),
								  "containers"), 0),
				   "TRAINSCOPE_JOB"), "p");
	json_decref(done);
	assert_null(mutate(out, &ns_opt_in));
	json_decref(plain);
	json_decref(out);
}

/* A pod the API server admitted without asking the webhook: ts_pod_asks reads its
 * metadata alone (a metadata-only list's item), ts_pod_would_inject the whole pod as a
 * review would; an injected pod, one with no container to instrument, one opting out,
 * and one of a namespace that does not opt in are not missed. */
static void test_missed_pod(void **state)
{
	json_t *annotated = json_pack("{s:{s:s, s:{s:s}}, s:{s:[{s:s}]}}", "metadata", "name", "p",
				      "annotations", TS_ANNOT_INJECT, "true", "spec", "containers",
				      "name", "c");
	json_t *plain = json_pack("{s:{s:s}, s:{s:[{s:s}]}}", "metadata", "name", "p", "spec",
				  "containers", "name", "c");
	json_t *meta = json_pack("{s:O}", "metadata", json_object_get(annotated, "metadata"));
	json_t *injected, *ann;
	struct ts_inject_opts ns_opt_in = opts;

	(void)state;
	ns_opt_in.namespace_opt_in = true;
	assert_true(ts_pod_asks(meta, false));
	assert_true(ts_pod_would_inject(annotated, false));
	assert_false(ts_pod_would_inject(meta, false)); /* no spec: nothing to inject */
	assert_false(ts_pod_asks(plain, false));
	assert_true(ts_pod_would_inject(plain, true));
	/* what the webhook made of it is not missed */
	assert_non_null(injected = mutate(annotated, &opts));
	assert_false(ts_pod_asks(injected, false));
	assert_false(ts_pod_would_inject(injected, true));
	json_decref(injected);
	assert_non_null(injected = mutate(plain, &ns_opt_in));
	assert_false(ts_pod_would_inject(injected, true));
	json_decref(injected);
	/* names no container it has: left unchanged at admission (and told then) */
	ann = json_object_get(json_object_get(annotated, "metadata"), "annotations");
	json_object_set_new(ann, TS_ANNOT_CONTAINER_NAMES, json_string("nosuch"));
	assert_true(ts_pod_asks(annotated, false));
	assert_false(ts_pod_would_inject(annotated, false));
	json_object_set_new(ann, TS_ANNOT_CONTAINER_NAMES, json_string("c"));
	assert_true(ts_pod_would_inject(annotated, false));
	json_object_set_new(ann, TS_ANNOT_INJECT, json_string("false"));
	assert_false(ts_pod_asks(annotated, true));
	assert_false(ts_pod_would_inject(annotated, true));
	json_decref(annotated);
	assert_false(ts_pod_asks(annotated = json_string("pod"), true));
	json_decref(annotated);
	json_decref(plain);
	json_decref(meta);
}

static void test_job_name_rules(void **state)
{
	json_t *p;

	(void)state;
	p = json_pack("{s:{s:{s:s, s:s}, s:[{s:s, s:b}]}}", "metadata", "labels", "job-name", "batch",
		      "app.kubernetes.io/instance", "inst", "ownerReferences", "name", "owner",
		      "controller", 1);
	assert_string_equal(ts_pod_job(p), "batch");
	json_object_del(json_object_get(json_object_get(p, "metadata"), "labels"), "job-name");
	assert_string_equal(ts_pod_job(p), "inst");
	json_object_del(json_object_get(p, "metadata"), "labels");
	assert_string_equal(ts_pod_job(p), "owner");
	json_object_set_new(json_object_get(p, "metadata"), "annotations",
			    json_pack("{s:s}", TS_ANNOT_JOB, "explicit"));
	assert_string_equal(ts_pod_job(p), "explicit");
	json_decref(p);
}

/* The JSONPatch the webhook answers for pod (NULL when none). */
static json_t *raw_patch(json_t *pod, const struct ts_inject_opts *o)
{
	json_t *rev = review(json_deep_copy(pod)), *root, *patch = NULL;
	char *in = json_dumps(rev, 0), *out = NULL, *text;
	const char *enc;
	json_error_t err;

	assert_int_equal(ts_mutate(in, strlen(in), o, &out), 200);
	root = json_loads(out, 0, &err);
	enc = json_string_value(json_object_get(json_object_get(root, "response"), "patch"));
	if (enc) {
		text = unb64(enc);
		patch = json_loads(text, 0, &err);
		free(text);
	}
	json_decref(root);
	json_decref(rev);
	free(in);
	free(out);
	return patch;
}

/* A training pod whose trainer asks for 8 of resource (an extended resource: requests
 * equal limits), as a Kubeflow PyTorchJob makes it. */
static json_t *accelerator_pod(const char *resource)
{
	char text[1024];
	json_error_t err;

	snprintf(text, sizeof(text),
		 "{\"metadata\":{\"name\":\"llm-worker-0\",\"annotations\":{\"%s\":\"true\"},"
		 "\"labels\":{\"training.kubeflow.org/job-name\":\"llm\"}},\"spec\":{\"containers\":"
		 "[{\"name\":\"trainer\",\"image\":\"pytorch\",\"resources\":{"
		 "\"requests\":{\"cpu\":\"16\",\"memory\":\"64Gi\",\"%s\":\"8\"},"
		 "\"limits\":{\"cpu\":\"16\",\"memory\":\"64Gi\",\"%s\":\"8\"}}}]}}",
		 TS_ANNOT_INJECT, resource, resource);
	return json_loads(text, 0, &err);
}

/* The webhook does not look at accelerator resources: a pod on Huawei Ascend NPUs
 * (huawei.com/Ascend910, 910B, 310P: the Ascend device plugin's resources) gets exactly
 * the patch a pod on NVIDIA GPUs gets, and a pod asking for none gets it too. */
static void test_ascend_pod_like_gpu_pod(void **state)
{
	static const char *const ascend[] = { "huawei.com/Ascend910", "huawei.com/Ascend910B",
					      "huawei.com/Ascend310P" };
	json_t *gpu_pod = accelerator_pod("nvidia.com/gpu"), *gpu = raw_patch(gpu_pod, &opts);
	json_t *cpu_pod = accelerator_pod("example.com/none"), *cpu = raw_patch(cpu_pod, &opts);

	(void)state;
	assert_non_null(gpu);
	assert_true(json_equal(gpu, cpu));
	for (size_t i = 0; i < sizeof(ascend) / sizeof(ascend[0]); i++) {
		json_t *pod = accelerator_pod(ascend[i]), *patch = raw_patch(pod, &opts);
		json_t *done = mutate(pod, &opts), *trainer = named(done, "containers", "trainer");
		json_t *relay = named(done, "initContainers", "trainscope-relay");
		json_t *limits = json_object_get(json_object_get(trainer, "resources"), "limits");

		assert_true(json_equal(patch, gpu));
		assert_string_equal(env_of(trainer, "LD_PRELOAD"), PRELOAD);
		assert_string_equal(env_of(trainer, "PYTHONPATH"), "/trainscope/python");
		assert_string_equal(env_of(trainer, "TRAINSCOPE_JOB"), "llm");
		assert_string_equal(env_of(trainer, "TRAINSCOPE_CONTAINER"), "trainer");
		assert_string_equal(env_of(trainer, "TRAINSCOPE_NATS_URL"), "nats://nats:4222");
		assert_true(mounts(trainer, "trainscope-lib", "/trainscope"));
		assert_string_equal(json_string_value(json_object_get(relay, "restartPolicy")), "Always");
		assert_string_equal(json_string_value(json_object_get(limits, ascend[i])), "8");
		/* the pod declares resources: ours get requests = limits (QoS unchanged) */
		assert_resources(relay, "100m", "128Mi");
		json_decref(patch);
		json_decref(done);
		json_decref(pod);
	}
	json_decref(gpu);
	json_decref(cpu);
	json_decref(gpu_pod);
	json_decref(cpu_pod);
}

/* Volcano's Ascend jobs name the chips through the downward API
 * (ASCEND_VISIBLE_DEVICES from the pod's huawei.com/Ascend910 annotation): that env is
 * the device plugin's and the runtime's, and stays as it was. */
static void test_ascend_visible_devices_kept(void **state)
{
	json_t *pod = accelerator_pod("huawei.com/Ascend910"), *done, *trainer, *e;
	json_t *want = json_pack("{s:s, s:{s:{s:s}}}", "name", "ASCEND_VISIBLE_DEVICES",
				 "valueFrom", "fieldRef", "fieldPath",
				 "metadata.annotations['huawei.com/Ascend910']");
	int seen = 0;
	size_t i;

	(void)state;
	json_object_set_new(named(pod, "containers", "trainer"), "env",
			    json_pack("[O]", want));
	done = mutate(pod, &opts);
	trainer = named(done, "containers", "trainer");
	json_array_foreach(json_object_get(trainer, "env"), i, e)
		seen += !strcmp(json_string_value(json_object_get(e, "name")),
				"ASCEND_VISIBLE_DEVICES");
	assert_int_equal(seen, 1);
	assert_true(json_equal(json_array_get(json_object_get(trainer, "env"), 0), want));
	assert_string_equal(env_of(trainer, "LD_PRELOAD"), PRELOAD);
	json_decref(want);
	json_decref(done);
	json_decref(pod);
}

static void test_malformed(void **state)
{
	const char *bad[] = { "", "{", "[]", "{\"request\":{}}", "{\"request\":{\"uid\":5}}",
			      "nul\0l" };
	char *out;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(ts_mutate(bad[i], strlen(bad[i]) + (i == 5 ? 2 : 0), &opts, &out), 400);
		assert_non_null(strstr(out, "\"allowed\":false"));
		free(out);
	}
	/* a well-formed review of something else: allowed, untouched, with a warning */
	const char *cm = "{\"request\":{\"uid\":\"x\",\"kind\":{\"kind\":\"ConfigMap\"},\"object\":{}}}";
	assert_int_equal(ts_mutate(cm, strlen(cm), &opts, &out), 200);
	assert_non_null(strstr(out, "\"allowed\":true"));
	assert_non_null(strstr(out, "not a pod"));
	assert_null(strstr(out, "patch"));
	free(out);
}

/* ---- certificates ---------------------------------------------------------------- */

struct pem_pair {
	char cert[4096], key[4096];
};

static void bio_text(BIO *b, char *out, size_t n)
{
	int len = BIO_read(b, out, (int)n - 1);

	out[len > 0 ? len : 0] = 0;
}

/* A self-signed P-256 certificate for localhost, valid for days. */
static void make_pair(struct pem_pair *p, long days)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	X509 *x = X509_new();
	BIO *cb = BIO_new(BIO_s_mem()), *kb = BIO_new(BIO_s_mem());
	X509_NAME *name = X509_get_subject_name(x);

	assert_non_null(k);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), days * 86400);
	X509_set_pubkey(x, k);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost",
				   -1, -1, 0);
	X509_set_issuer_name(x, name);
	assert_true(X509_sign(x, k, EVP_sha256()) > 0);
	assert_true(PEM_write_bio_X509(cb, x) && PEM_write_bio_PrivateKey(kb, k, NULL, NULL, 0,
									  NULL, NULL));
	bio_text(cb, p->cert, sizeof(p->cert));
	bio_text(kb, p->key, sizeof(p->key));
	BIO_free(cb);
	BIO_free(kb);
	X509_free(x);
	EVP_PKEY_free(k);
}

/* The first half of s: a file caught while it is written. */
static void half(char *out, const char *s)
{
	size_t n = strlen(s) / 2;

	memcpy(out, s, n);
	out[n] = 0;
}

static void test_cert_check(void **state)
{
	struct pem_pair a, b;
	char why[256], chain[8192], cut[4096];
	int64_t not_after = 0;

	(void)state;
	make_pair(&a, 2);
	make_pair(&b, 2);
	assert_int_equal(ts_cert_check(a.cert, a.key, &not_after, why, sizeof(why)), 0);
	assert_true(llabs(not_after - (time(NULL) + 2 * 86400)) < 60);
	/* a chain: the key matches its first certificate */
	snprintf(chain, sizeof(chain), "%s%s", a.cert, b.cert);
	assert_int_equal(ts_cert_check(chain, a.key, &not_after, why, sizeof(why)), 0);
	/* the key of another certificate */
	assert_int_equal(ts_cert_check(a.cert, b.key, &not_after, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "does not match"));
	/* half-written: a certificate cut in two, a chain cut in its second one */
	half(cut, a.cert);
	assert_int_equal(ts_cert_check(cut, a.key, &not_after, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "certificate does not parse"));
	chain[strlen(a.cert) + strlen(b.cert) / 2] = 0;
	assert_int_equal(ts_cert_check(chain, a.key, &not_after, why, sizeof(why)), -1);
	half(cut, a.key);
	assert_int_equal(ts_cert_check(a.cert, cut, &not_after, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "key does not parse"));
	assert_int_equal(ts_cert_check("", "", &not_after, why, sizeof(why)), -1);
}

static void write_text(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

/* What the kubelet does to a mounted Secret: a new folder, then ..data swapped to it. */
static void publish(const char *dir, const char *version, const struct pem_pair *p)
{
	char sub[512], tmp[512], data[512];

	snprintf(sub, sizeof(sub), "%s/%s", dir, version);
	assert_int_equal(mkdir(sub, 0700), 0);
	write_text(sub, "tls.crt", p->cert);
	write_text(sub, "tls.key", p->key);
	snprintf(tmp, sizeof(tmp), "%s/..data_tmp", dir);
	snprintf(data, sizeof(data), "%s/..data", dir);
	assert_int_equal(symlink(version, tmp), 0);
	assert_int_equal(rename(tmp, data), 0);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static enum ts_cert_change poll_pair(struct ts_cert_files *f, const struct pem_pair *want)
{
	struct ts_cert_pair got;
	char why[256];
	enum ts_cert_change rc = ts_cert_poll(f, &got, why, sizeof(why));

	if (rc == TS_CERT_NEW) {
		assert_non_null(want);
		assert_string_equal(got.cert_pem, want->cert);
		assert_string_equal(got.key_pem, want->key);
		assert_true(got.not_after > time(NULL));
	}
	ts_cert_pair_free(&got);
	return rc;
}

/* A rotation is seen through the ..data swap; a bad pair is reported once per change. */
static void test_cert_rotation(void **state)
{
	char dir[] = "/tmp/test_mutate_tls_XXXXXX", cert[512], key[512], data[512];
	struct ts_cert_files f = { cert, key, NULL, NULL, 0 };
	struct pem_pair v1, v2, bad;

	(void)state;
	assert_non_null(mkdtemp(dir));
	make_pair(&v1, 1);
	make_pair(&v2, 1);
	memcpy(bad.cert, v2.cert, sizeof(bad.cert));
	memcpy(bad.key, v1.key, sizeof(bad.key));
	snprintf(cert, sizeof(cert), "%s/tls.crt", dir);
	snprintf(key, sizeof(key), "%s/tls.key", dir);
	snprintf(data, sizeof(data), "%s/..data", dir);
	publish(dir, "..v1", &v1);
	assert_int_equal(symlink("..data/tls.crt", cert), 0);
	assert_int_equal(symlink("..data/tls.key", key), 0);

	assert_int_equal(poll_pair(&f, &v1), TS_CERT_NEW);
	assert_int_equal(poll_pair(&f, NULL), TS_CERT_SAME);
	publish(dir, "..v2", &v2);
	assert_int_equal(poll_pair(&f, &v2), TS_CERT_NEW);
	assert_int_equal(poll_pair(&f, NULL), TS_CERT_SAME);
	publish(dir, "..v3", &bad);
	assert_int_equal(poll_pair(&f, NULL), TS_CERT_BAD);
	assert_int_equal(poll_pair(&f, NULL), TS_CERT_SAME); /* once per change */
	/* gone for a while: said once; back as it was: nothing new */
	assert_int_equal(unlink(data), 0);
	assert_int_equal(poll_pair(&f, NULL), TS_CERT_BAD);
	assert_int_equal(poll_pair(&f, NULL), TS_CERT_SAME);
	assert_int_equal(symlink("..v3", data), 0);
	assert_int_equal(poll_pair(&f, NULL), TS_CERT_SAME);
	/* fixed: the good pair is taken */
	publish(dir, "..v4", &v1);
	assert_int_equal(poll_pair(&f, &v1), TS_CERT_NEW);
	ts_cert_files_free(&f);
	nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* ---- --bootstrap-certs: the CA and serving pair ------------------------------------- */

static const char *const svc_names[] = {
	"trainscope-webhook.trainscope.svc", "trainscope-webhook", "trainscope-webhook.trainscope",
	"trainscope-webhook.trainscope.svc.cluster.local",
};
#define NSVC (sizeof(svc_names) / sizeof(svc_names[0]))
static const struct ts_cert_use svc = { svc_names, NSVC, false };

static X509 *parse_cert(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);

	BIO_free(b);
	assert_non_null(x);
	return x;
}

static void copy_set(struct ts_cert_set *to, const struct ts_cert_set *from)
{
	to->ca_pem = from->ca_pem ? strdup(from->ca_pem) : NULL;
	to->cert_pem = from->cert_pem ? strdup(from->cert_pem) : NULL;
	to->key_pem = from->key_pem ? strdup(from->key_pem) : NULL;
	to->not_after = 0;
}

static void replace_text(char **field, const char *text)
{
	free(*field);
	*field = strdup(text);
}

/* A new set: a CA, and a serverAuth certificate it signs for every name, not for others. */
static void test_cert_set_generate(void **state)
{
	struct ts_cert_set s = { 0 };
	X509 *ca, *leaf;
	EVP_PKEY *ca_key;
	GENERAL_NAMES *sans;
	char why[256];

	(void)state;
	assert_int_equal(ts_cert_set_generate(&s, &svc, 365, why, sizeof(why)), 0);
	assert_true(llabs(s.not_after - (time(NULL) + 365 * 86400L)) < 60);
	assert_int_equal(ts_cert_set_check(&s, &svc, time(NULL) + 364 * 86400L, why,
					   sizeof(why)), 0);
	ca = parse_cert(s.ca_pem);
	leaf = parse_cert(s.cert_pem);
	assert_int_equal(X509_check_ca(ca), 1);
	assert_int_equal(X509_check_ca(leaf), 0);
	assert_non_null(ca_key = X509_get0_pubkey(ca));
	assert_int_equal(X509_verify(leaf, ca_key), 1);
	assert_true(X509_get_extended_key_usage(leaf) & XKU_SSL_SERVER);
	assert_true(X509_get_extended_key_usage(leaf) & XKU_SSL_CLIENT);
	assert_non_null(sans = X509_get_ext_d2i(leaf, NID_subject_alt_name, NULL, NULL));
	assert_int_equal(sk_GENERAL_NAME_num(sans), NSVC);
	GENERAL_NAMES_free(sans);
	for (size_t i = 0; i < NSVC; i++)
		assert_int_equal(X509_check_host(leaf, svc_names[i], 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(leaf, "other.trainscope.svc", 0, 0, NULL), 0);
	assert_int_equal(EVP_PKEY_get_id(ca_key), EVP_PKEY_EC);
	X509_free(ca);
	X509_free(leaf);
	/* nothing made without a validity or names */
	assert_int_equal(ts_cert_set_generate(&s, &svc, 0, why, sizeof(why)), -1);
	assert_int_equal(ts_cert_set_generate(&s, &(struct ts_cert_use){ svc_names, 0, false }, 30, why, sizeof(why)), -1);
	assert_non_null(s.ca_pem); /* a failure leaves the set as it was */
	ts_cert_set_free(&s);
}

/* A cluster's pair (--peer-names): a wildcard names each server's own name, not deeper
 * ones, and the set checks as a TLS client's; a set for the service alone is renewed. */
static void test_cert_set_peers(void **state)
{
	static const char *const names[] = { "trainscope-nats.trainscope.svc",
					     "*.trainscope-nats-cluster.trainscope.svc" };
	const struct ts_cert_use peers = { names, 2, true };
	struct ts_cert_set s = { 0 }, c = { 0 };
	char why[256];
	X509 *leaf;

	(void)state;
	assert_int_equal(ts_cert_set_generate(&s, &peers, 365, why, sizeof(why)), 0);
	assert_int_equal(ts_cert_set_check(&s, &peers, time(NULL) + 60, why, sizeof(why)), 0);
	leaf = parse_cert(s.cert_pem);
	assert_int_equal(X509_check_host(leaf, "trainscope-nats-2.trainscope-nats-cluster.trainscope.svc",
					 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(leaf, "a.b.trainscope-nats-cluster.trainscope.svc", 0, 0,
					 NULL), 0);
	X509_free(leaf);
	assert_int_equal(ts_cert_set_generate(&c, &(struct ts_cert_use){ names, 1, false }, 365, why,
					      sizeof(why)), 0);
	assert_int_equal(ts_cert_set_ensure(&c, &peers, 365, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "does not name *.trainscope-nats-cluster.trainscope.svc"));
	ts_cert_set_free(&c);
	ts_cert_set_free(&s);
}

/* ts_cert_set_ensure on s (a copy): expect 0 (kept, unchanged) or 1 (replaced, for a
 * reason containing because, and the new set checks). */
static void ensure(const struct ts_cert_set *s, const struct ts_cert_use *use, unsigned days,
		   int expect, const char *because)
{
	struct ts_cert_set c;
	char why[256] = "";

	copy_set(&c, s);
	assert_int_equal(ts_cert_set_ensure(&c, use, days, why, sizeof(why)), expect);
	if (expect == 0) {
		assert_string_equal(c.ca_pem, s->ca_pem);
		assert_string_equal(c.cert_pem, s->cert_pem);
		assert_string_equal(c.key_pem, s->key_pem);
	} else {
		assert_non_null(strstr(why, because));
		assert_true(!s->cert_pem || strcmp(c.cert_pem, s->cert_pem));
		assert_int_equal(ts_cert_set_check(&c, use, time(NULL) + 60, why, sizeof(why)), 0);
	}
	ts_cert_set_free(&c);
}

static void test_cert_set_ensure(void **state)
{
	struct ts_cert_set none = { 0 }, a = { 0 }, b = { 0 }, soon = { 0 }, bad = { 0 };
	struct pem_pair self;
	char why[256];

	(void)state;
	assert_int_equal(ts_cert_set_generate(&a, &svc, 365, why, sizeof(why)), 0);
	assert_int_equal(ts_cert_set_generate(&b, &svc, 365, why, sizeof(why)), 0);
	assert_int_equal(ts_cert_set_generate(&soon, &svc, 10, why, sizeof(why)), 0);
	ensure(&none, &svc, 365, 1, "there is no ca.crt");
	ensure(&a, &svc, 365, 0, NULL);
	/* 10 days left: renewed for a 365-day validity (30 days ahead), kept for a 10-day
	 * one (half of it ahead) */
	ensure(&soon, &svc, 365, 1, "expires at");
	ensure(&soon, &svc, 10, 0, NULL);
	/* the key of another pair; a certificate of another CA; a CA that does not parse */
	copy_set(&bad, &a);
	replace_text(&bad.key_pem, b.key_pem);
	ensure(&bad, &svc, 365, 1, "does not match");
	replace_text(&bad.key_pem, a.key_pem);
	replace_text(&bad.ca_pem, b.ca_pem);
	ensure(&bad, &svc, 365, 1, "does not verify against ca.crt");
	replace_text(&bad.ca_pem, "-----BEGIN CERTIFICATE-----\nbroken\n");
	ensure(&bad, &svc, 365, 1, "ca.crt does not parse");
	/* a self-signed pair that is no CA's; tls.key missing */
	make_pair(&self, 400);
	replace_text(&bad.ca_pem, self.cert);
	replace_text(&bad.cert_pem, self.cert);
	replace_text(&bad.key_pem, self.key);
	ensure(&bad, &svc, 365, 1, "does not name trainscope-webhook.trainscope.svc");
	free(bad.key_pem);
	bad.key_pem = NULL;
	ensure(&bad, &svc, 365, 1, "there is no tls.key");
	/* another service's names */
	ensure(&a, &(struct ts_cert_use){ (const char *const[]){ "other.trainscope.svc" }, 1, false },
	       365, 1, "does not name other.trainscope.svc");
	ts_cert_set_free(&bad);
	ts_cert_set_free(&soon);
	ts_cert_set_free(&b);
	ts_cert_set_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_injects_and_keeps_user_values),
		cmocka_unit_test(test_long_env_values),
		cmocka_unit_test(test_nats_identity),
		cmocka_unit_test(test_only_first_container_by_default),
		cmocka_unit_test(test_container_names_annotation),
		cmocka_unit_test(test_container_names_none_found),
		cmocka_unit_test(test_restricted_security_context),
		cmocka_unit_test(test_ring_folder),
		cmocka_unit_test(test_qos_kept),
		cmocka_unit_test(test_chains_user_nccl_plugin),
		cmocka_unit_test(test_keeps_nccl_plugin_choices),
		cmocka_unit_test(test_chains_nccl_plugin_value_from),
		cmocka_unit_test(test_ascend_pod_like_gpu_pod),
		cmocka_unit_test(test_ascend_visible_devices_kept),
		cmocka_unit_test(test_opt_in_and_out),
		cmocka_unit_test(test_missed_pod),
		cmocka_unit_test(test_job_name_rules),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_cert_check),
		cmocka_unit_test(test_cert_rotation),
		cmocka_unit_test(test_cert_set_generate),
		cmocka_unit_test(test_cert_set_ensure),
		cmocka_unit_test(test_cert_set_peers),
	};
	return cmocka_run_group_tests_name("webhook mutation", tests, NULL, NULL);
}
