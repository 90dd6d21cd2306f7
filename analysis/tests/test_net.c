// SPDX-License-Identifier: Apache-2.0
/* The Communication cause on synthetic 16-rank jobs of layout tp4-pp2-dp2 on 4 nodes
 * (4 ranks each: tp within a node, pp and dp across nodes): a node's network, a link,
 * the job's network, a compute straggler that must not look like one, and a node the
 * communicators cannot place but its TCP retransmits do. And a job's lost time as the
 * report's status, its text and /metrics give it, and leave it out before it is known. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/detect/job.h"
#include "analysis/sinks/metrics.h"
#include "analysis/sinks/report.h"

/* The defaults with the real-job floors off (verdict.wait_floor 0): these tests feed
 * synthetic steps to the statistics themselves; bench/data's recordings of real programs
 * (make real-bench) judge the floors. */
static void synthetic_defaults(struct ts_params *p)
{
	ts_params_defaults(p);
	p->verdict.wait_floor = 0;
}

#define MS 1000000ull
#define WORLD 16
#define PER_NODE 4
#define ONSET 40

struct net_sim {
	bool layout;        /* tp4-pp2-dp2 communicators, else one API-timed (id 0) */
	int slow_node, peer; /* -1: none; peer: the link between the two */
	bool job_wide;
	int straggler;      /* -1: none; else its compute is 30 % longer */
	int lossy_node;     /* -1: none; else its TCP retransmits are high */
	unsigned seed;
	bool nic;           /* the lossy node's port errors are high, not its retransmits */
	bool peers;         /* NCCL's per-peer sends around a ring communicator (RING_COMM):
			     * inter-node ones, slow between slow_node and peer */
	bool overlapped;    /* the slow transfers cost the step nothing (overlapped with
			     * compute, or waits that follow data-dependent work) */
};

#define RING_COMM 0xfeedull

static const int size[3] = { 4, 2, 2 }, stride[3] = { 1, 4, 8 };

static double noise(unsigned *seed, double rel)
{
	return 1 + rel * ((rand_r(seed) % 2001) / 1000.0 - 1.0);
}

static int key_of(int d, int k)
{
	return k - (k / stride[d] % size[d]) * stride[d];
}

static uint64_t id_of(const struct net_sim *s, int d, int k)
{
	return s->layout ? 0xabc000ull + (uint64_t)(d + 1) * 100 + (uint64_t)key_of(d, k) : 0;
}

/* The communicator of rank k in dimension d goes through the fault. */
static bool hit(const struct net_sim *s, int d, int k)
{
	bool x = false, y = false, across = false;

	for (int i = 0; i < (s->layout ? size[d] : WORLD); i++) {
		int n = (s->layout ? key_of(d, k) + i * stride[d] : i) / PER_NODE;
		across |= n != (s->layout ? key_of(d, k) : 0) / PER_NODE;
		x |= n == s->slow_node, y |= n == s->peer;
	}
	if (s->job_wide)
		return across;
	return s->peer >= 0 ? x && y : x && across;
}

static void step(struct ts_job *j, struct net_sim *s, uint64_t st)
{
	uint64_t t0 = 1000000 * MS + st * 100 * MS;
	int nd = s->layout ? 3 : 1;
	bool on = st >= ONSET, slow_net = false;
	double extra = on && s->straggler >= 0 ? 9 : 0;

	/* a synchronous job's step waits for its slowest transfer and its slowest rank */
	for (int d = 0; d < nd && on; d++)
		for (int k = 0; k < WORLD; k++)
			slow_net |= hit(s, d, k);
	extra += slow_net && !s->overlapped ? 1.6 * nd : 0;
	for (int k = 0; k < WORLD; k++) {
		struct ts_rank_step rs = { .step = st, .start_ns = t0,
					   .end_ns = t0 + (uint64_t)((60 + extra) * MS) };
		double compute = 30 * noise(&s->seed, 0.02) * (on && k == s->straggler ? 1.3 : 1);
		rs.m[TS_M_COMPUTE] = compute;
		rs.m[TS_M_DATALOADER] = 5 * noise(&s->seed, 0.02);
		rs.m[TS_M_LAUNCH] = 0.5 * noise(&s->seed, 0.02);
		rs.m[TS_M_CHECKPOINT] = 0;
		for (int d = 0; d < nd; d++) {
			/* every member but the straggler waits some; one member waits none */
			int idx = s->layout ? (k - key_of(d, k)) / stride[d] : k;
			int members = s->layout ? size[d] : WORLD;
			bool with = s->straggler >= 0 && on &&
				    (!s->layout || key_of(d, k) == key_of(d, s->straggler));
			bool last = with ? k == s->straggler : idx == (int)(st % (uint64_t)members);
			double wait = last ? 0 : 2 * noise(&s->seed, 0.9) +
				      (s->straggler >= 0 && on && d == 0 ? 9 : 0);
			double tr = 4 * noise(&s->seed, 0.02) * (on && hit(s, d, k) ? 1.4 : 1);
			rs.comm[rs.ncomm++] = (struct ts_comm_time){
				.id = id_of(s, d, k), .nranks = s->layout ? (uint32_t)size[d] : 0,
				.count = 2, .ms = wait + tr, .mb = 32 };
			rs.m[TS_M_COLLECTIVE] += wait + tr;
		}
		int to = (k + 1) % WORLD;
		if (s->peers && to / PER_NODE != k / PER_NODE) { /* only network sends are timed */
			bool slow = on && ((k / PER_NODE == s->slow_node && to / PER_NODE == s->peer) ||
					   (k / PER_NODE == s->peer && to / PER_NODE == s->slow_node));
			rs.peer[rs.npeer++] = (struct ts_peer_time){
				.comm = RING_COMM, .peer = (uint32_t)to, .bytes = 32e6,
				.ns = 32e6 * 0.1 * noise(&s->seed, 0.05) * (slow ? 2.5 : 1) };
		}
		assert_int_equal(ts_job_add_step(j, k, WORLD, &rs), 0);
		if (s->lossy_node >= 0) {
			bool lossy = k / PER_NODE == s->lossy_node && on;
			struct ts_host_view v = { .valid = true, .time_ns = t0,
						  .tcp_retrans_per_s = lossy && !s->nic ? 80 : 0.2,
						  .nic_err_per_s = lossy && s->nic ? 30 : 0,
						  .nic_drop_per_s = 0.1 };
			ts_job_host_view(j, k, &v);
		}
	}
}

static struct ts_job *run(struct net_sim *s, int steps, uint64_t *first)
{
	struct ts_params p;
	struct ts_job *j;
	char name[32];

	synthetic_defaults(&p);
	assert_int_equal(ts_job_new(&j, "ns", "net", WORLD, &p), 0);
	for (int k = 0; k < WORLD && s->layout; k++) {
		char g[3][64];
		const char *gp[3] = { g[0], g[1], g[2] };
		for (int d = 0; d < 3; d++)
			snprintf(g[d], sizeof(g[d]), "nccl:%llx:%d:%d",
				 (unsigned long long)id_of(s, d, k), size[d], (k - key_of(d, k)) / stride[d]);
		ts_job_rank_groups(j, k, gp, 3);
	}
	for (int k = 0; k < WORLD && s->peers; k++) {
		char g[64];
		const char *gp[1] = { g };
		snprintf(g, sizeof(g), "nccl:%llx:%d:%d", RING_COMM, WORLD, k);
		ts_job_rank_groups(j, k, gp, 1);
	}
	for (int k = 0; k < WORLD; k++) {
		snprintf(name, sizeof(name), "n%d", k / PER_NODE);
		snprintf(ts_job_rank(j, k)->node, sizeof(ts_job_rank(j, k)->node), "%s", name);
	}
	*first = 0;
	for (int st = 0; st < steps; st++) {
		step(j, s, (uint64_t)st);
		ts_job_tick(j, 1000000 * MS + (uint64_t)st * 100 * MS);
		if (!*first && ts_job_result(j)->net.scope != TS_NET_NONE)
			*first = (uint64_t)st;
	}
	return j;
}

static void expect_ranks_on(const struct ts_job_result *r, const char *a, const char *b,
			    struct ts_job *j)
{
	assert_true(r->nslow > 0);
	for (int i = 0; i < r->nslow; i++) {
		const char *node = ts_job_rank(j, r->slow[i].rank)->node;
		assert_string_equal(r->slow[i].cause, "Communication");
		assert_true(!strcmp(node, a) || (b && !strcmp(node, b)));
	}
}

/* Node n1's transfers 40 % slower, the step time unchanged: no network verdict, and
 * the analyzer says why it held one back. */
static void test_no_step_cost_no_verdict(void **state)
{
	struct net_sim s = { true, 1, -1, false, -1, -1, 3 };
	uint64_t first;

	(void)state;
	s.overlapped = true;
	struct ts_job *j = run(&s, 100, &first);
	const struct ts_job_result *r = ts_job_result(j);
	assert_int_equal(first, 0);
	assert_int_equal(r->net.scope, TS_NET_NONE);
	assert_true(r->net.slow_comms > 0);
	assert_non_null(strstr(r->net.held_why, "no step time lost to the network"));
	assert_int_equal(r->nslow, 0);
	json_t *rep = ts_report_json(j, NULL);
	json_t *st = json_object_get(rep, "status");
	assert_null(json_object_get(st, "network"));
	assert_non_null(strstr(json_string_value(json_object_get(st, "networkHeld")),
			       "no step time lost"));
	json_decref(rep);
	ts_job_free(j);
}

static void test_node(void **state)
{
	struct net_sim s = { true, 1, -1, false, -1, -1, 3 };
	uint64_t first;
	struct ts_job *j = run(&s, 100, &first);
	const struct ts_job_result *r = ts_job_result(j);

	(void)state;
	print_message("node n1: %s after step %llu: %s\n", r->reason, (unsigned long long)first,
		      r->net.evidence);
	assert_int_equal(r->state, TS_STATE_FAILSLOW);
	assert_int_equal(r->net.scope, TS_NET_NODE);
	assert_string_equal(r->net.nodes[0], "n1");
	assert_true(first >= ONSET && first <= ONSET + 10);
	assert_true(r->net.onset_step >= ONSET - 1 && r->net.onset_step <= ONSET + 2);
	assert_true(fabs(r->net.excess - 0.4) < 0.1);
	expect_ranks_on(r, "n1", NULL, j);
	assert_int_equal(r->nslow, PER_NODE);
	assert_non_null(strstr(r->reason, "Communication: the network of node n1"));

	json_t *rep = ts_report_json(j, NULL);
	json_t *net = json_object_get(json_object_get(rep, "status"), "network");
	assert_string_equal(json_string_value(json_object_get(net, "scope")), "Node");
	assert_true(json_boolean_value(json_object_get(rep, "network")));
	json_decref(rep);
	ts_job_free(j);
}

static void test_link(void **state)
{
	struct net_sim s = { true, 0, 1, false, -1, -1, 5 };
	uint64_t first;
	struct ts_job *j = run(&s, 100, &first);
	const struct ts_job_result *r = ts_job_result(j);

	(void)state;
	assert_int_equal(r->net.scope, TS_NET_LINK);
	assert_string_equal(r->net.nodes[0], "n0");
	assert_string_equal(r->net.nodes[1], "n1");
	expect_ranks_on(r, "n0", "n1", j);
	ts_job_free(j);
}

static void test_job_wide(void **state)
{
	struct net_sim s = { true, -1, -1, true, -1, -1, 9 };
	uint64_t first;
	struct ts_job *j = run(&s, 100, &first);
	const struct ts_job_result *r = ts_job_result(j);

	(void)state;
	assert_int_equal(r->state, TS_STATE_FAILSLOW);
	assert_int_equal(r->net.scope, TS_NET_JOB);
	assert_int_equal(r->nslow, 0); /* no rank blamed */
	assert_non_null(strstr(r->reason, "Communication: the job's network"));
	/* the history keeps it, as a FailSlow on the collective */
	bool kept = false;
	for (int i = 0; i < r->nhistory; i++)
		kept |= r->history[i].kind == TS_EV_FAILSLOW &&
			r->history[i].metric == TS_M_COLLECTIVE;
	assert_true(kept);
	ts_job_free(j);
}

/* A slow rank comes last into every collective: the others wait, its own time is the
 * transfer, and no communicator looks slower. */
static void test_straggler_is_not_network(void **state)
{
	struct net_sim s = { true, -1, -1, false, 6, -1, 11 };
	uint64_t first;
	struct ts_job *j = run(&s, 100, &first);
	const struct ts_job_result *r = ts_job_result(j);

	(void)state;
	assert_int_equal(r->net.scope, TS_NET_NONE);
	assert_int_equal(first, 0);
	assert_int_equal(r->nslow, 1);
	assert_int_equal(r->slow[0].rank, 6);
	assert_string_equal(r->slow[0].cause, "Compute");
	ts_job_free(j);
}

/* One communicator over all nodes cannot say which; the agent's retransmits can. */
static void test_retransmits_place_node(void **state)
{
	struct net_sim s = { false, 2, -1, false, -1, 2, 13 };
	struct net_sim quiet = { false, 2, -1, false, -1, -1, 13 };
	uint64_t first;
	struct ts_job *j = run(&quiet, 100, &first);

	(void)state;
	assert_int_equal(ts_job_result(j)->net.scope, TS_NET_JOB);
	ts_job_free(j);
	j = run(&s, 100, &first);
	assert_int_equal(ts_job_result(j)->net.scope, TS_NET_NODE);
	assert_string_equal(ts_job_result(j)->net.nodes[0], "n2");
	assert_non_null(strstr(ts_job_result(j)->net.evidence, "TCP retransmits"));
	ts_job_free(j);
}

/* The same from the node's ports: their errors name it, and the evidence says so. */
static void test_nic_errors_place_node(void **state)
{
	struct net_sim s = { false, 1, -1, false, -1, 1, 17, true };
	uint64_t first;
	struct ts_job *j = run(&s, 100, &first);

	(void)state;
	assert_int_equal(ts_job_result(j)->net.scope, TS_NET_NODE);
	assert_string_equal(ts_job_result(j)->net.nodes[0], "n1");
	assert_non_null(strstr(ts_job_result(j)->net.evidence, "node n1: 30 NIC errors/s"));
	assert_null(strstr(ts_job_result(j)->net.evidence, "retransmits"));
	assert_null(strstr(ts_job_result(j)->net.evidence, "drops"));
	ts_job_free(j);
}

/* One communicator over every node cannot say where a slow link is; NCCL's sends per
 * peer can: the link between n1 and n2, and the evidence gives its ns per byte. With
 * every link as fast, the sends place nothing. */
static void test_peer_sends_place_link(void **state)
{
	struct net_sim s = { false, 1, 2, false, -1, -1, 19, false, true };
	struct net_sim fine = { false, -1, -1, false, -1, -1, 19, false, true };
	uint64_t first;
	struct ts_job *j = run(&s, 100, &first);
	const struct ts_net_verdict *v = &ts_job_result(j)->net;

	(void)state;
	assert_int_equal(v->scope, TS_NET_LINK);
	assert_string_equal(v->nodes[0], "n1");
	assert_string_equal(v->nodes[1], "n2");
	assert_non_null(strstr(v->evidence, "NCCL sends n1 - n2: 0.2"));
	assert_non_null(strstr(v->evidence, "(1 of 4 slow)"));
	ts_job_free(j);
	j = run(&fine, 100, &first);
	assert_int_equal(ts_job_result(j)->net.scope, TS_NET_NONE);
	ts_job_free(j);
}

static const char *cond_time(json_t *rep, const char *type)
{
	size_t i;
	json_t *c;

	json_array_foreach(json_object_get(json_object_get(rep, "status"), "conditions"), i, c)
		if (!strcmp(json_string_value(json_object_get(c, "type")), type))
			return json_string_value(json_object_get(c, "lastTransitionTime"));
	return NULL;
}

/* By the Kubernetes API conventions a condition's lastTransitionTime moves only when its
 * status does: a later report keeps it while lastUpdateTime moves on. */
static void test_condition_times(void **state)
{
	struct net_sim s = { false, -1, -1, false, -1, -1, 23 };
	uint64_t first;
	struct ts_job *j = run(&s, 60, &first);
	char hang[40], stored[40];

	(void)state;
	json_t *a = ts_report_json(j, NULL);
	snprintf(hang, sizeof(hang), "%s", cond_time(a, "Hang"));
	snprintf(stored, sizeof(stored), "%s", cond_time(a, "Stored"));
	for (uint64_t st = 60; st < 80; st++) {
		step(j, &s, st);
		ts_job_tick(j, 1000000 * MS + st * 100 * MS);
	}
	json_t *b = ts_report_json(j, "disk full");
	assert_string_not_equal(json_string_value(json_object_get(json_object_get(a, "status"),
								   "lastUpdateTime")),
				json_string_value(json_object_get(json_object_get(b, "status"),
								   "lastUpdateTime")));
	assert_string_equal(cond_time(b, "Hang"), hang);    /* still False */
	assert_string_not_equal(cond_time(b, "Stored"), stored); /* True to False */
	json_decref(a);
	json_decref(b);
	ts_job_free(j);
}

/* A lost time the outputs show as given: rank 6 costs 40 % in Storage, rank 2 0.2 %. */
static void set_lost(struct ts_job *j, bool valid)
{
	struct ts_job_result *r = (struct ts_job_result *)ts_job_result(j);

	r->lost = (struct ts_lost_time){
		.valid = valid, .from_step = 100, .to_step = 119, .step_ms = 210.34, .share = 0.42,
		.ranks = 0.4023, .stages = 0, .data = 0.0177, .comm = 0.05,
		.nranks = 2, .rank = { { 6, TS_CAUSE_STORAGE, 0.4001 }, { 2, TS_CAUSE_COMPUTE, 0.0022 } },
	};
	r->lost.cause[TS_CAUSE_STORAGE] = 0.4001;
	r->lost.cause[TS_CAUSE_COMPUTE] = 0.0022;
	snprintf(ts_job_rank(j, 6)->pod, sizeof(ts_job_rank(j, 6)->pod), "net-worker-6");
}

/* The report's text, as trainscope run and trainscope report print it. */
static char *report_text(json_t *rep)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	ts_report_print(rep, f);
	fclose(f);
	return text;
}

static double num(json_t *o, const char *key)
{
	assert_true(json_is_number(json_object_get(o, key)));
	return json_number_value(json_object_get(o, key));
}

static void expect_lost_status(json_t *lt)
{
	json_t *top = json_object_get(lt, "topRanks"), *t0 = json_array_get(top, 0);

	assert_true(num(lt, "share") == 0.42 && num(lt, "ranks") == 0.402);
	assert_true(num(lt, "stages") == 0 && num(lt, "data") == 0.018);
	assert_true(num(lt, "communication") == 0.05 && num(lt, "stepMs") == 210.34);
	assert_int_equal(json_integer_value(json_object_get(lt, "fromStep")), 100);
	assert_int_equal(json_integer_value(json_object_get(lt, "toStep")), 119);
	assert_true(num(json_object_get(lt, "byCause"), "Storage") == 0.4);
	assert_true(num(json_object_get(lt, "byCause"), "Compute") == 0.002);
	assert_int_equal(json_object_size(json_object_get(lt, "byCause")), 2);
	assert_int_equal(json_array_size(top), 2);
	assert_int_equal(json_integer_value(json_object_get(t0, "rank")), 6);
	assert_true(num(t0, "share") == 0.4);
	assert_string_equal(json_string_value(json_object_get(t0, "cause")), "Storage");
	assert_string_equal(json_string_value(json_object_get(t0, "pod")), "net-worker-6");
	assert_string_equal(json_string_value(json_object_get(t0, "node")), "n1");
}

/* status.lostTime, the report's text line and the /metrics gauges carry the job's lost
 * time once it is known (the analysed job's own: its last window), and none before. */
static void test_lost_time_outputs(void **state)
{
	struct net_sim s = { true, -1, -1, false, 6, -1, 11 };
	uint64_t first;
	struct ts_job *j = run(&s, 60, &first);
	struct ts_buf m = { 0 };

	(void)state;
	json_t *rep = ts_report_json(j, NULL);
	json_t *lt = json_object_get(json_object_get(rep, "status"), "lostTime");
	assert_true(ts_job_result(j)->lost.valid);
	json_int_t to = json_integer_value(json_object_get(lt, "toStep"));
	assert_true(to > json_integer_value(json_object_get(lt, "fromStep")));
	assert_true(to <= json_integer_value(json_object_get(json_object_get(rep, "status"),
							     "lastStep")));
	json_decref(rep);

	set_lost(j, true);
	rep = ts_report_json(j, NULL);
	expect_lost_status(json_object_get(json_object_get(rep, "status"), "lostTime"));
	char *text = report_text(rep);
	assert_non_null(strstr(text, "  lost time (steps 100-119, mean step 210.3 ms): 42%: "
				     "ranks 40% (rank 6 Storage 40%), stages 0%, variation among "
				     "ranks 2% (data, sequence lengths, noise); transfers take 5% "
				     "of the step\n"));
	free(text);
	json_decref(rep);
	ts_jobs_render_metrics(&j, 1, 5, &m);
	assert_non_null(strstr(m.data, "# TYPE trainscope_job_lost_time_ratio gauge\n"));
	assert_non_null(strstr(m.data, "trainscope_job_lost_time_ratio{k8s_namespace=\"ns\","
				       "training_job=\"net\",kind=\"total\"} 0.42\n"));
	assert_non_null(strstr(m.data, ",kind=\"ranks\"} 0.4023\n"));
	assert_non_null(strstr(m.data, ",kind=\"communication\"} 0.05\n"));
	assert_non_null(strstr(m.data, "trainscope_job_lost_time_cause_ratio{k8s_namespace=\"ns\","
				       "training_job=\"net\",cause=\"Storage\"} 0.4001\n"));
	assert_non_null(strstr(m.data, ",cause=\"Device\"} 0\n"));
	ts_buf_free(&m);

	set_lost(j, false);
	memset(&m, 0, sizeof(m));
	rep = ts_report_json(j, NULL);
	assert_null(json_object_get(json_object_get(rep, "status"), "lostTime"));
	text = report_text(rep);
	assert_null(strstr(text, "lost time"));
	free(text);
	json_decref(rep);
	ts_jobs_render_metrics(&j, 1, 5, &m);
	assert_non_null(strstr(m.data, "# TYPE trainscope_job_lost_time_ratio gauge\n"));
	assert_null(strstr(m.data, "trainscope_job_lost_time_ratio{"));
	assert_null(strstr(m.data, "trainscope_job_lost_time_cause_ratio{"));
	ts_buf_free(&m);
	ts_job_free(j);
}

/* status.gpuTimeLost, its text line and the /metrics counters: GPU-hours by cause, the
 * ranks that cost most with their nodes, and a rank's counter once it cost a GPU-minute. */
static void test_gpu_time_outputs(void **state)
{
	struct net_sim s = { true, -1, -1, false, 6, -1, 11 };
	uint64_t first;
	struct ts_job *j = run(&s, 60, &first);
	struct ts_job_result *r = (struct ts_job_result *)ts_job_result(j);
	struct ts_buf m = { 0 };

	(void)state;
	r->gpu_lost = (struct ts_gpu_lost){ .total_s = 7920, .stages_s = 0, .data_s = 720,
					    .through_step = 119, .counted = true };
	r->gpu_lost.cause_s[TS_CAUSE_STORAGE] = 7200;
	for (int k = 0; k < r->world; k++)
		ts_job_rank(j, k)->gpu_lost_s = k == 6 ? 7200 : k == 2 ? 30 : 0;
	snprintf(ts_job_rank(j, 6)->node, sizeof(ts_job_rank(j, 6)->node), "gpu-node-3");
	json_t *rep = ts_report_json(j, NULL), *g;
	g = json_object_get(json_object_get(rep, "status"), "gpuTimeLost");
	assert_non_null(g);
	assert_true(fabs(json_number_value(json_object_get(g, "gpuHours")) - 2.2) < 1e-9);
	assert_true(fabs(json_number_value(json_object_get(json_object_get(g, "byCause"),
							   "Storage")) - 2.0) < 1e-9);
	assert_null(json_object_get(json_object_get(g, "byCause"), "Compute"));
	json_t *top = json_array_get(json_object_get(g, "topRanks"), 0);
	assert_int_equal(json_integer_value(json_object_get(top, "rank")), 6);
	assert_string_equal(json_string_value(json_object_get(top, "node")), "gpu-node-3");
	assert_int_equal(json_array_size(json_object_get(g, "topRanks")), 2);
	char *text = report_text(rep);
	assert_non_null(strstr(text, "  GPU time lost since the job began (through step 119): "
				     "2.200 GPU-hours (Storage 2.000, stages 0.000, variation 0.200); "
				     "most to rank 6 on gpu-node-3 2.000, rank 2 on n0 0.008\n"));
	free(text);
	json_decref(rep);
	ts_jobs_render_metrics(&j, 1, 5, &m);
	assert_non_null(strstr(m.data, "# TYPE trainscope_job_gpu_seconds_lost_total counter\n"));
	assert_non_null(strstr(m.data, "trainscope_job_gpu_seconds_lost_total{k8s_namespace=\"ns\","
				       "training_job=\"net\",cause=\"Storage\"} 7200.000\n"));
	assert_non_null(strstr(m.data, ",cause=\"data\"} 720.000\n"));
	assert_non_null(strstr(m.data, "trainscope_rank_gpu_seconds_lost_total{k8s_namespace=\"ns\","
				       "training_job=\"net\",rank=\"6\""));
	assert_null(strstr(m.data, "rank_gpu_seconds_lost_total{k8s_namespace=\"ns\","
				   "training_job=\"net\",rank=\"2\""));
	ts_buf_free(&m);
	ts_job_free(j);
}

static void test_healthy(void **state)
{
	for (unsigned seed = 1; seed < 6; seed++) {
		struct net_sim s = { true, -1, -1, false, -1, -1, seed };
		uint64_t first;
		struct ts_job *j = run(&s, 200, &first);
		(void)state;
		assert_int_equal(first, 0);
		assert_int_equal(ts_job_result(j)->nslow, 0);
		ts_job_free(j);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node),
		cmocka_unit_test(test_no_step_cost_no_verdict),
		cmocka_unit_test(test_link),
		cmocka_unit_test(test_job_wide),
		cmocka_unit_test(test_straggler_is_not_network),
		cmocka_unit_test(test_retransmits_place_node),
		cmocka_unit_test(test_nic_errors_place_node),
		cmocka_unit_test(test_peer_sends_place_link),
		cmocka_unit_test(test_condition_times),
		cmocka_unit_test(test_lost_time_outputs),
		cmocka_unit_test(test_gpu_time_outputs),
		cmocka_unit_test(test_healthy),
	};

	setenv("TRAINSCOPE_LOG", "warn", 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
