// SPDX-License-Identifier: Apache-2.0
/* Node health: findings per job, node and device; their decaying sum per node, over
 * this partition's findings and the other partitions' last blobs (nodehealth.h). */
#include "nodehealth.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct finding {
	char ns[64], job[128], node[TS_NH_NODE], device[TS_NH_NAME], cause[32];
	double excess;
	uint64_t first_ns, last_ns;
	double gpu_s; /* the job's GPU-seconds lost to its ranks on the node */
};

struct part { /* another partition's last blob */
	int id, n;
	struct finding *f;
};

struct flag { /* a node's degraded state, for the hysteresis */
	char node[TS_NH_NODE];
	bool degraded, was; /* now, and as of the call before */
};

struct ts_nodehealth {
	struct ts_nh_opts o;
	int partition;
	struct finding *f; /* local, o.max_findings */
	int n;
	struct part *parts;
	int nparts;
	struct flag *flags;
	int nflags, capflags;
};

void ts_nh_opts_default(struct ts_nh_opts *o)
{
	*o = (struct ts_nh_opts){ .sz = sizeof(*o), .window_s = 259200, .half_life_s = 86400,
				  .degraded_score = 2.5, .clear_score = 1, .device_weight = 3,
				  .max_findings = 4096, .min_held_s = 300 };
}

int ts_nh_new(struct ts_nodehealth **out, const struct ts_nh_opts *o, int partition)
{
	struct ts_nodehealth *h;

	*out = NULL;
	if (!o || o->sz < sizeof(*o) || !(o->window_s > 0) || !(o->half_life_s > 0) ||
	    !(o->degraded_score > 0) || !(o->clear_score <= o->degraded_score) ||
	    !(o->device_weight > 0) || o->max_findings < 1 || !(o->min_held_s >= 0) ||
	    partition < 0)
		return -EINVAL;
	if (!(h = calloc(1, sizeof(*h))))
		return -ENOMEM;
	h->o = *o;
	h->partition = partition;
	if (!(h->f = calloc((size_t)o->max_findings, sizeof(*h->f)))) {
		free(h);
		return -ENOMEM;
	}
	*out = h;
	return 0;
}

static void parts_clear(struct ts_nodehealth *h)
{
	for (int i = 0; i < h->nparts; i++)
		free(h->parts[i].f);
	free(h->parts);
	h->parts = NULL, h->nparts = 0;
}

void ts_nh_free(struct ts_nodehealth *h)
{
	if (!h)
		return;
	parts_clear(h);
	free(h->f);
	free(h->flags);
	free(h);
}

static void copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

/* Whether stored (a field of n bytes) holds s as copy() would store it: a name cut to
 * the field still matches itself. No copy: the scans call it for every finding. */
static bool same(const char *stored, size_t n, const char *s)
{
	size_t len = strnlen(s ? s : "", n - 1);

	return !strncmp(stored, s ? s : "", len) && !stored[len];
}

/* The slot for the job's finding on node and device: its own, a free one, or the one
 * the longest unrenewed. */
static struct finding *slot_for(struct ts_nodehealth *h, const char *ns, const char *job,
				const char *node, const char *device, bool *fresh)
{
	struct finding *old = NULL;

	for (int i = 0; i < h->n; i++) {
		struct finding *f = &h->f[i];
		if (same(f->node, sizeof(f->node), node) && same(f->device, sizeof(f->device), device) &&
		    same(f->job, sizeof(f->job), job) && same(f->ns, sizeof(f->ns), ns)) {
			*fresh = false;
			return f;
		}
		if (!old || f->last_ns < old->last_ns)
			old = f;
	}
	*fresh = true;
	return h->n < h->o.max_findings ? &h->f[h->n++] : old;
}

void ts_nh_note(struct ts_nodehealth *h, const char *ns, const char *job, const char *node,
		const char *device, const char *cause, double excess, uint64_t now_ns)
{
	bool fresh;
	struct finding *f;

	if (!node || !*node)
		return;
	f = slot_for(h, ns ? ns : "", job ? job : "", node, device ? device : "", &fresh);
	if (fresh) {
		memset(f, 0, sizeof(*f));
		copy(f->ns, sizeof(f->ns), ns);
		copy(f->job, sizeof(f->job), job);
		copy(f->node, sizeof(f->node), node);
		copy(f->device, sizeof(f->device), device);
		f->first_ns = now_ns;
	}
	copy(f->cause, sizeof(f->cause), cause);
	f->excess = excess;
	f->last_ns = now_ns;
}

void ts_nh_note_cost(struct ts_nodehealth *h, const char *ns, const char *job,
		     const char *node, double gpu_s)
{
	if (!node || !isfinite(gpu_s))
		return;
	for (int i = 0; i < h->n; i++) {
		struct finding *f = &h->f[i];
		if (same(f->node, sizeof(f->node), node) && same(f->job, sizeof(f->job), job) &&
		    same(f->ns, sizeof(f->ns), ns))
			f->gpu_s = gpu_s;
	}
}

/* The GPU-seconds the report's job lost to its ranks on node (gpuTimeLost.topRanks). */
static double node_cost(json_t *report, const char *node)
{
	json_t *top = json_object_get(json_object_get(json_object_get(report, "status"),
						      "gpuTimeLost"), "topRanks"), *k;
	double s = 0;
	size_t i;

	json_array_foreach(top, i, k) {
		const char *n = json_string_value(json_object_get(k, "node"));
		if (n && !strcmp(n, node))
			s += 3600 * json_number_value(json_object_get(k, "gpuHours"));
	}
	return s;
}

/* Whether the report's slow ranks still name f's node and device. */
static bool still_named(json_t *slow, const struct finding *f)
{
	json_t *s;
	size_t i;

	json_array_foreach(slow, i, s) {
		const char *node = json_string_value(json_object_get(s, "node"));
		const char *dev = json_string_value(json_object_get(s, "device"));
		if (node && same(f->node, sizeof(f->node), node) &&
		    same(f->device, sizeof(f->device), dev))
			return true;
	}
	return false;
}

/* Drops job ns/job's findings that its report's slow ranks no longer name, first named
 * less than o.min_held_s before now_ns: alarms the job's analysis took back. */
static void withdraw(struct ts_nodehealth *h, const char *ns, const char *job, json_t *slow,
		     uint64_t now_ns)
{
	int kept = 0;

	for (int i = 0; i < h->n; i++) {
		struct finding *f = &h->f[i];
		bool passing = same(f->job, sizeof(f->job), job) && same(f->ns, sizeof(f->ns), ns) &&
			       now_ns >= f->first_ns &&
			       (double)(now_ns - f->first_ns) / 1e9 < h->o.min_held_s &&
			       !still_named(slow, f);
		if (!passing)
			h->f[kept++] = *f;
	}
	h->n = kept;
}

int ts_nh_note_report(struct ts_nodehealth *h, json_t *report, uint64_t now_ns)
{
	json_t *md = json_object_get(report, "metadata"), *s;
	json_t *slow = json_object_get(json_object_get(report, "status"), "slowRanks");
	const char *ns = json_string_value(json_object_get(md, "namespace"));
	const char *job = json_string_value(json_object_get(md, "name"));
	size_t i;
	int noted = 0;

	withdraw(h, ns ? ns : "", job ? job : "", slow, now_ns);
	json_array_foreach(slow, i, s) {
		const char *node = json_string_value(json_object_get(s, "node"));
		if (!node || !*node)
			continue;
		ts_nh_note(h, ns, job, node, json_string_value(json_object_get(s, "device")),
			   json_string_value(json_object_get(s, "cause")),
			   json_number_value(json_object_get(s, "degradation")), now_ns);
		ts_nh_note_cost(h, ns, job, node, node_cost(report, node));
		noted++;
	}
	return noted;
}

static bool expired(const struct ts_nodehealth *h, const struct finding *f, uint64_t now_ns)
{
	return now_ns > f->last_ns && (double)(now_ns - f->last_ns) / 1e9 > h->o.window_s;
}

/* Keeps the findings of f[0..n) not past the window; returns how many are left. */
static int expire_list(const struct ts_nodehealth *h, struct finding *f, int n, uint64_t now_ns)
{
	int kept = 0;

	for (int i = 0; i < n; i++)
		if (!expired(h, &f[i], now_ns))
			f[kept++] = f[i];
	return kept;
}

void ts_nh_expire(struct ts_nodehealth *h, uint64_t now_ns)
{
	h->n = expire_list(h, h->f, h->n, now_ns);
	for (int i = 0; i < h->nparts; i++)
		h->parts[i].n = expire_list(h, h->parts[i].f, h->parts[i].n, now_ns);
}

static json_t *finding_json(const struct finding *f)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:f, s:I, s:I, s:f}", "ns", f->ns, "job",
			 f->job, "node", f->node, "device", f->device, "cause", f->cause, "excess",
			 isfinite(f->excess) ? f->excess : 0.0, "first", (json_int_t)f->first_ns,
			 "last", (json_int_t)f->last_ns, "gpu_s", isfinite(f->gpu_s) ? f->gpu_s : 0.0);
}

char *ts_nh_export(struct ts_nodehealth *h, size_t *len)
{
	json_t *list = json_array(), *blob;
	char *text;

	for (int i = 0; list && i < h->n; i++)
		json_array_append_new(list, finding_json(&h->f[i]));
	blob = json_pack("{s:i, s:i, s:o*}", "v", 1, "partition", h->partition, "findings", list);
	text = blob ? json_dumps(blob, JSON_COMPACT) : NULL;
	json_decref(blob);
	if (text && len)
		*len = strlen(text);
	return text;
}

/* The findings of a blob, calloc'ed into *out; -EBADMSG for anything else. */
static int parse_blob(const struct ts_nodehealth *h, const char *text, size_t len,
		      struct finding **out, int *n)
{
	json_t *blob = json_loadb(text, len, 0, NULL), *list = json_object_get(blob, "findings"), *e;
	size_t i, max = (size_t)h->o.max_findings;
	int rc = 0;

	*out = NULL, *n = 0;
	if (!json_is_array(list) || json_integer_value(json_object_get(blob, "v")) != 1) {
		json_decref(blob);
		return -EBADMSG;
	}
	if (json_array_size(list) && !(*out = calloc(json_array_size(list), sizeof(**out)))) {
		json_decref(blob);
		return -ENOMEM;
	}
	json_array_foreach(list, i, e) {
		struct finding *f = &(*out)[*n];
		const char *node = json_string_value(json_object_get(e, "node"));
		if (!node || !*node || (size_t)*n >= max) {
			rc = -EBADMSG;
			break;
		}
		copy(f->ns, sizeof(f->ns), json_string_value(json_object_get(e, "ns")));
		copy(f->job, sizeof(f->job), json_string_value(json_object_get(e, "job")));
		copy(f->node, sizeof(f->node), node);
		copy(f->device, sizeof(f->device), json_string_value(json_object_get(e, "device")));
		copy(f->cause, sizeof(f->cause), json_string_value(json_object_get(e, "cause")));
		f->excess = json_number_value(json_object_get(e, "excess"));
		f->first_ns = (uint64_t)json_integer_value(json_object_get(e, "first"));
		f->last_ns = (uint64_t)json_integer_value(json_object_get(e, "last"));
		f->gpu_s = json_number_value(json_object_get(e, "gpu_s")); /* 0 in older blobs */
		(*n)++;
	}
	json_decref(blob);
	if (rc) {
		free(*out);
		*out = NULL, *n = 0;
	}
	return rc;
}

/* A finding of our own from before a restart, merged with what was noted since: the
 * same job's finding keeps its first and its latest sighting. */
static void resume(struct ts_nodehealth *h, const struct finding *old)
{
	bool fresh;
	struct finding *f = slot_for(h, old->ns, old->job, old->node, old->device, &fresh);

	if (fresh) {
		*f = *old;
		return;
	}
	if (old->first_ns < f->first_ns)
		f->first_ns = old->first_ns;
	if (old->last_ns > f->last_ns) {
		f->last_ns = old->last_ns;
		memcpy(f->cause, old->cause, sizeof(f->cause));
		f->excess = old->excess;
	}
}

int ts_nh_import(struct ts_nodehealth *h, int partition, const char *text, size_t len)
{
	struct finding *f;
	struct part *p = NULL;
	int n, rc = parse_blob(h, text, len, &f, &n);

	if (rc)
		return rc;
	if (partition == h->partition) { /* our own, from before a restart */
		for (int i = 0; i < n; i++)
			resume(h, &f[i]);
		free(f);
		return 0;
	}
	for (int i = 0; i < h->nparts && !p; i++)
		if (h->parts[i].id == partition)
			p = &h->parts[i];
	if (!p) {
		struct part *grown = realloc(h->parts, (size_t)(h->nparts + 1) * sizeof(*grown));
		if (!grown) {
			free(f);
			return -ENOMEM;
		}
		h->parts = grown;
		p = &h->parts[h->nparts++];
		p->id = partition, p->f = NULL;
	}
	free(p->f);
	p->f = f, p->n = n;
	return 0;
}

double ts_nh_weight(const struct ts_nh_opts *o, const char *cause, uint64_t last_ns,
		    uint64_t now_ns)
{
	double age = now_ns > last_ns ? (double)(now_ns - last_ns) / 1e9 : 0;
	double w = cause && !strcmp(cause, "Device") ? o->device_weight : 1;

	return w * exp2(-age / o->half_life_s);
}

/* By node, then job: a node's findings together, a job's within them. */
static int by_node(const void *a, const void *b)
{
	const struct finding *x = *(const struct finding *const *)a;
	const struct finding *y = *(const struct finding *const *)b;
	int c = strcmp(x->node, y->node);

	if (!c)
		c = strcmp(x->ns, y->ns);
	return c ? c : strcmp(x->job, y->job);
}

static bool same_job(const struct finding *x, const struct finding *y)
{
	return !strcmp(x->job, y->job) && !strcmp(x->ns, y->ns);
}

static struct flag *flag_of(struct ts_nodehealth *h, const char *node, bool add)
{
	for (int i = 0; i < h->nflags; i++)
		if (!strcmp(h->flags[i].node, node))
			return &h->flags[i];
	if (!add)
		return NULL;
	if (h->nflags == h->capflags) {
		int cap = h->capflags ? 2 * h->capflags : 64;
		struct flag *grown = realloc(h->flags, (size_t)cap * sizeof(*grown));
		if (!grown)
			return NULL;
		h->flags = grown, h->capflags = cap;
	}
	struct flag *fl = &h->flags[h->nflags++];
	copy(fl->node, sizeof(fl->node), node);
	fl->degraded = fl->was = false;
	return fl;
}

/* Adds name with weight w to a list of at most max names, each a field of width bytes
 * (names: max * width), kept heaviest first. */
static void rank_in(char *names, size_t width, double *ws, int *n, int max, const char *name,
		    double w)
{
	char t[TS_NH_NAME];
	int at;

	for (at = 0; at < *n; at++)
		if (same(names + (size_t)at * width, width, name))
			break;
	if (at == *n) {
		if (*n == max)
			return;
		copy(names + (size_t)at * width, width, name);
		ws[at] = 0;
		(*n)++;
	}
	ws[at] += w;
	for (; at > 0 && ws[at] > ws[at - 1]; at--) {
		char *a = names + (size_t)at * width, *b = a - width;
		double tw = ws[at];
		memcpy(t, a, width), memcpy(a, b, width), memcpy(b, t, width);
		ws[at] = ws[at - 1], ws[at - 1] = tw;
	}
}

/* The job's entry in v (its heaviest finding on the node), kept heaviest first, at most
 * TS_NH_JOBS shown. */
static void add_job(struct ts_nh_node *v, const struct finding *f, double w)
{
	int at;

	for (at = 0; at < v->nshown; at++)
		if (!strcmp(v->jobs[at].job, f->job) && !strcmp(v->jobs[at].ns, f->ns))
			break;
	if (at == v->nshown) {
		v->njobs++;
		if (v->nshown == TS_NH_JOBS) {
			if (!(w > v->jobs[at - 1].weight))
				return;
			at--; /* the lightest gives way */
		} else {
			v->nshown++;
		}
		struct ts_nh_job *j = &v->jobs[at];
		memset(j, 0, sizeof(*j));
		copy(j->ns, sizeof(j->ns), f->ns), copy(j->job, sizeof(j->job), f->job);
		copy(j->cause, sizeof(j->cause), f->cause), copy(j->device, sizeof(j->device), f->device);
	}
	struct ts_nh_job *j = &v->jobs[at];
	j->weight += w;
	j->gpu_s = fmax(j->gpu_s, f->gpu_s);
	if (f->last_ns > j->last_ns)
		j->last_ns = f->last_ns;
	for (; at > 0 && v->jobs[at].weight > v->jobs[at - 1].weight; at--) {
		struct ts_nh_job t = v->jobs[at];
		v->jobs[at] = v->jobs[at - 1], v->jobs[at - 1] = t;
	}
}

/* Whether finding a says more against its node than b: a Device cause first (the
 * device itself says it), then the larger excess. */
static bool worse(const struct finding *a, const struct finding *b)
{
	bool da = !strcmp(a->cause, "Device"), db = !strcmp(b->cause, "Device");

	return da != db ? da : a->excess > b->excess;
}

/* One node's view from its findings g[0..n) (sorted together). */
static void summarize(struct ts_nodehealth *h, struct finding **g, int n, uint64_t now_ns,
		      struct ts_nh_node *v)
{
	char causes[8][32];
	double cw[8] = { 0 }, dw[TS_NH_DEVICES] = { 0 };
	int ncauses = 0;

	memset(v, 0, sizeof(*v));
	copy(v->node, sizeof(v->node), g[0]->node);
	for (int lo = 0, hi; lo < n; lo = hi) {
		/* a job counts once however many of its ranks the node holds: its heaviest
		 * weight, with the cause of its worst rank (not of whichever was renewed
		 * last: one report renews them all) */
		const struct finding *best = g[lo];
		double bw = -1, cost = 0;
		for (hi = lo; hi < n && same_job(g[hi], g[lo]); hi++) {
			cost = fmax(cost, g[hi]->gpu_s); /* each of its findings there holds it */
			double w = ts_nh_weight(&h->o, g[hi]->cause, g[hi]->last_ns, now_ns);
			if (g[hi]->device[0])
				rank_in(v->devices[0], sizeof(v->devices[0]), dw, &v->ndevices,
					TS_NH_DEVICES, g[hi]->device, w);
			if (worse(g[hi], best))
				best = g[hi];
			bw = fmax(bw, w);
			if (!v->first_ns || g[hi]->first_ns < v->first_ns)
				v->first_ns = g[hi]->first_ns;
			if (g[hi]->last_ns > v->last_ns)
				v->last_ns = g[hi]->last_ns;
		}
		v->score += bw;
		v->gpu_s += cost;
		rank_in(causes[0], sizeof(causes[0]), cw, &ncauses, 8, best->cause, bw);
		add_job(v, best, bw);
	}
	copy(v->cause, sizeof(v->cause), ncauses ? causes[0] : "");
	struct flag *fl = flag_of(h, v->node, true);
	bool was = fl && fl->was;
	v->degraded = was ? v->score >= h->o.clear_score : v->score >= h->o.degraded_score;
	if (fl)
		fl->degraded = v->degraded;
}

/* Forgets the nodes that are not degraded: they carry no state. */
static void prune_flags(struct ts_nodehealth *h)
{
	int kept = 0;

	for (int i = 0; i < h->nflags; i++)
		if (h->flags[i].degraded)
			h->flags[kept++] = h->flags[i];
	h->nflags = kept;
}

static int by_score(const void *a, const void *b)
{
	const struct ts_nh_node *x = a, *y = b;

	return (x->score < y->score) - (x->score > y->score);
}

/* Every finding, local and imported, sorted by node into a malloc'ed array; NULL (and
 * *total 0) when there is none or no memory. */
static struct finding **gather(struct ts_nodehealth *h, int *total)
{
	struct finding **all;
	int n = h->n;

	for (int i = 0; i < h->nparts; i++)
		n += h->parts[i].n;
	*total = 0;
	if (!n || !(all = malloc((size_t)n * sizeof(*all))))
		return NULL;
	for (int i = 0; i < h->n; i++)
		all[(*total)++] = &h->f[i];
	for (int p = 0; p < h->nparts; p++)
		for (int i = 0; i < h->parts[p].n; i++)
			all[(*total)++] = &h->parts[p].f[i];
	qsort(all, (size_t)*total, sizeof(*all), by_node);
	return all;
}

int ts_nh_nodes(struct ts_nodehealth *h, uint64_t now_ns, struct ts_nh_node *out, int n)
{
	int total, count = 0;
	struct finding **all = gather(h, &total);
	struct ts_nh_node *views = total ? malloc((size_t)total * sizeof(*views)) : NULL;

	for (int i = 0; i < h->nflags; i++) { /* a node with no finding left is clean */
		h->flags[i].was = h->flags[i].degraded;
		h->flags[i].degraded = false;
	}
	if (!views) {
		free(all);
		return 0;
	}
	for (int lo = 0, hi; lo < total; lo = hi) {
		for (hi = lo + 1; hi < total && !strcmp(all[hi]->node, all[lo]->node); hi++)
			;
		summarize(h, all + lo, hi - lo, now_ns, &views[count++]);
	}
	qsort(views, (size_t)count, sizeof(*views), by_score);
	prune_flags(h);
	memcpy(out, views, (size_t)(count < n ? count : n) * sizeof(*out));
	free(views);
	free(all);
	return count;
}

static json_t *time_json(uint64_t ns)
{
	char buf[32];
	time_t s = (time_t)(ns / 1000000000u);
	struct tm tm;

	gmtime_r(&s, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_string(buf);
}

json_t *ts_nh_node_json(const struct ts_nh_node *v)
{
	json_t *devices = json_array(), *jobs = json_array();

	for (int i = 0; i < v->ndevices; i++)
		json_array_append_new(devices, json_string(v->devices[i]));
	for (int i = 0; i < v->nshown; i++) {
		const struct ts_nh_job *j = &v->jobs[i];
		json_array_append_new(jobs, json_pack("{s:s, s:s, s:s, s:s, s:f, s:o, s:f}",
						      "namespace", j->ns, "job", j->job, "cause",
						      j->cause, "device", j->device, "weight",
						      round(j->weight * 100) / 100, "lastSeen",
						      time_json(j->last_ns), "gpuHoursLost",
						      round(j->gpu_s / 3.6) / 1000));
	}
	return json_pack("{s:s, s:f, s:b, s:s, s:o, s:i, s:o, s:o, s:o, s:f}", "node", v->node,
			 "score", round(v->score * 100) / 100, "degraded", v->degraded, "cause",
			 v->cause, "devices", devices, "jobsAffected", v->njobs, "jobs", jobs,
			 "firstSeen", time_json(v->first_ns), "lastSeen", time_json(v->last_ns),
			 "gpuHoursLost", round(v->gpu_s / 3.6) / 1000);
}
