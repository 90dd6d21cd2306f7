// SPDX-License-Identifier: Apache-2.0
/* Kubernetes mode, node health: SlowNode objects, node conditions and Events, taints
 * by policy (k8s_nodes.h). Every call is the writer thread's; nothing here blocks the
 * analysis. */
#include "k8s_nodes.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "log.h"
#include "opts.h"
#include "tsclock.h"

#define GROUP_PATH "/apis/trainscope.dev/v1alpha1"
#define RETRIES 4

struct node_state {
	char node[TS_NH_NODE];
	bool written, condition, tainted, seen;
	bool learned; /* condition and tainted read from the Node (another analyzer, or this
		       * one before a restart, may have set them) */
	char action[160];
};

struct ts_k8s_nodes {
	struct ts_kube *kube;
	struct ts_node_policy p;
	char host[128];
	struct node_state *st;
	int n, cap;
	bool discovered; /* what an earlier analyzer left (SlowNodes, taints) was read */
	struct ts_node_stats stats;
	/* the share guard's counts: the nodes listed at most every NODE_COUNT_S (12,500
	 * nodes each round was the cost of one held-back node), our own taints counted at once */
	int total, tainted;
	uint64_t counted_ns;
	bool counted;
};

#define NODE_COUNT_S 60

void ts_node_policy_default(struct ts_node_policy *p)
{
	*p = (struct ts_node_policy){ .sz = sizeof(*p), .effect = "PreferNoSchedule",
				      .max_share = 0.1, .causes = "Device", .conditions = true };
}

int ts_node_policy_check(const struct ts_node_policy *p, char *err, size_t errlen)
{
	if (!p || p->sz < sizeof(*p))
		return snprintf(err, errlen, "node policy: an older struct"), -EINVAL;
	if (!p->effect || (strcmp(p->effect, "PreferNoSchedule") && strcmp(p->effect, "NoSchedule")))
		return snprintf(err, errlen, "node policy: effect '%s' is not PreferNoSchedule or "
				"NoSchedule", p->effect ? p->effect : ""), -EINVAL;
	if (!(p->max_share >= 0 && p->max_share <= 1))
		return snprintf(err, errlen, "node policy: max share %g is not from 0 to 1",
				p->max_share), -EINVAL;
	return 0;
}

int ts_k8s_nodes_new(struct ts_k8s_nodes **out, struct ts_kube *kube,
		     const struct ts_node_policy *p, const char *host)
{
	char err[160];
	struct ts_k8s_nodes *k;

	*out = NULL;
	if (ts_node_policy_check(p, err, sizeof(err)))
		return -EINVAL;
	if (!(k = calloc(1, sizeof(*k))))
		return -ENOMEM;
	k->kube = kube;
	k->p = *p;
	snprintf(k->host, sizeof(k->host), "%s", host ? host : "");
	*out = k;
	return 0;
}

void ts_k8s_nodes_free(struct ts_k8s_nodes *k)
{
	if (!k)
		return;
	free(k->st);
	free(k);
}

void ts_k8s_nodes_stats(struct ts_k8s_nodes *k, struct ts_node_stats *out)
{
	*out = k->stats;
}

bool ts_node_is_mine(const char *node, int partition, int partitions)
{
	return partitions <= 1 || (int)(ts_fnv1a(node, strlen(node)) % (uint64_t)partitions) == partition;
}

static struct node_state *state_of(struct ts_k8s_nodes *k, const char *node)
{
	for (int i = 0; i < k->n; i++)
		if (!strcmp(k->st[i].node, node))
			return &k->st[i];
	if (k->n == k->cap) {
		int cap = k->cap ? 2 * k->cap : 32;
		struct node_state *grown = realloc(k->st, (size_t)cap * sizeof(*grown));
		if (!grown)
			return NULL;
		k->st = grown, k->cap = cap;
	}
	struct node_state *s = &k->st[k->n++];
	memset(s, 0, sizeof(*s));
	snprintf(s->node, sizeof(s->node), "%s", node);
	return s;
}

/* The evidence in words: the score and the heaviest jobs. */
static void message(const struct ts_nh_node *v, char *out, size_t n)
{
	size_t at = (size_t)snprintf(out, n, "named by %d job%s, score %.2f:", v->njobs,
				     v->njobs == 1 ? "" : "s", v->score);

	for (int i = 0; i < v->nshown && at < n; i++)
		at += (size_t)snprintf(out + at, n - at, "%s %s/%s %s%s%s", i ? "," : "",
				       v->jobs[i].ns, v->jobs[i].job, v->jobs[i].cause,
				       v->jobs[i].device[0] ? " on " : "", v->jobs[i].device);
}

/* The SlowNode's object, made when missing; NULL when the API server would not. */
static json_t *slownode(struct ts_k8s_nodes *k, const char *node)
{
	char path[256];
	json_t *obj = NULL;
	int code;

	snprintf(path, sizeof(path), GROUP_PATH "/slownodes/%s", node);
	if ((code = ts_kube_request(k->kube, "GET", path, NULL, NULL, &obj)) == 200)
		return obj;
	json_decref(obj);
	obj = NULL;
	if (code != 404)
		return NULL;
	json_t *fresh = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{}}", "apiVersion",
				  "trainscope.dev/v1alpha1", "kind", "SlowNode", "metadata", "name",
				  node, "labels", "app.kubernetes.io/managed-by", "trainscope",
				  "spec");
	code = ts_kube_request(k->kube, "POST", GROUP_PATH "/slownodes", fresh, NULL, &obj);
	json_decref(fresh);
	if (code == 201 || code == 200)
		return obj;
	json_decref(obj);
	return NULL;
}

/* A write that names the resourceVersion it read: tried again while another writer's
 * change came between (409). The attempt returns the HTTP status or -EIO. */
struct write_try {
	int (*attempt)(struct ts_k8s_nodes *k, const void *arg);
	const void *arg;
};

static int until_no_conflict(struct ts_k8s_nodes *k, struct write_try t)
{
	for (int i = 0; i < RETRIES; i++) {
		int code = t.attempt(k, t.arg);
		if (code == 200)
			return 0;
		if (code != 409)
			return -EIO;
	}
	return -EAGAIN;
}

struct slownode_write {
	const struct ts_nh_node *v;
	const char *action, *msg;
};

static int put_slownode(struct ts_k8s_nodes *k, const void *arg)
{
	const struct slownode_write *w = arg;
	char path[256];
	json_t *obj = slownode(k, w->v->node), *st = ts_nh_node_json(w->v);
	int code;

	if (!obj || !st) {
		json_decref(obj), json_decref(st);
		return -EIO;
	}
	snprintf(path, sizeof(path), GROUP_PATH "/slownodes/%s/status", w->v->node);
	json_object_set_new(st, "action", json_string(w->action));
	json_object_set_new(st, "message", json_string(w->msg));
	json_object_set_new(obj, "status", st);
	code = ts_kube_request(k->kube, "PUT", path, obj, NULL, NULL);
	json_decref(obj);
	return code;
}

static int write_slownode(struct ts_k8s_nodes *k, const struct ts_nh_node *v, const char *action,
			  const char *msg)
{
	struct slownode_write w = { v, action, msg };

	return until_no_conflict(k, (struct write_try){ put_slownode, &w });
}

static void delete_slownode(struct ts_k8s_nodes *k, const char *node)
{
	char path[256];
	int code;

	snprintf(path, sizeof(path), GROUP_PATH "/slownodes/%s", node);
	code = ts_kube_request(k->kube, "DELETE", path, NULL, NULL, NULL);
	if (code == 200 || code == 202 || code == 404)
		k->stats.slownodes_deleted++;
	else
		k->stats.errors++;
}

/* The node's TrainscopeDegraded condition, by a strategic merge (conditions merge by
 * type: the kubelet's own are left alone). */
static int set_condition(struct ts_k8s_nodes *k, const char *node, bool on, const char *reason,
			 const char *msg, uint64_t now_ns)
{
	char path[256], stamp[32];
	json_t *patch;
	int code;

	ts_rfc3339(now_ns, stamp);
	snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", node);
	patch = json_pack("{s:{s:[{s:s, s:s, s:s, s:s, s:s, s:s}]}}", "status", "conditions",
			  "type", TS_NODE_CONDITION, "status", on ? "True" : "False", "reason",
			  *reason ? reason : "Clean", "message", msg, "lastHeartbeatTime", stamp,
			  "lastTransitionTime", stamp);
	code = ts_kube_request(k->kube, "PATCH", path, patch,
			       "application/strategic-merge-patch+json", NULL);
	json_decref(patch);
	return code == 200 ? 0 : -EIO;
}

static void node_event(struct ts_k8s_nodes *k, const char *node, bool warn, const char *reason,
		       const char *msg, uint64_t now_ns)
{
	struct ts_kube_event e = { .ns = "default", .api_version = "v1", .kind = "Node",
				   .name = node, .reason = reason, .message = msg,
				   .component = "trainscope-analyzer", .host = k->host,
				   .now_ns = now_ns, .type = warn ? "Warning" : "Normal",
				   .cluster_scoped = 1 };

	if (ts_kube_warn(k->kube, &e) == 201)
		k->stats.events++;
	else
		k->stats.errors++;
}

static bool has_taint(json_t *node)
{
	json_t *t;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(node, "spec"), "taints"), i, t)
		if (!strcmp(json_string_value(json_object_get(t, "key")) ?: "", TS_NODE_TAINT_KEY))
			return true;
	return false;
}

struct taint_write {
	const char *node, *cause; /* cause NULL: remove */
};

/* Our taint set or removed by a merge patch of the whole list that names the
 * resourceVersion read. */
static int patch_taint(struct ts_k8s_nodes *k, const void *arg)
{
	const struct taint_write *w = arg;
	char path[256];
	json_t *obj = NULL, *taints = json_array(), *t, *patch;
	size_t i;
	int code;

	snprintf(path, sizeof(path), "/api/v1/nodes/%s", w->node);
	if (ts_kube_request(k->kube, "GET", path, NULL, NULL, &obj) != 200) {
		json_decref(obj), json_decref(taints);
		return -EIO;
	}
	json_array_foreach(json_object_get(json_object_get(obj, "spec"), "taints"), i, t)
		if (strcmp(json_string_value(json_object_get(t, "key")) ?: "", TS_NODE_TAINT_KEY))
			json_array_append(taints, t);
	if (w->cause)
		json_array_append_new(taints, json_pack("{s:s, s:s, s:s}", "key", TS_NODE_TAINT_KEY,
							"value", w->cause, "effect", k->p.effect));
	patch = json_pack("{s:{s:O}, s:{s:o}}", "metadata", "resourceVersion",
			  json_object_get(json_object_get(obj, "metadata"), "resourceVersion"),
			  "spec", "taints", taints);
	code = ts_kube_request(k->kube, "PATCH", path, patch, "application/merge-patch+json", NULL);
	json_decref(patch), json_decref(obj);
	return code;
}

/* Sets (cause non-NULL) or removes our taint; a change made meanwhile is retried. */
static int set_taint(struct ts_k8s_nodes *k, const char *node, const char *cause)
{
	struct taint_write w = { node, cause };

	return until_no_conflict(k, (struct write_try){ patch_taint, &w });
}

/* GPU (or NPU) nodes, all nodes where none has one, and those of them with our taint. */
static int count_nodes(struct ts_k8s_nodes *k, int *total, int *tainted)
{
	json_t *list = NULL, *n;
	size_t i;
	int all = 0, all_tainted = 0, acc = 0, acc_tainted = 0;

	/* resourceVersion=0: from the API server's cache, not a read of etcd */
	if (ts_kube_request(k->kube, "GET", "/api/v1/nodes?resourceVersion=0", NULL, NULL,
			    &list) != 200) {
		json_decref(list);
		return -EIO;
	}
	json_array_foreach(json_object_get(list, "items"), i, n) {
		json_t *alloc = json_object_get(json_object_get(n, "status"), "allocatable");
		const char *key;
		json_t *val;
		bool accel = false, mine = has_taint(n);
		json_object_foreach(alloc, key, val)
			if ((!strcmp(key, "nvidia.com/gpu") || !strncmp(key, "huawei.com/", 11)) &&
			    strcmp(json_string_value(val) ?: "0", "0"))
				accel = true;
		all++, all_tainted += mine;
		acc += accel, acc_tainted += accel && mine;
	}
	json_decref(list);
	*total = acc ? acc : all;
	*tainted = acc ? acc_tainted : all_tainted;
	return 0;
}

/* count_nodes's figures, listed again when NODE_COUNT_S old. */
static int counts(struct ts_k8s_nodes *k, uint64_t now_ns, int *total, int *tainted)
{
	if (!k->counted || now_ns < k->counted_ns ||
	    now_ns - k->counted_ns >= (uint64_t)NODE_COUNT_S * 1000000000ull) {
		if (count_nodes(k, &k->total, &k->tainted))
			return -EIO;
		k->counted = true, k->counted_ns = now_ns;
	}
	*total = k->total, *tainted = k->tainted;
	return 0;
}

/* What the policy does with a degraded node: its action, in words, into s->action;
 * said in the log when it changes (a held-back node is looked at every round). */
static void remediate(struct ts_k8s_nodes *k, struct node_state *s, const struct ts_nh_node *v,
		      uint64_t now_ns)
{
	char was[sizeof(s->action)];
	int total, tainted;

	memcpy(was, s->action, sizeof(was));

	if (!k->p.taint || s->tainted) {
		snprintf(s->action, sizeof(s->action), "%s",
			 s->tainted ? "tainted" : "none (report only)");
		return;
	}
	if (!ts_opt_list_has(k->p.causes, v->cause)) {
		snprintf(s->action, sizeof(s->action), "none: cause %s does not taint", v->cause);
		return;
	}
	if (counts(k, now_ns, &total, &tainted)) {
		k->stats.errors++;
		snprintf(s->action, sizeof(s->action), "none: the nodes could not be listed");
		return;
	}
	if (tainted + 1 > k->p.max_share * total + 1e-9) {
		k->stats.held_back++;
		snprintf(s->action, sizeof(s->action),
			 "held back: %d of %d nodes tainted, at most %.0f%% at once", tainted, total,
			 100 * k->p.max_share);
		if (strcmp(was, s->action))
			ts_warn("analyzer: node %s degraded (%s) but not tainted: %s", v->node,
				v->cause, s->action);
		return;
	}
	if (k->p.dry_run) {
		k->stats.would_taint++;
		snprintf(s->action, sizeof(s->action), "would taint %s=%s:%s (dry run)",
			 TS_NODE_TAINT_KEY, v->cause, k->p.effect);
		if (strcmp(was, s->action))
			ts_info("analyzer: dry run: would taint node %s %s=%s:%s", v->node,
				TS_NODE_TAINT_KEY, v->cause, k->p.effect);
		return;
	}
	if (set_taint(k, v->node, v->cause)) {
		k->stats.errors++;
		snprintf(s->action, sizeof(s->action), "none: the taint was refused");
		if (strcmp(was, s->action))
			ts_warn("analyzer: node %s: the API server refused its taint", v->node);
		return;
	}
	s->tainted = true;
	k->tainted++;
	k->stats.tainted++;
	snprintf(s->action, sizeof(s->action), "tainted %s=%s:%s", TS_NODE_TAINT_KEY, v->cause,
		 k->p.effect);
	ts_warn("analyzer: node %s tainted %s=%s:%s", v->node, TS_NODE_TAINT_KEY, v->cause,
		k->p.effect);
}

/* The node is clean (or not degraded any more): its taint and condition go. */
static void recover(struct ts_k8s_nodes *k, struct node_state *s, const char *msg,
		    uint64_t now_ns)
{
	if (s->tainted && !set_taint(k, s->node, NULL)) {
		s->tainted = false;
		k->tainted -= k->tainted > 0;
		k->stats.untainted++;
		ts_info("analyzer: node %s untainted", s->node);
	}
	if (s->condition && k->p.conditions && !set_condition(k, s->node, false, "", msg, now_ns)) {
		s->condition = false;
		k->stats.conditions_set++;
		node_event(k, s->node, false, "TrainscopeRecovered", msg, now_ns);
	}
}

/* Our condition's status on a Node object: true for True. */
static bool condition_on(json_t *node)
{
	json_t *c;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), i, c)
		if (!strcmp(json_string_value(json_object_get(c, "type")) ?: "", TS_NODE_CONDITION))
			return !strcmp(json_string_value(json_object_get(c, "status")) ?: "", "True");
	return false;
}

/* What the Node says of us: our taint, our condition True. Read once per node: what we
 * set later we know. Without the rights (remediation off) both stay false. */
static void learn(struct ts_k8s_nodes *k, struct node_state *s)
{
	char path[256];
	json_t *obj = NULL;

	if (s->learned || !k->p.conditions)
		return;
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", s->node);
	if (ts_kube_request(k->kube, "GET", path, NULL, NULL, &obj) == 200) {
		s->tainted = has_taint(obj), s->condition = condition_on(obj);
		s->learned = true;
	}
	json_decref(obj);
}

static void sync_one(struct ts_k8s_nodes *k, const struct ts_nh_node *v, uint64_t now_ns)
{
	struct node_state *s = state_of(k, v->node);
	char msg[512];

	if (!s)
		return;
	s->seen = true;
	learn(k, s);
	message(v, msg, sizeof(msg));
	if (v->degraded) {
		if (!s->condition && k->p.conditions &&
		    !set_condition(k, v->node, true, v->cause, msg, now_ns)) {
			s->condition = true;
			k->stats.conditions_set++;
			node_event(k, v->node, true, TS_NODE_CONDITION, msg, now_ns);
		}
		remediate(k, s, v, now_ns);
	} else {
		recover(k, s, msg, now_ns);
		snprintf(s->action, sizeof(s->action), "none");
	}
	if (write_slownode(k, v, s->action, msg))
		k->stats.errors++;
	else
		s->written = true, k->stats.slownodes_written++;
}

/* What an analyzer before this one left: its SlowNodes, and (with the rights) the nodes
 * that carry our taint or our condition True, so that they are cleared when clean. */
static void discover(struct ts_k8s_nodes *k)
{
	json_t *list = NULL, *o;
	size_t i;

	if (ts_kube_request(k->kube, "GET", GROUP_PATH "/slownodes", NULL, NULL, &list) != 200) {
		json_decref(list);
		return; /* tried again next round */
	}
	json_array_foreach(json_object_get(list, "items"), i, o) {
		const char *name = json_string_value(json_object_get(json_object_get(o, "metadata"),
								     "name"));
		struct node_state *s = name ? state_of(k, name) : NULL;
		if (s)
			s->written = true;
	}
	json_decref(list);
	list = NULL;
	if (k->p.conditions &&
	    ts_kube_request(k->kube, "GET", "/api/v1/nodes", NULL, NULL, &list) == 200)
		json_array_foreach(json_object_get(list, "items"), i, o) {
			const char *name = json_string_value(
				json_object_get(json_object_get(o, "metadata"), "name"));
			bool tainted = has_taint(o), on = condition_on(o);
			struct node_state *s;
			if (name && (tainted || on) && (s = state_of(k, name)))
				s->tainted = tainted, s->condition = on, s->learned = true;
		}
	json_decref(list);
	k->discovered = true;
}

void ts_k8s_nodes_sync(struct ts_k8s_nodes *k, const struct ts_nh_node *v, int n,
		       uint64_t now_real_ns)
{
	int kept = 0;

	if (!k->discovered)
		discover(k);

	for (int i = 0; i < k->n; i++)
		k->st[i].seen = false;
	for (int i = 0; i < n; i++)
		sync_one(k, &v[i], now_real_ns);
	for (int i = 0; i < k->n; i++) {
		struct node_state *s = &k->st[i];
		if (!s->seen) { /* no finding left */
			recover(k, s, "no job has named the node for the window", now_real_ns);
			if (s->written)
				delete_slownode(k, s->node), s->written = false;
		}
		if (s->seen || s->tainted || s->condition || s->written)
			k->st[kept++] = *s;
	}
	k->n = kept;
}
