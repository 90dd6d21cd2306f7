// SPDX-License-Identifier: Apache-2.0
#include "k8s.h"
#include "names.h"
#include "report.h"
#include "log.h"
#include "tsclock.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GROUP_PATH "/apis/trainscope.dev/v1alpha1"
#define CONFLICT_RETRIES 5

struct written {
	char ns[64], name[256], job[256];
	char pod[256];       /* a pod of the job, from the report's annotation */
	bool owned;          /* the report's owner is settled: set, or none to be had */
	bool made;           /* the report has existed: gone later, it was deleted */
	int gone_said;       /* "deleted" logged */
	char verdict[600];   /* state + summary last written */
	uint64_t at_ns;
	json_t *pending;     /* a status held back by the interval, written by ts_k8s_flush */
	uint8_t evented[8192]; /* a bit per rank: an Event was raised for this slow spell */
	bool unranked_evented; /* the processes with no rank have had their Events */
	bool stepless_evented; /* the ranks with no step have had theirs */
};

struct ts_k8s {
	struct ts_kube *kube;
	int min_interval_s;
	struct written **jobs; /* one per job published, until ts_k8s_forget */
	int njobs, capjobs;
	char host[64];
	struct ts_k8s_stats st;
};

void ts_k8s_stop_by(struct ts_k8s *k, uint64_t realtime_ns)
{
	ts_kube_stop_by(k->kube, realtime_ns);
}

int ts_k8s_new(struct ts_k8s **out, struct ts_kube *kube, int min_interval_s)
{
	struct ts_k8s *k = calloc(1, sizeof(*k));

	if (!k)
		return -ENOMEM;
	k->kube = kube;
	k->min_interval_s = min_interval_s > 0 ? min_interval_s : 10;
	gethostname(k->host, sizeof(k->host) - 1);
	*out = k;
	return 0;
}

void ts_k8s_free(struct ts_k8s *k)
{
	if (!k)
		return;
	for (int i = 0; i < k->njobs; i++) {
		json_decref(k->jobs[i]->pending);
		free(k->jobs[i]);
	}
	free(k->jobs);
	free(k);
}

void ts_k8s_get_stats(struct ts_k8s *k, struct ts_k8s_stats *out)
{
	*out = k->st;
}

static int written_index(struct ts_k8s *k, const char *ns, const char *name)
{
	for (int i = 0; i < k->njobs; i++)
		if (!strcmp(k->jobs[i]->ns, ns) && !strcmp(k->jobs[i]->name, name))
			return i;
	return -1;
}

/* The job's entry, made when new (the analyzer bounds how many jobs there are). */
static struct written *written_for(struct ts_k8s *k, const char *ns, const char *name)
{
	int i = written_index(k, ns, name);
	struct written *w;

	if (i >= 0)
		return k->jobs[i];
	if (k->njobs == k->capjobs) {
		int cap = k->capjobs ? 2 * k->capjobs : 16;
		struct written **nj = realloc(k->jobs, (size_t)cap * sizeof(*nj));
		if (!nj)
			return NULL;
		k->jobs = nj;
		k->capjobs = cap;
	}
	if (!(w = calloc(1, sizeof(*w))))
		return NULL;
	snprintf(w->ns, sizeof(w->ns), "%s", ns);
	snprintf(w->name, sizeof(w->name), "%s", name);
	k->jobs[k->njobs++] = w;
	return w;
}

const char *ts_k8s_jstr(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

/* GET a pod of the namespace (obj: it, or NULL); returns the HTTP status. */
static int get_pod(struct ts_k8s *k, const char *ns, const char *pod, json_t **obj)
{
	char path[512];

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, pod);
	return ts_kube_request(k->kube, "GET", path, NULL, NULL, obj);
}

/* Whether the pod is known to be gone (404). */
static bool pod_gone(struct ts_k8s *k, const char *ns, const char *pod)
{
	json_t *obj = NULL;
	int code = get_pod(k, ns, pod, &obj);

	json_decref(obj);
	return code == 404;
}

/* GET the object, creating it when absent the first time. Returns it (caller decrefs)
 * or NULL; *gone: it existed and was deleted since (with its owner, or by hand), or
 * its job's pod is gone before it was made, and it is not made again. */
static json_t *ensure_report(struct ts_k8s *k, struct written *w, bool *gone)
{
	const char *ns = w->ns, *name = w->name, *job = w->job;
	char path[512];
	json_t *obj = NULL;
	int code;

	*gone = false;
	snprintf(path, sizeof(path), GROUP_PATH "/namespaces/%s/slownodereports/%s", ns, name);
	code = ts_kube_request(k->kube, "GET", path, NULL, NULL, &obj);
	if (code == 200) {
		w->made = true;
		return obj;
	}
	json_decref(obj);
	if (code != 404)
		return NULL;
	if ((*gone = w->made))
		return NULL;
	/* a job restored after a restart whose pod was deleted meanwhile: its report went
	 * with the pod, and one made again would have no owner and stay for good */
	if (w->pod[0] && pod_gone(k, ns, w->pod)) {
		w->made = *gone = true;
		w->gone_said = 1;
		ts_info("k8s: SlowNodeReport %s/%s not made: the job's pod %s is gone", ns, name,
			w->pod);
		return NULL;
	}
	json_t *fresh = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:s}}", "apiVersion",
				  "trainscope.dev/v1alpha1", "kind", "SlowNodeReport", "metadata",
				  "name", name, "namespace", ns, "labels", "trainscope.dev/job", name,
				  "spec", "job", job);
	snprintf(path, sizeof(path), GROUP_PATH "/namespaces/%s/slownodereports", ns);
	code = ts_kube_request(k->kube, "POST", path, fresh, NULL, &obj);
	json_decref(fresh);
	if (code == 201 || code == 200) {
		w->made = true;
		k->st.created++;
		ts_info("k8s: created SlowNodeReport %s/%s", ns, name);
		return obj;
	}
	json_decref(obj);
	return NULL;
}

/* The controller among obj's owner references, or NULL (borrowed). */
static json_t *controller_ref(json_t *obj)
{
	json_t *r;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i, r)
		if (json_is_true(json_object_get(r, "controller")))
			return r;
	return NULL;
}

/* An owner's API path: its group version and its kind's plural as the training
 * operators name them (Job: jobs, JobSet: jobsets, PyTorchJob: pytorchjobs). */
static int owner_path(char *buf, size_t n, const char *ns, json_t *ref)
{
	const char *av = ts_k8s_jstr(ref, "apiVersion"), *kind = ts_k8s_jstr(ref, "kind");
	const char *name = ts_k8s_jstr(ref, "name");
	char plural[64];
	size_t i;
	int len;

	if (!*av || !*kind || strlen(kind) + 2 > sizeof(plural) || !ts_name_is_object(name))
		return -EINVAL;
	for (i = 0; kind[i]; i++)
		plural[i] = (char)tolower((unsigned char)kind[i]);
	plural[i] = 's', plural[i + 1] = 0;
	len = snprintf(buf, n, "%s%s/namespaces/%s/%s/%s", strchr(av, '/') ? "/apis/" : "/api/",
		       av, ns, plural, name);
	return len > 0 && (size_t)len < n ? 0 : -ENAMETOOLONG;
}

static json_t *owner_ref(const char *api_version, const char *kind, json_t *md_or_ref,
			 const char *name)
{
	return json_pack("{s:s, s:s, s:s, s:s}", "apiVersion", api_version, "kind", kind, "name",
			 name, "uid", ts_k8s_jstr(md_or_ref, "uid"));
}

/* What owns the training job: from a rank's pod up its controllers as far as the
 * analyzer may read them (a Job of a JobSet, a PyTorchJob), the pod itself when it has
 * none. Returns an owner reference (caller decrefs) or NULL; *settled: asking again
 * would answer the same. */
static json_t *job_owner(struct ts_k8s *k, const char *ns, const char *pod, bool *settled)
{
	char path[768];
	json_t *obj = NULL, *ref, *owner;
	int code;

	code = get_pod(k, ns, pod, &obj);
	*settled = code == 403 || code == 404;
	if (code != 200) {
		json_decref(obj);
		return NULL;
	}
	owner = owner_ref("v1", "Pod", json_object_get(obj, "metadata"), pod);
	for (int depth = 0; depth < 4 && (ref = controller_ref(obj)); depth++) {
		json_t *up = NULL;
		json_decref(owner);
		owner = owner_ref(ts_k8s_jstr(ref, "apiVersion"), ts_k8s_jstr(ref, "kind"), ref,
				  ts_k8s_jstr(ref, "name"));
		if (owner_path(path, sizeof(path), ns, ref) ||
		    ts_kube_request(k->kube, "GET", path, NULL, NULL, &up) != 200) {
			json_decref(up);
			break; /* one the analyzer may not read owns the report */
		}
		json_decref(obj);
		obj = up;
	}
	json_decref(obj);
	*settled = true;
	return owner;
}

/* Gives the report (obj, as read) an owner reference to the job's owner, so Kubernetes
 * deletes the report with the job. Returns obj as written, or obj unchanged. */
static json_t *own_report(struct ts_k8s *k, struct written *w, json_t *obj)
{
	json_t *md = json_object_get(obj, "metadata"), *owner, *answer = NULL;
	char path[512];

	if (json_array_size(json_object_get(md, "ownerReferences")) || !w->pod[0]) {
		w->owned = json_array_size(json_object_get(md, "ownerReferences")) > 0;
		return obj;
	}
	if (!(owner = job_owner(k, w->ns, w->pod, &w->owned))) {
		if (w->owned)
			ts_warn("k8s: SlowNodeReport %s/%s gets no owner: pod %s cannot be read "
				"(gone, or no RBAC to get pods); it stays after the job", w->ns,
				w->name, w->pod);
		return obj;
	}
	json_object_set_new(md, "ownerReferences", json_pack("[o]", owner));
	snprintf(path, sizeof(path), GROUP_PATH "/namespaces/%s/slownodereports/%s", w->ns, w->name);
	if (ts_kube_request(k->kube, "PUT", path, obj, NULL, &answer) == 200) {
		ts_info("k8s: SlowNodeReport %s/%s is owned by %s %s: deleted with it", w->ns,
			w->name, ts_k8s_jstr(owner, "kind"), ts_k8s_jstr(owner, "name"));
		json_decref(obj);
		return answer;
	}
	w->owned = false; /* a conflict or an error: tried again at the next write */
	json_decref(answer);
	json_object_del(md, "ownerReferences");
	return obj;
}

/* PUT the status with the object's resourceVersion; on a conflict, read it again. */
static int write_status(struct ts_k8s *k, struct written *w, json_t *status)
{
	const char *ns = w->ns, *name = w->name;
	char path[512];

	snprintf(path, sizeof(path), GROUP_PATH "/namespaces/%s/slownodereports/%s/status", ns, name);
	for (int attempt = 0; attempt < CONFLICT_RETRIES; attempt++) {
		bool gone;
		json_t *obj = ensure_report(k, w, &gone), *answer = NULL;
		if (!obj)
			return gone ? -ENOENT : -EIO;
		if (!w->owned)
			obj = own_report(k, w, obj);
		json_object_set(obj, "status", status);
		json_object_set_new(status, "observedGeneration",
				    json_copy(json_object_get(json_object_get(obj, "metadata"),
							      "generation")));
		int code = ts_kube_request(k->kube, "PUT", path, obj, NULL, &answer);
		json_decref(obj);
		json_decref(answer);
		if (code == 200) {
			k->st.status_updates++;
			return 0;
		}
		if (code != 409)
			return -EIO;
		k->st.conflicts++;
	}
	return -EAGAIN;
}

/* A rank's pod, as its batches name it, is a pod of that namespace: only then is it
 * the object of an Event (a forged batch must not raise Events on others' pods). */
static bool pod_exists(struct ts_k8s *k, const char *ns, const char *pod)
{
	return ts_name_is_object(pod) && get_pod(k, ns, pod, NULL) == 200;
}

/* A Warning Event on the pod, or on the report for a process outside Kubernetes; what
 * names a pod of another namespace is refused (what for is said in the warning). */
static void warn_pod(struct ts_k8s *k, const char *ns, const char *report, const char *pod,
		     const char *reason, const char *msg, const char *what, uint64_t now_ns)
{
	if (*pod && !pod_exists(k, ns, pod)) {
		if (!k->st.refused++)
			ts_warn("k8s: no Event for %s of %s/%s: its batches name pod %s, not a pod "
				"of that namespace (the first such refusal; "
				"trainscope_analyzer_k8s_refused_total counts them)", what, ns,
				report, pod);
		return;
	}
	struct ts_kube_event e = { .ns = ns, .api_version = *pod ? "v1" : "trainscope.dev/v1alpha1",
				   .kind = *pod ? "Pod" : "SlowNodeReport", .name = *pod ? pod : report,
				   .reason = reason, .message = msg,
				   .component = "trainscope-analyzer", .host = k->host,
				   .now_ns = now_ns };
	int code = ts_kube_warn(k->kube, &e);
	if (code == 201 || code == 200)
		k->st.events++;
	else
		k->st.errors++;
}

static void raise_event(struct ts_k8s *k, const char *ns, const char *report, json_t *slow,
			uint64_t now_ns)
{
	long long rank = (long long)json_integer_value(json_object_get(slow, "rank"));
	char msg[1024], what[32];

	snprintf(msg, sizeof(msg), "rank %lld is slow (%s, node %s): %s", rank,
		 ts_k8s_jstr(slow, "cause"), ts_k8s_jstr(slow, "node"),
		 ts_k8s_jstr(slow, "evidence"));
	snprintf(what, sizeof(what), "rank %lld", rank);
	warn_pod(k, ns, report, ts_k8s_jstr(slow, "pod"), "SlowRank", msg, what, now_ns);
}

/* Once per spell of the processes a report lists as unusable (status field list): each
 * of their pods (once) gets a Warning Event with the message of that condition (cond). */
static void listed_events(struct ts_k8s *k, struct written *w, json_t *status, const char *list_key,
			  const char *cond, const char *reason, bool *evented, uint64_t now_ns)
{
	json_t *list = json_object_get(status, list_key), *c, *u;
	const char *msg = reason, *seen[16];
	int nseen = 0;
	size_t i;

	if (!json_array_size(list) || *evented) {
		*evented = json_array_size(list) > 0;
		return;
	}
	*evented = true;
	json_array_foreach(json_object_get(status, "conditions"), i, c)
		if (!strcmp(ts_k8s_jstr(c, "type"), cond))
			msg = ts_k8s_jstr(c, "message");
	json_array_foreach(list, i, u) {
		const char *pod = ts_k8s_jstr(u, "pod");
		bool dup = false;
		for (int n = 0; n < nseen; n++)
			dup |= !strcmp(seen[n], pod);
		if (dup || nseen == 16)
			continue;
		seen[nseen++] = pod;
		warn_pod(k, w->ns, w->name, pod, reason, msg, reason, now_ns);
	}
}

/* Events once per slow spell of a rank: forgotten when the rank is no longer slow. */
static void events(struct ts_k8s *k, struct written *w, json_t *status, uint64_t now_ns)
{
	uint8_t now_slow[sizeof(w->evented)] = { 0 };
	json_t *s;
	size_t i;

	json_array_foreach(json_object_get(status, "slowRanks"), i, s) {
		json_int_t r = json_integer_value(json_object_get(s, "rank"));
		if (r < 0 || r >= (json_int_t)sizeof(w->evented) * 8)
			continue;
		now_slow[r / 8] |= (uint8_t)(1 << (r % 8));
		if (!(w->evented[r / 8] & (1 << (r % 8))))
			raise_event(k, w->ns, w->name, s, now_ns);
	}
	memcpy(w->evented, now_slow, sizeof(now_slow));
	listed_events(k, w, status, "unranked", "RanksKnown", "RankUnknown", &w->unranked_evented,
		      now_ns);
	listed_events(k, w, status, "stepless", "StepsFound", "NoSteps", &w->stepless_evented,
		      now_ns);
}

static void verdict_of(json_t *status, char *out, size_t n)
{
	snprintf(out, n, "%s|%s", ts_k8s_jstr(status, "state"), ts_k8s_jstr(status, "summary"));
}

/* Takes st (a copy of the report's status); one that fails stays pending, and
 * ts_k8s_flush tries it again after the interval. */
static void write_now(struct ts_k8s *k, struct written *w, json_t *st, uint64_t now_ns)
{
	int err;

	w->at_ns = now_ns;
	if ((err = write_status(k, w, st)) == -ENOENT) {
		if (!w->gone_said++)
			ts_info("k8s: SlowNodeReport %s/%s was deleted (with its owner, or by "
				"hand): not made again", w->ns, w->name);
		json_decref(st);
		return;
	}
	if (err) {
		k->st.errors++;
		ts_warn("k8s: could not write the status of %s/%s (tried again in %d s)", w->ns,
			w->name, k->min_interval_s);
		w->pending = st;
		return;
	}
	verdict_of(st, w->verdict, sizeof(w->verdict));
	events(k, w, st, now_ns);
	json_decref(st);
}

void ts_k8s_publish(struct ts_k8s *k, json_t *report, uint64_t now_ns)
{
	json_t *md = json_object_get(report, "metadata"), *status = json_object_get(report, "status");
	const char *ns = ts_k8s_jstr(md, "namespace"), *job = ts_k8s_jstr(md, "name");
	char name[256], verdict[600];
	struct written *w;

	ts_name_object(name, sizeof(name), job);
	if (!status)
		return;
	/* what a subject names is not a namespace of this cluster, or is one of its own */
	if (!ts_name_is_namespace(ns) || ts_name_is_system_namespace(ns)) {
		if (!k->st.refused++) /* a hostile producer may send many: the metric counts */
			ts_warn("k8s: no SlowNodeReport for job %s in namespace %s: %s (the first "
				"such refusal; trainscope_analyzer_k8s_refused_total counts them)", job,
				ns, ts_name_is_namespace(ns) ? "a system namespace" : "not a namespace name");
		return;
	}
	if (!(w = written_for(k, ns, name))) {
		k->st.errors++;
		ts_error("k8s: out of memory: the status of %s/%s is not written", ns, name);
		return;
	}
	snprintf(w->job, sizeof(w->job), "%s", job);
	const char *pod = ts_k8s_jstr(json_object_get(md, "annotations"), TS_REPORT_POD_ANNOTATION);
	if (!w->pod[0] && ts_name_is_object(pod))
		snprintf(w->pod, sizeof(w->pod), "%s", pod);
	verdict_of(status, verdict, sizeof(verdict));
	json_decref(w->pending);
	w->pending = NULL;
	/* an unchanged verdict waits for the interval, but its last state is never lost */
	if (!strcmp(verdict, w->verdict) &&
	    now_ns - w->at_ns < (uint64_t)k->min_interval_s * 1000000000ull) {
		w->pending = json_deep_copy(status);
		return;
	}
	write_now(k, w, json_deep_copy(status), now_ns);
}

void ts_k8s_flush(struct ts_k8s *k, uint64_t now_ns, bool all)
{
	for (int i = 0; i < k->njobs; i++) {
		struct written *w = k->jobs[i];
		if (!w->pending ||
		    (!all && now_ns - w->at_ns < (uint64_t)k->min_interval_s * 1000000000ull))
			continue;
		json_t *st = w->pending;
		w->pending = NULL;
		write_now(k, w, st, now_ns);
	}
}

void ts_k8s_forget(struct ts_k8s *k, const char *ns, const char *job, uint64_t now_ns)
{
	char name[256];
	int i;

	ts_name_object(name, sizeof(name), job);
	if ((i = written_index(k, ns, name)) < 0)
		return;
	if (k->jobs[i]->pending) { /* its last word first */
		json_t *st = k->jobs[i]->pending;
		k->jobs[i]->pending = NULL;
		write_now(k, k->jobs[i], st, now_ns);
	}
	free(k->jobs[i]);
	k->jobs[i] = k->jobs[--k->njobs];
}
