// SPDX-License-Identifier: Apache-2.0
/* Node health in the analyzer: findings noted, stored and read per partition, nodes
 * handed to the Kubernetes writer (node_sync.h). */
#include "node_sync.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define MAX_NODES 1024 /* the highest scores; each view is about 2.5 KB */

struct ts_node_sync {
	struct ts_nodehealth *nh;
	int partition, partitions;
	uint64_t period_ns, next_ns;
	bool resumed;
	struct ts_nh_node *views; /* MAX_NODES */
	struct ts_node_sync_stats st;
	char why[256];            /* the bucket's last refusal, said once */
};

int ts_node_sync_new(struct ts_node_sync **out, const struct ts_nh_opts *o, int partition,
		     int partitions, double period_s)
{
	struct ts_node_sync *s;
	int rc;

	*out = NULL;
	if (partitions < 1 || partition < 0 || partition >= partitions || !(period_s > 0))
		return -EINVAL;
	if (!(s = calloc(1, sizeof(*s))) || !(s->views = calloc(MAX_NODES, sizeof(*s->views)))) {
		free(s);
		return -ENOMEM;
	}
	if ((rc = ts_nh_new(&s->nh, o, partition))) {
		ts_node_sync_free(s);
		return rc;
	}
	s->partition = partition, s->partitions = partitions;
	s->period_ns = (uint64_t)(period_s * 1e9);
	*out = s;
	return 0;
}

void ts_node_sync_free(struct ts_node_sync *s)
{
	if (!s)
		return;
	ts_nh_free(s->nh);
	free(s->views);
	free(s);
}

void ts_node_sync_report(struct ts_node_sync *s, json_t *report, uint64_t now_real_ns)
{
	s->st.findings += (uint64_t)ts_nh_note_report(s->nh, report, now_real_ns);
}

static void key_of(int partition, char *key, size_t n)
{
	snprintf(key, n, "nodehealth.p%d", partition);
}

/* Reads partition p's blob into the node view (our own: only on the first round). */
static void read_partition(struct ts_node_sync *s, struct tsn_kv *kv, int p)
{
	char key[64];
	void *blob = NULL;
	size_t len = 0;
	int rc;

	key_of(p, key, sizeof(key));
	rc = tsn_kv_get_blob(kv, key, &blob, &len);
	if (rc == 0 && ts_nh_import(s->nh, p, blob, len)) {
		s->st.read_failures++;
		ts_warn("analyzer: node health: the blob of partition %d is not one (%zu bytes): "
			"left out", p, len);
	} else if (rc && rc != -ENOENT) {
		s->st.read_failures++;
	}
	free(blob);
}

static void store(struct ts_node_sync *s, struct tsn_kv *kv)
{
	char key[64], why[256] = "";
	size_t len;
	char *blob = ts_nh_export(s->nh, &len);

	key_of(s->partition, key, sizeof(key));
	if (blob && !tsn_kv_put_blob(kv, key, blob, len, why, sizeof(why))) {
		s->st.stored++;
		s->why[0] = 0;
	} else {
		s->st.store_failures++;
		if (strcmp(why, s->why)) /* said once per cause */
			ts_warn("analyzer: node health not stored: %s", *why ? why : "out of memory");
		snprintf(s->why, sizeof(s->why), "%s", why);
	}
	free(blob);
}

bool ts_node_sync_due(struct ts_node_sync *s, uint64_t now_real_ns)
{
	return now_real_ns >= s->next_ns;
}

void ts_node_sync_tick(struct ts_node_sync *s, struct tsn_kv *kv, struct ts_k8sw *w,
		       uint64_t now_real_ns)
{
	int n, mine = 0;

	if (now_real_ns < s->next_ns)
		return;
	s->next_ns = now_real_ns + s->period_ns;
	if (kv && !s->resumed) { /* a restart resumes this partition's findings */
		read_partition(s, kv, s->partition);
		s->resumed = true;
	}
	ts_nh_expire(s->nh, now_real_ns);
	if (kv) {
		store(s, kv);
		for (int p = 0; p < s->partitions; p++)
			if (p != s->partition)
				read_partition(s, kv, p);
	}
	n = ts_nh_nodes(s->nh, now_real_ns, s->views, MAX_NODES);
	s->st.nodes = (uint64_t)n, s->st.degraded = 0;
	for (int i = 0; i < n && i < MAX_NODES; i++) {
		s->st.degraded += s->views[i].degraded;
		if (ts_node_is_mine(s->views[i].node, s->partition, s->partitions))
			s->views[mine++] = s->views[i];
	}
	if (w)
		ts_k8sw_nodes(w, s->views, mine, now_real_ns);
}

void ts_node_sync_get_stats(struct ts_node_sync *s, struct ts_node_sync_stats *out)
{
	*out = s->st;
}
