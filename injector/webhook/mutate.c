// SPDX-License-Identifier: Apache-2.0
#include "mutate.h"
#include "b64.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LIB_DIR "/trainscope"
#define RINGS_MOUNT "/trainscope-rings"
/* Made by the init container (user 65532), mode 3777: setgid, so every ring created
 * inside gets group 65532 and the library makes it 0660 for the relay (uid and gid
 * 65532) whatever the trainer's uid, never world readable; sticky, so only a ring's
 * owner or the folder's owner (the relay's uid) removes it. */
#define RING_DIR RINGS_MOUNT "/r"
#define LIB_PATH LIB_DIR "/lib/libtrainscope.so"
/* A literal $PLATFORM: glibc's loader expands this dynamic string token (x86_64,
 * haswell, xeon_phi, aarch64; the image has a link per platform to ../libtrainscope.so),
 * musl's does not, finds no such file and skips the preload silently: a musl program
 * runs unchanged instead of exiting 127 on a glibc library it cannot load. */
#define PRELOAD_PATH LIB_DIR "/lib/$PLATFORM/libtrainscope.so"
#define SHIM_DIR LIB_DIR "/python"
/* A user's own NCCL profiler plugin, loaded by the library behind its own */
#define CHAIN_ENV "TRAINSCOPE_NCCL_PROFILER_CHAIN"
#define INJECTED_UID 65532

static const char *str_at(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

const char *ts_pod_job(const void *pod_v)
{
	json_t *pod = (json_t *)pod_v, *md = json_object_get(pod, "metadata");
	json_t *ann = json_object_get(md, "annotations"), *labels = json_object_get(md, "labels");
	static const char *const label_keys[] = { "training.kubeflow.org/job-name",
						  "volcano.sh/job-name", "job-name",
						  "app.kubernetes.io/instance" };
	json_t *owner;
	size_t i;
	const char *v;

	if ((v = str_at(ann, TS_ANNOT_JOB)) && *v)
		return v;
	for (i = 0; i < sizeof(label_keys) / sizeof(label_keys[0]); i++)
		if ((v = str_at(labels, label_keys[i])) && *v)
			return v;
	json_array_foreach(json_object_get(md, "ownerReferences"), i, owner)
		if (json_is_true(json_object_get(owner, "controller")) && (v = str_at(owner, "name")))
			return v;
	return NULL;
}

/* JSON Pointer escaping (RFC 6901): '~' -> "~0", '/' -> "~1". */
static void pointer_key(char *out, size_t n, const char *key)
{
	size_t k = 0;

	for (; *key && k + 3 < n; key++) {
		if (*key == '~' || *key == '/') {
			out[k++] = '~';
			out[k++] = *key == '~' ? '0' : '1';
		} else {
			out[k++] = *key;
		}
	}
	out[k] = 0;
}

static void op(json_t *patch, const char *kind, const char *path, json_t *value)
{
	json_array_append_new(patch, json_pack("{s:s, s:s, s:o}", "op", kind, "path", path, "value",
					       value));
}

/* Appends value to the array at path, creating the array when it is missing. */
static void append(json_t *patch, json_t *parent, const char *key, const char *path,
		   json_t *value)
{
	char p[512];

	if (json_is_array(json_object_get(parent, key))) {
		snprintf(p, sizeof(p), "%s/-", path);
		op(patch, "add", p, value);
	} else {
		op(patch, "add", path, json_pack("[o]", value));
		/* later appends to the same array see it now */
		json_object_set_new(parent, key, json_array());
	}
}

static json_t *field_env(const char *name, const char *field)
{
	return json_pack("{s:s, s:{s:{s:s}}}", "name", name, "valueFrom", "fieldRef", "fieldPath",
			 field);
}

static json_t *identity_env(const char *job, const struct ts_inject_opts *o)
{
	return json_pack("[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}, o, o, o, o]", "name", "TRAINSCOPE_JOB",
			 "value", job, "name", "TRAINSCOPE_RING_DIR", "value", RING_DIR, "name",
			 "TRAINSCOPE_NATS_URL", "value", o->nats_url,
			 field_env("TRAINSCOPE_NAMESPACE", "metadata.namespace"),
			 field_env("TRAINSCOPE_POD", "metadata.name"),
			 field_env("TRAINSCOPE_POD_UID", "metadata.uid"),
			 field_env("TRAINSCOPE_NODE", "spec.nodeName"));
}

/* LD_PRELOAD is appended to, PYTHONPATH prepended to: the user's own values stay. */
static void chain_env(json_t *patch, json_t *c, const char *cpath, const char *name,
		      const char *ours, bool prepend)
{
	json_t *env = json_object_get(c, "env"), *e;
	char path[512];
	size_t i;

	json_array_foreach(env, i, e) {
		const char *old = str_at(e, "value");
		if (!str_at(e, "name") || strcmp(str_at(e, "name"), name))
			continue;
		if (!old) /* valueFrom: cannot be chained; ours goes first so the loader sees it */
			continue;
		/* any length: cutting the user's value, or ours, would break one of them */
		json_t *value = *old ? json_sprintf("%s:%s", prepend ? ours : old, prepend ? old : ours)
				     : json_string(ours);
		snprintf(path, sizeof(path), "%s/env/%zu/value", cpath, i);
		op(patch, "replace", path, value);
		return;
	}
	snprintf(path, sizeof(path), "%s/env", cpath);
	append(patch, c, "env", path, json_pack("{s:s, s:s}", "name", name, "value", ours));
}

/* A value naming the library, wherever it lies (LIB_PATH, a $PLATFORM link, a copy). */
static bool names_ours(const char *v)
{
	const char *slash = strrchr(v, '/');

	return !strcmp(slash ? slash + 1 : v, "libtrainscope.so");
}

/* NCCL loads one profiler plugin (NCCL's per-channel device times and per-peer sends;
 * without it the API hooks time collectives): ours. A user's own moves to CHAIN_ENV,
 * where the library loads it behind ours and feeds it every event it asks for; one
 * from valueFrom moves as it is. Left alone: ours already, "none" (NCCL's word for no
 * plugin), and a chain the user set up. */
static void profiler_env(json_t *patch, json_t *c, const char *cpath)
{
	json_t *e, *user = NULL, *from;
	const char *v;
	bool chained = false;
	char path[512];
	size_t i, at = 0;

	json_array_foreach(json_object_get(c, "env"), i, e) {
		const char *name = str_at(e, "name");
		if (name && !strcmp(name, CHAIN_ENV))
			chained = true;
		else if (name && !strcmp(name, "NCCL_PROFILER_PLUGIN"))
			user = e, at = i; /* of several, the last is what the container gets */
	}
	snprintf(path, sizeof(path), "%s/env", cpath);
	if (!user) {
		append(patch, c, "env", path,
		       json_pack("{s:s, s:s}", "name", "NCCL_PROFILER_PLUGIN", "value", LIB_PATH));
		return;
	}
	v = str_at(user, "value");
	from = json_object_get(user, "valueFrom");
	if (chained || (v && (names_ours(v) || !strcasecmp(v, "none"))))
		return;
	snprintf(path, sizeof(path), "%s/env/%zu", cpath, at);
	op(patch, "replace", path,
	   json_pack("{s:s, s:s}", "name", "NCCL_PROFILER_PLUGIN", "value", LIB_PATH));
	snprintf(path, sizeof(path), "%s/env", cpath);
	if (v && *v)
		append(patch, c, "env", path, json_pack("{s:s, s:s}", "name", CHAIN_ENV, "value", v));
	else if (!v && json_is_object(from))
		append(patch, c, "env", path, json_pack("{s:s, s:o}", "name", CHAIN_ENV, "valueFrom",
							json_deep_copy(from)));
	/* else empty: NCCL's default file name, nothing of the user's to keep */
}

static void patch_container(json_t *patch, json_t *c, size_t idx, const char *job,
			    const struct ts_inject_opts *o)
{
	char cpath[128], path[160];
	json_t *env = identity_env(job, o), *e;
	size_t i;

	snprintf(cpath, sizeof(cpath), "/spec/containers/%zu", idx);
	chain_env(patch, c, cpath, "LD_PRELOAD", PRELOAD_PATH, false);
	chain_env(patch, c, cpath, "PYTHONPATH", SHIM_DIR, true);
	profiler_env(patch, c, cpath);
	json_array_append_new(env, json_pack("{s:s, s:s}", "name", "TRAINSCOPE_CONTAINER", "value",
					     str_at(c, "name") ? str_at(c, "name") : ""));
	snprintf(path, sizeof(path), "%s/env", cpath);
	json_array_foreach(env, i, e)
		append(patch, c, "env", path, json_incref(e));
	json_decref(env);
	snprintf(path, sizeof(path), "%s/volumeMounts", cpath);
	append(patch, c, "volumeMounts", path,
	       json_pack("{s:s, s:s, s:b}", "name", "trainscope-lib", "mountPath", LIB_DIR,
			 "readOnly", 1));
	append(patch, c, "volumeMounts", path,
	       json_pack("{s:s, s:s}", "name", "trainscope-rings", "mountPath", RINGS_MOUNT));
}

/* What passes the Pod Security Standard "restricted". */
static json_t *restricted_security_context(void)
{
	return json_pack("{s:b, s:i, s:i, s:b, s:{s:[s]}, s:{s:s}, s:b}", "runAsNonRoot", 1,
			 "runAsUser", INJECTED_UID, "runAsGroup", INJECTED_UID,
			 "allowPrivilegeEscalation", 0, "capabilities", "drop", "ALL",
			 "seccompProfile", "type", "RuntimeDefault", "readOnlyRootFilesystem", 1);
}

static bool declares_resources(json_t *c)
{
	json_t *r = json_object_get(c, "resources");

	return json_object_size(json_object_get(r, "requests")) ||
	       json_object_size(json_object_get(r, "limits"));
}

/* A pod that declares no resources is BestEffort: ours must not change that. */
static bool pod_declares_resources(json_t *spec)
{
	static const char *const lists[] = { "containers", "initContainers" };
	json_t *c;
	size_t i, k;

	for (k = 0; k < 2; k++)
		json_array_foreach(json_object_get(spec, lists[k]), i, c)
			if (declares_resources(c))
				return true;
	return false;
}

/* Requests equal to limits, so that a Guaranteed pod stays Guaranteed; none at all for a
 * pod that declares none, so that a BestEffort pod stays BestEffort. */
static void set_resources(json_t *c, bool pod_has_resources, const char *cpu,
			  const char *memory)
{
	if (pod_has_resources)
		json_object_set_new(c, "resources",
				    json_pack("{s:{s:s, s:s}, s:{s:s, s:s}}", "requests", "cpu",
					      cpu, "memory", memory, "limits", "cpu", cpu,
					      "memory", memory));
}

static const char *or_default(const char *v, const char *def)
{
	return v && *v ? v : def;
}

/* cp -R, not -a: as uid 65532 the times of the root-owned emptyDir cannot be set. */
static json_t *init_container(bool pod_has_resources, const struct ts_inject_opts *o)
{
	json_t *c = json_pack("{s:s, s:s, s:[s, s, s], s:[{s:s, s:s}, {s:s, s:s}], s:o}", "name",
			      "trainscope-init", "image", o->image, "command", "/bin/sh", "-c",
			      "cp -R /opt/trainscope/. " LIB_DIR "/ && mkdir -p " RING_DIR
			      " && chmod 3777 " RING_DIR,
			      "volumeMounts", "name", "trainscope-lib", "mountPath", LIB_DIR,
			      "name", "trainscope-rings", "mountPath", RINGS_MOUNT,
			      "securityContext", restricted_security_context());

	set_resources(c, pod_has_resources, or_default(o->init_cpu, TS_INIT_CPU_DEFAULT),
		      or_default(o->init_memory, TS_INIT_MEMORY_DEFAULT));
	return c;
}

/* The relay as a native sidecar: an init container that keeps running. */
static json_t *relay_container(bool pod_has_resources, const char *job,
			       const struct ts_inject_opts *o)
{
	json_t *c = json_pack("{s:s, s:s, s:s, s:[s], s:[s, s, s, s], s:o, s:[{s:s, s:s}], s:o}",
			      "name", "trainscope-relay", "image", o->image, "restartPolicy",
			      "Always", "command", "/usr/local/bin/trainscope-relay", "args",
			      "--ring-dir", RING_DIR, "--nats", o->nats_url, "env",
			      identity_env(job, o), "volumeMounts", "name", "trainscope-rings",
			      "mountPath", RINGS_MOUNT, "securityContext",
			      restricted_security_context());

	if (o->nats_audience) { /* its identity for NATS: this pod's token, for that audience */
		json_t *env = json_object_get(c, "env");
		json_array_append_new(env, json_pack("{s:s, s:s}", "name", "TRAINSCOPE_NATS_TOKEN_FILE",
						     "value", TS_NATS_TOKEN_DIR "/token"));
		json_array_append_new(json_object_get(c, "volumeMounts"),
				      json_pack("{s:s, s:s, s:b}", "name", "trainscope-nats-token",
						"mountPath", TS_NATS_TOKEN_DIR, "readOnly", 1));
	}
	if (o->nats_ca_pem)
		json_array_append_new(json_object_get(c, "env"),
				      json_pack("{s:s, s:s}", "name", "TRAINSCOPE_NATS_CA_PEM", "value",
						o->nats_ca_pem));
	set_resources(c, pod_has_resources, or_default(o->relay_cpu, TS_RELAY_CPU_DEFAULT),
		      or_default(o->relay_memory, TS_RELAY_MEMORY_DEFAULT));
	return c;
}

/* A token the kubelet makes for the pod's ServiceAccount and renews: bound to the pod
 * (so NATS learns its namespace, pod and node), for trainscope's audience only. */
static json_t *nats_token_volume(const struct ts_inject_opts *o)
{
	return json_pack("{s:s, s:{s:[{s:{s:s, s:i, s:s}}]}}", "name", "trainscope-nats-token",
			 "projected", "sources", "serviceAccountToken", "audience", o->nats_audience,
			 "expirationSeconds", TS_NATS_TOKEN_S, "path", "token");
}

static bool wants_injection(json_t *pod, const struct ts_inject_opts *o)
{
	json_t *ann = json_object_get(json_object_get(pod, "metadata"), "annotations");
	const char *v = str_at(ann, TS_ANNOT_INJECT);

	if (v)
		return !strcmp(v, "true");
	return o->namespace_opt_in;
}

static bool already_injected(json_t *pod)
{
	json_t *ann = json_object_get(json_object_get(pod, "metadata"), "annotations"), *c;
	size_t i;

	if (str_at(ann, TS_ANNOT_INJECTED))
		return true;
	json_array_foreach(json_object_get(json_object_get(pod, "spec"), "initContainers"), i, c)
		if (str_at(c, "name") && !strcmp(str_at(c, "name"), "trainscope-relay"))
			return true;
	return false;
}

/* Marks in sel the containers named by the annotation: a name that matches none is
 * skipped with a warning. Returns false when the annotation names no container at all
 * (empty, or only separators): the first container is then the default. */
static bool select_named(json_t *containers, const char *names, bool *sel, json_t *warnings)
{
	char *list = strdup(names), *save = NULL, *name;
	bool any_name = false;
	json_t *c;
	size_t i;

	if (!list)
		return false;
	for (name = strtok_r(list, ", \t", &save); name; name = strtok_r(NULL, ", \t", &save)) {
		bool found = false;
		any_name = true;
		json_array_foreach(containers, i, c)
			if (str_at(c, "name") && !strcmp(str_at(c, "name"), name))
				sel[i] = found = true;
		if (!found)
			json_array_append_new(warnings, json_sprintf("trainscope: container \"%s\" of "
				TS_ANNOT_CONTAINER_NAMES " not found, skipped", name));
	}
	free(list);
	return any_name;
}

/* The containers to instrument (sel[i] for containers[i]): those the annotation names,
 * else the first. Returns how many; NULL sel when out of memory. */
static size_t select_containers(json_t *pod, json_t *containers, bool **sel, json_t *warnings)
{
	json_t *ann = json_object_get(json_object_get(pod, "metadata"), "annotations");
	const char *names = str_at(ann, TS_ANNOT_CONTAINER_NAMES);
	size_t i, n = json_array_size(containers), count = 0;

	if (!(*sel = calloc(n + 1, sizeof(**sel))))
		return 0;
	if (!names || !select_named(containers, names, *sel, warnings))
		(*sel)[0] = n > 0;
	for (i = 0; i < n; i++)
		count += (*sel)[i] && json_is_object(json_array_get(containers, i));
	return count;
}

bool ts_pod_asks(const void *pod_v, bool namespace_opt_in)
{
	json_t *pod = (json_t *)pod_v;
	struct ts_inject_opts o = { .namespace_opt_in = namespace_opt_in };

	return json_is_object(pod) && wants_injection(pod, &o) && !already_injected(pod);
}

/* Whether the pod asks for trainscope and does not have it: a patch is due. */
static bool patch_due(json_t *pod, const struct ts_inject_opts *o)
{
	json_t *spec = json_object_get(pod, "spec");

	return ts_pod_asks(pod, o->namespace_opt_in) && json_is_object(spec) &&
	       json_is_array(json_object_get(spec, "containers"));
}

bool ts_pod_would_inject(const void *pod_v, bool namespace_opt_in)
{
	json_t *pod = (json_t *)pod_v, *warnings;
	struct ts_inject_opts o = { .namespace_opt_in = namespace_opt_in };
	bool *sel = NULL, due;

	if (!patch_due(pod, &o)) /* not an object either */
		return false;
	warnings = json_array();
	due = select_containers(pod, json_object_get(json_object_get(pod, "spec"), "containers"),
				&sel, warnings) > 0;
	free(sel);
	json_decref(warnings);
	return due;
}

/* The patch for a pod; NULL when there is nothing to do. */
static json_t *pod_patch(json_t *pod, const struct ts_inject_opts *o, json_t *warnings)
{
	json_t *patch, *spec = json_object_get(pod, "spec"), *md = json_object_get(pod, "metadata");
	json_t *containers = json_object_get(spec, "containers"), *c;
	const char *job = ts_pod_job(pod);
	char key[128], path[192];
	bool *sel, has_resources;
	size_t i;

	if (!patch_due(pod, o))
		return NULL;
	if (!select_containers(pod, containers, &sel, warnings)) {
		if (sel)
			json_array_append_new(warnings, json_string(TS_WARN_UNCHANGED));
		free(sel);
		return NULL;
	}
	if (!job) /* a bare pod: its own name, or the prefix of a generated one */
		job = str_at(md, "name") ? str_at(md, "name") : str_at(md, "generateName");
	if (!job || !*job)
		job = "unnamed";
	has_resources = pod_declares_resources(spec);
	patch = json_array();
	if (!json_is_object(json_object_get(md, "annotations")))
		op(patch, "add", "/metadata/annotations", json_object());
	pointer_key(key, sizeof(key), TS_ANNOT_INJECTED);
	snprintf(path, sizeof(path), "/metadata/annotations/%s", key);
	op(patch, "add", path, json_string("true"));
	append(patch, spec, "volumes", "/spec/volumes",
	       json_pack("{s:s, s:{}}", "name", "trainscope-lib", "emptyDir"));
	append(patch, spec, "volumes", "/spec/volumes",
	       json_pack("{s:s, s:{s:s}}", "name", "trainscope-rings", "emptyDir", "medium", "Memory"));
	if (o->nats_audience)
		append(patch, spec, "volumes", "/spec/volumes", nats_token_volume(o));
	append(patch, spec, "initContainers", "/spec/initContainers",
	       init_container(has_resources, o));
	append(patch, spec, "initContainers", "/spec/initContainers",
	       relay_container(has_resources, job, o));
	json_array_foreach(containers, i, c)
		if (sel[i] && json_is_object(c))
			patch_container(patch, c, i, job, o);
	free(sel);
	return patch;
}

/* The patch goes base64-encoded into the response; takes the reference to patch. */
static void set_patch(json_t *resp, json_t *patch)
{
	char *text = json_dumps(patch, JSON_COMPACT), *enc = text ? ts_b64_encode(text) : NULL;

	if (enc) {
		json_object_set_new(resp, "patchType", json_string("JSONPatch"));
		json_object_set_new(resp, "patch", json_string(enc));
	}
	free(text);
	free(enc);
	json_decref(patch);
}

static int reply(json_t *response, char **out)
{
	json_t *review = json_pack("{s:s, s:s, s:o}", "apiVersion", "admission.k8s.io/v1", "kind",
				   "AdmissionReview", "response", response);

	*out = json_dumps(review, JSON_COMPACT);
	json_decref(review);
	return 200;
}

static int refuse(const char *why, char **out)
{
	json_t *r = json_pack("{s:s, s:b, s:{s:i, s:s}}", "uid", "", "allowed", 0, "status", "code",
			      400, "message", why);

	reply(r, out);
	return 400;
}

int ts_mutate(const char *body, size_t len, const struct ts_inject_opts *o, char **out)
{
	json_error_t err;
	json_t *review = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);
	json_t *req = json_object_get(review, "request"), *pod, *patch, *resp, *warnings;
	const char *uid = str_at(req, "uid"), *kind;
	char why[256];

	*out = NULL;
	if (!review || !json_is_object(review)) {
		snprintf(why, sizeof(why), "not JSON: %s (line %d)", err.text, err.line);
		json_decref(review);
		return refuse(why, out);
	}
	if (!json_is_object(req) || !uid) {
		json_decref(review);
		return refuse("not an AdmissionReview: request.uid is missing", out);
	}
	resp = json_pack("{s:s, s:b}", "uid", uid, "allowed", 1);
	kind = str_at(json_object_get(req, "kind"), "kind");
	pod = json_object_get(req, "object");
	warnings = json_array();
	/* never block a pod: anything unexpected is allowed unchanged, with a warning */
	if (!kind || strcmp(kind, "Pod") || !json_is_object(pod))
		json_array_append_new(warnings, json_string("trainscope: not a pod, left unchanged"));
	else if ((patch = pod_patch(pod, o, warnings)))
		set_patch(resp, patch);
	if (json_array_size(warnings))
		json_object_set(resp, "warnings", warnings);
	json_decref(warnings);
	json_decref(review);
	return reply(resp, out);
}
