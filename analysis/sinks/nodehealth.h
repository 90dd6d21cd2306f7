// SPDX-License-Identifier: Apache-2.0
/* Node health: what every job's verdicts say about each node and device, kept over a
 * decaying window across jobs, analyzer partitions and restarts.
 *
 * A slow rank on a node is evidence against the node, not a verdict on it: the job's
 * own data or code may be the cause. One finding is kept per job, node and device (a
 * job that names the same rank a hundred times counts once); its weight is 1, or
 * opts.device_weight for a Device cause (clock, XID: the device itself says it), and
 * halves every opts.half_life_s since the job last named it. A node's score is the sum
 * over jobs of their heaviest finding there (a job with two slow ranks on one node
 * counts once, with the cause of the worse): three jobs naming it within about 6
 * hours, or one Device finding, make it degraded (opts.degraded_score 2.5, half-life
 * 24 hours); it stops being so when its score falls below opts.clear_score
 * (hysteresis), and a finding older than opts.window_s is dropped.
 * A finding that the job's report stops naming within opts.min_held_s of its first
 * sighting is withdrawn: an alarm the job's own analysis took back (a rank starved for a
 * few steps on a busy host) is not held against the node.
 *
 * Each partition keeps its own findings (ts_nh_note) and stores them as one JSON blob;
 * the node view (ts_nh_nodes) adds up the local findings and the others' last blobs
 * (ts_nh_import), so two partitions' verdicts about one node add up. */
#ifndef TS_NODEHEALTH_H
#define TS_NODEHEALTH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ts_nh_opts {
	size_t sz;              /* sizeof(struct ts_nh_opts): the struct may grow */
	double window_s;        /* a finding older than this is dropped (259200: 3 days) */
	double half_life_s;     /* a finding's weight halves this often (86400) */
	double degraded_score;  /* a node at or above it is degraded (2.5) */
	double clear_score;     /* a degraded node below it is not any more (1) */
	double device_weight;   /* a Device finding's weight (3) */
	int max_findings;       /* local findings kept; the oldest give way (4096) */
	double min_held_s;      /* a finding its job stops naming sooner than this is
				 * withdrawn: a passing alarm is no evidence (300) */
};

/* The defaults above, into o (sz set). */
void ts_nh_opts_default(struct ts_nh_opts *o);

#define TS_NH_NODE 64
#define TS_NH_NAME 64 /* a device (a GPU's UUID is 40 characters) or a cause */
#define TS_NH_DEVICES 8
#define TS_NH_JOBS 8

struct ts_nh_job {
	char ns[64], job[128], cause[32], device[TS_NH_NAME];
	double weight;    /* after decay */
	uint64_t last_ns; /* when the job last named the node */
	double gpu_s;     /* its GPU-seconds lost to its ranks on the node, as last reported */
};

/* One node's view over every partition. */
struct ts_nh_node {
	char node[TS_NH_NODE];
	double score;
	bool degraded;
	char cause[32];                 /* the cause with the most weight */
	char devices[TS_NH_DEVICES][TS_NH_NAME]; /* the devices named, most weight first */
	int ndevices;
	int njobs;                      /* distinct jobs (may exceed TS_NH_JOBS) */
	struct ts_nh_job jobs[TS_NH_JOBS]; /* the heaviest */
	int nshown;
	uint64_t first_ns, last_ns;     /* first and last finding still held */
	double gpu_s;                   /* GPU-seconds its findings' jobs lost to ranks on it */
};

struct ts_nodehealth;

/* partition: this analyzer's (its findings' tag in the blobs). Returns 0, -EINVAL (a
 * size or value out of range) or -ENOMEM. */
int ts_nh_new(struct ts_nodehealth **out, const struct ts_nh_opts *o, int partition);
void ts_nh_free(struct ts_nodehealth *h);

/* Notes each slow rank of a job's report (the SlowNodeReport the analyzer writes:
 * metadata.namespace and .name, status.slowRanks[] with node, device, cause and
 * degradation) that names a node, with the GPU time the job lost to its ranks on that
 * node (status.gpuTimeLost.topRanks); withdraws the job's findings it no longer names
 * that were held less than opts.min_held_s. Returns how many findings were new or
 * renewed. */
int ts_nh_note_report(struct ts_nodehealth *h, json_t *report, uint64_t now_ns);
/* One finding: renews the job's finding on node and device, or adds it. */
void ts_nh_note(struct ts_nodehealth *h, const char *ns, const char *job, const char *node,
		const char *device, const char *cause, double excess, uint64_t now_ns);
/* The GPU-seconds the job has lost so far to its ranks on node, on its findings there. */
void ts_nh_note_cost(struct ts_nodehealth *h, const char *ns, const char *job,
		     const char *node, double gpu_s);

/* Drops findings past the window (local and imported). */
void ts_nh_expire(struct ts_nodehealth *h, uint64_t now_ns);

/* This partition's findings as a JSON blob (malloc'ed text, *len its length) for the
 * key-value store; NULL when out of memory. */
char *ts_nh_export(struct ts_nodehealth *h, size_t *len);
/* Replaces what partition's last blob said with text (a blob of ts_nh_export). Returns 0,
 * or -EBADMSG for text that is not such a blob (nothing changed). A blob of this
 * analyzer's own partition is merged into its local findings (a restart resumes them;
 * what was noted since is kept). */
int ts_nh_import(struct ts_nodehealth *h, int partition, const char *text, size_t len);

/* The nodes with findings, highest score first, at most n into out (each degraded flag
 * kept from the last call for the hysteresis). Returns how many nodes there are (may
 * exceed n). */
int ts_nh_nodes(struct ts_nodehealth *h, uint64_t now_ns, struct ts_nh_node *out, int n);

/* A finding's weight at now_ns: 1, or opts.device_weight for cause "Device", halved
 * every opts.half_life_s since last_ns. */
double ts_nh_weight(const struct ts_nh_opts *o, const char *cause, uint64_t last_ns,
		    uint64_t now_ns);

/* The node's status as the SlowNode resource carries it. */
json_t *ts_nh_node_json(const struct ts_nh_node *v);

#endif
