/* The webhook's patch applied to real pod shapes: what it adds, what it keeps, job
 * names, idempotency, and refusal of malformed reviews. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

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
 * the response envelope. */
static json_t *mutate(json_t *pod, const struct ts_inject_opts *o)
{
	json_t *rev = review(json_deep_copy(pod)), *root, *resp, *patch;
	char *in = json_dumps(rev, 0), *out = NULL;
	json_error_t err;

	assert_int_equal(ts_mutate(in, strlen(in), o, &out), 200);
	root = json_loads(out, 0, &err);
	resp = json_object_get(root, "response");
	assert_string_equal(json_string_value(json_object_get(resp, "uid")), "u-1");
	assert_true(json_is_true(json_object_get(resp, "allowed")));
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

static void test_injects_and_keeps_user_values(void **state)
{
	json_t *pod = training_pod(), *done = mutate(pod, &opts);
	json_t *spec = json_object_get(done, "spec"), *trainer, *init;

	(void)state;
	assert_non_null(done);
	trainer = json_array_get(json_object_get(spec, "containers"), 0);
	assert_string_equal(env_of(trainer, "LD_PRELOAD"), "/opt/jemalloc.so:/trainscope/lib/libtrainscope.so");
	assert_string_equal(env_of(trainer, "PYTHONPATH"), "/trainscope/python");
	assert_string_equal(env_of(trainer, "NCCL_PROFILER_PLUGIN"), "/trainscope/lib/libtrainscope.so");
	assert_string_equal(env_of(trainer, "TRAINSCOPE_JOB"), "llm");
	assert_string_equal(env_of(trainer, "TRAINSCOPE_RING_DIR"), "/trainscope-rings");
	assert_string_equal(env_of(trainer, "TRAINSCOPE_CONTAINER"), "trainer");
	/* every container gets it, even one without env */
	assert_string_equal(env_of(json_array_get(json_object_get(spec, "containers"), 1),
				   "LD_PRELOAD"), "/trainscope/lib/libtrainscope.so");
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

/* A user's own NCCL profiler plugin stays: ours is only the default. */
static void test_keeps_user_nccl_plugin(void **state)
{
	json_t *pod = json_pack("{s:{s:s, s:{s:s}}, s:{s:[{s:s, s:[{s:s, s:s}]}]}}", "metadata",
				"name", "p", "annotations", TS_ANNOT_INJECT, "true", "spec",
				"containers", "name", "c", "env", "name", "NCCL_PROFILER_PLUGIN",
				"value", "/opt/mine.so");
	json_t *done = mutate(pod, &opts), *c, *e;
	int n = 0;
	size_t i;

	(void)state;
	assert_non_null(done);
	c = json_array_get(json_object_get(json_object_get(done, "spec"), "containers"), 0);
	assert_string_equal(env_of(c, "NCCL_PROFILER_PLUGIN"), "/opt/mine.so");
	json_array_foreach(json_object_get(c, "env"), i, e)
		n += !strcmp(json_string_value(json_object_get(e, "name")), "NCCL_PROFILER_PLUGIN");
	assert_int_equal(n, 1);
	json_decref(pod);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_injects_and_keeps_user_values),
		cmocka_unit_test(test_keeps_user_nccl_plugin),
		cmocka_unit_test(test_opt_in_and_out),
		cmocka_unit_test(test_job_name_rules),
		cmocka_unit_test(test_malformed),
	};
	return cmocka_run_group_tests_name("webhook mutation", tests, NULL, NULL);
}
