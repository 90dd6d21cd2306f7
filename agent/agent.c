// SPDX-License-Identifier: Apache-2.0
#include "agent.h"
#include "names.h"
#include "dcmi.h"
#include "httpd.h"
#include "log.h"
#include "nic.h"
#include "nvml.h"
#include "probe.h"
#include "proto/trainscope.pb-c.h"
#include "ranks.h"
#include "tsclock.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOP_PREEMPTORS 3
#define MAX_JOBS 64

struct job_seq {
	char ns[64], job[64];
	uint64_t producer_id, seq;
};

struct host_rec {
	Trainscope__V1__Record rec;
	Trainscope__V1__HostSample hs;
	Trainscope__V1__Preemptor pre[TOP_PREEMPTORS];
	Trainscope__V1__Preemptor *prep[TOP_PREEMPTORS];
};

struct rank_rates {
	double runq_ms, offcpu_ms, oncpu_ms; /* per second, last interval */
};

struct agent {
	struct agent_opts opts;
	struct tsn *nats;
	struct tsn_core_sub *ctl;
	struct ts_probe *probe;
	struct ts_nvml *nvml;
	struct ts_dcmi *dcmi; /* Ascend NPUs, where there is no NVML */
	struct ts_nic_counts nic_prev, nic; /* the node's ports: last reading, this period's */
	bool nic_ok;
	pthread_mutex_t lock; /* the rank table: ctl messages arrive on a nats.c thread */
	struct ts_ranks ranks;
	struct rank_rates rates[TS_MAX_SLOTS];
	struct job_seq jobs[MAX_JOBS];
	uint64_t nonce, last_tick_ns;
	uint64_t hellos, bad_ctl, samples, device_samples, publish_errors, unresolved;
	uint64_t refused;   /* announced processes not traced: ts_ranks_verify said no */
	uint64_t table_full; /* announcements dropped: every slot held, none stale */
	uint64_t pod_full;   /* ... or their pod holds TS_MAX_PER_POD slots */
	struct ts_preemptor pre[4096]; /* one period's preemptors, taken from the kernel */
	struct host_rec *recs;         /* [TS_MAX_SLOTS] */
	Trainscope__V1__Record **recp; /* [TS_MAX_SLOTS] */
};

static uint64_t now_ms(void)
{
	return ts_mono_ns() / 1000000;
}

static void ident_from_pb(struct ts_ident *id, const Trainscope__V1__Identity *pb)
{
	memset(id, 0, sizeof(*id));
	snprintf(id->ns, sizeof(id->ns), "%s", pb->namespace_ ? pb->namespace_ : "");
	snprintf(id->job, sizeof(id->job), "%s", pb->job ? pb->job : "");
	snprintf(id->pod, sizeof(id->pod), "%s", pb->pod ? pb->pod : "");
	snprintf(id->node, sizeof(id->node), "%s", pb->node ? pb->node : "");
	id->rank = pb->rank;
	id->local_rank = pb->local_rank;
	id->world_size = pb->world_size;
	id->pid = pb->pid;
	id->cgroup_id = pb->cgroup_id;
	id->dev_index = pb->device ? pb->device->index : pb->local_rank;
}

/* nats.c thread: a rank announced itself (or its exit). */
static void on_ctl(const char *subject, const void *data, size_t len, void *closure)
{
	struct agent *a = closure;
	Trainscope__V1__Batch *b = trainscope__v1__batch__unpack(NULL, len, data);
	struct ts_rank_entry *e;
	struct ts_ident id;

	pthread_mutex_lock(&a->lock);
	if (!b || !b->id || b->id->rank < 0 || b->id->pid <= 0) {
		a->bad_ctl++;
		ts_warn("agent: ignoring a malformed announcement on %s", subject);
	} else {
		ident_from_pb(&id, b->id);
		a->hellos++;
		const char *uid = b->id->pod_uid ? b->id->pod_uid : "";
		/* one process is one rank: the pod that announced it renames it (two entries
		 * would publish its samples as both ranks; the old rank's would mix two) */
		if ((e = ts_ranks_renamed(&a->ranks, &id)) && !strcmp(e->pod_uid, uid)) {
			ts_info("agent: pid %d of %s/%s is rank %d now (announced as rank %d)",
				id.pid, id.ns, id.job, id.rank, e->id.rank);
			e->id = id;
		}
		/* a pod at its most gives up one of its own forged or stale entries */
		bool pod_full = *uid && !ts_ranks_find(&a->ranks, &id) &&
				ts_ranks_of_pod(&a->ranks, uid) >= TS_MAX_PER_POD;
		if (pod_full && (e = ts_ranks_evictable(&a->ranks, uid, now_ms()))) {
			ts_ranks_forget(&a->ranks, e);
			pod_full = false;
		}
		if (pod_full) {
			if (!a->pod_full++)
				ts_warn("agent: pod %s announced more than %d ranks on this node: "
					"rank %d of %s/%s not traced (the first; "
					"trainscope_agent_announcements_dropped_total counts them)",
					uid, TS_MAX_PER_POD, id.rank, id.ns, id.job);
		} else if (!(e = ts_ranks_hello(&a->ranks, &id, now_ms()))) {
			if (!a->table_full++)
				ts_warn("agent: more than %d ranks on this node, none of them stale: "
					"rank %d of %s/%s not traced (the first; "
					"trainscope_agent_announcements_dropped_total counts them)",
					TS_MAX_SLOTS, id.rank, id.ns, id.job);
		} else {
			if (b->final)
				e->final = true;
			/* a refusal stands for the pod that announced: another pod's word for
			 * the same process is checked anew (a forger came first) */
			if (!e->resolved && strcmp(e->pod_uid, uid)) {
				snprintf(e->pod_uid, sizeof(e->pod_uid), "%s", uid);
				e->refused = false;
				e->next_try_ms = 0;
			}
		}
	}
	pthread_mutex_unlock(&a->lock);
	if (b)
		trainscope__v1__batch__free_unpacked(b, NULL);
}

static bool process_alive(uint32_t tgid)
{
	return kill((pid_t)tgid, 0) == 0 || errno == EPERM;
}

/* An announcement anyone may have forged names a process: traced only if it checks out.
 * The first refusal is said, all are counted; a refused entry is evictable. */
static bool refuse(struct agent *a, struct ts_rank_entry *e)
{
	char why[256];

	if (!ts_ranks_verify(&a->ranks, e->pod_uid, e->host_tgid, a->opts.pods_only, why,
			     sizeof(why)))
		return false;
	e->refused = true;
	if (!a->refused++)
		ts_warn("agent: not tracing rank %d of %s/%s (pid %d): %s (the first such refusal; "
			"trainscope_agent_refused_announcements_total counts them)", e->id.rank,
			e->id.ns, e->id.job, e->id.pid, why);
	return true;
}

/* Looks for an unresolved rank's process, and traces it once it checks out. */
static void resolve(struct agent *a, struct ts_rank_entry *e, uint64_t now)
{
	if (ts_ranks_resolve(&a->ranks, &e->id, &e->host_tgid, &e->id.cgroup_id)) {
		ts_ranks_missed(e, now);
		return;
	}
	if (refuse(a, e))
		return;
	if (ts_probe_trace(a->probe, e->host_tgid, e->id.cgroup_id, e->slot)) {
		ts_ranks_missed(e, now);
		return;
	}
	e->resolved = true;
	memset(&e->prev, 0, sizeof(e->prev));
	ts_info("agent: tracing rank %d of %s/%s: host pid %u, cgroup %" PRIu64, e->id.rank,
		e->id.ns, e->id.job, e->host_tgid, e->id.cgroup_id);
}

/* Looks a pass may take for unresolved ranks (each walks /proc): a flood of
 * announcements whose processes do not exist costs a bounded share of a core. */
#define RESOLVE_PER_PASS 4

/* Starts, keeps or stops tracing each known rank. Unresolved ranks due a look are
 * looked for fewest failed looks first, so a rank just announced goes before a flood's
 * entries that failed before. */
static void follow(struct agent *a)
{
	uint64_t now = now_ms();
	int budget = RESOLVE_PER_PASS;

	for (int i = 0; i < TS_MAX_SLOTS; i++) {
		struct ts_rank_entry *e = &a->ranks.e[i];
		if (!e->used)
			continue;
		bool gone = e->final || now - e->last_hello_ms > (uint64_t)a->opts.forget_after_ms ||
			    (e->resolved && !process_alive(e->host_tgid));
		if (!gone)
			continue;
		if (e->resolved)
			ts_probe_untrace(a->probe, e->host_tgid, e->id.cgroup_id);
		ts_info("agent: rank %d of %s/%s (pid %u) left", e->id.rank, e->id.ns, e->id.job,
			e->host_tgid);
		ts_ranks_forget(&a->ranks, e);
	}
	for (uint32_t tries = 0; tries <= TS_RESOLVE_MAX_TRIES && budget > 0; tries++)
		for (int i = 0; i < TS_MAX_SLOTS && budget > 0; i++) {
			struct ts_rank_entry *e = &a->ranks.e[i];
			if (e->used && !e->resolved && !e->refused && e->tries == tries &&
			    ts_ranks_due(e, now)) {
				resolve(a, e, now);
				budget--;
			}
		}
	a->unresolved = 0;
	for (int i = 0; i < TS_MAX_SLOTS; i++)
		a->unresolved += a->ranks.e[i].used && !a->ranks.e[i].resolved &&
				 !a->ranks.e[i].refused;
}

static struct job_seq *job_seq(struct agent *a, const char *ns, const char *job)
{
	struct job_seq *free_js = NULL;

	for (int i = 0; i < MAX_JOBS; i++) {
		if (a->jobs[i].producer_id && !strcmp(a->jobs[i].ns, ns) && !strcmp(a->jobs[i].job, job))
			return &a->jobs[i];
		if (!a->jobs[i].producer_id && !free_js)
			free_js = &a->jobs[i];
	}
	if (!free_js) /* recycle: a new producer id restarts the sequence cleanly */
		free_js = &a->jobs[a->nonce % MAX_JOBS];
	snprintf(free_js->ns, sizeof(free_js->ns), "%s", ns);
	snprintf(free_js->job, sizeof(free_js->job), "%s", job);
	free_js->producer_id = a->nonce ^ (ts_real_ns() * 0x9e3779b97f4a7c15ull) ^ 2;
	free_js->seq = 0;
	return free_js;
}

static void publish(struct agent *a, const struct ts_rank_entry *e, const char *kind,
		    Trainscope__V1__Record **recs, size_t n)
{
	Trainscope__V1__Batch b = TRAINSCOPE__V1__BATCH__INIT;
	Trainscope__V1__Identity id = TRAINSCOPE__V1__IDENTITY__INIT;
	struct job_seq *js = job_seq(a, e->id.ns, e->id.job);
	char subject[256];
	uint8_t *buf;
	size_t len;

	id.namespace_ = (char *)e->id.ns;
	id.job = (char *)e->id.job;
	id.node = (char *)a->opts.node;
	id.rank = -1;
	id.world_size = e->id.world_size;
	b.id = &id;
	b.producer_id = js->producer_id;
	b.seq = ++js->seq;
	b.records = recs;
	b.n_records = n;
	len = trainscope__v1__batch__get_packed_size(&b);
	if (!(buf = malloc(len ? len : 1))) {
		a->publish_errors++;
		return;
	}
	trainscope__v1__batch__pack(&b, buf);
	ts_subject(subject, sizeof(subject), e->id.ns, e->id.job, kind, a->opts.node);
	if (tsn_publish_seq(a->nats, subject, buf, len, b.producer_id, b.seq))
		a->publish_errors++;
	free(buf);
}

/* Keeps the slot's TOP_PREEMPTORS largest, in decreasing order. */
static void top_preemptors(struct host_rec *h, const struct ts_preemptor *all, int n, uint32_t slot)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		if (all[i].slot != slot)
			continue;
		int at = k < TOP_PREEMPTORS ? k++ : TOP_PREEMPTORS;
		while (at > 0 && h->pre[at - 1].time_ns < all[i].ns) {
			if (at < TOP_PREEMPTORS)
				h->pre[at] = h->pre[at - 1];
			at--;
		}
		if (at < TOP_PREEMPTORS) {
			trainscope__v1__preemptor__init(&h->pre[at]);
			h->pre[at].comm = (char *)all[i].comm;
			h->pre[at].pid = (int32_t)all[i].pid;
			h->pre[at].time_ns = all[i].ns;
		}
	}
	for (int i = 0; i < k; i++)
		h->prep[i] = &h->pre[i];
	h->hs.preemptors = h->prep;
	h->hs.n_preemptors = (size_t)k;
}

static void host_sample(struct agent *a, struct ts_rank_entry *e, struct host_rec *h,
			const struct ts_preemptor *pre, int npre, uint64_t start, uint64_t interval)
{
	struct ts_slot_acc cur, d;

	memset(h, 0, sizeof(*h));
	trainscope__v1__record__init(&h->rec);
	trainscope__v1__host_sample__init(&h->hs);
	if (ts_probe_read(a->probe, e->slot, &cur))
		memset(&cur, 0, sizeof(cur));
	d.oncpu_ns = cur.oncpu_ns - e->prev.oncpu_ns;
	d.offcpu_ns = cur.offcpu_ns - e->prev.offcpu_ns;
	d.runq_ns = cur.runq_ns - e->prev.runq_ns;
	d.io_ns = cur.io_ns - e->prev.io_ns;
	d.io_count = cur.io_count - e->prev.io_count;
	d.involuntary = cur.involuntary - e->prev.involuntary;
	d.tcp_retx = cur.tcp_retx - e->prev.tcp_retx;
	e->prev = cur;
	h->hs.rank = e->id.rank;
	h->hs.start_ns = start;
	h->hs.interval_ns = interval;
	h->hs.oncpu_ns = d.oncpu_ns;
	h->hs.offcpu_ns = d.offcpu_ns;
	h->hs.runq_delay_ns = d.runq_ns;
	h->hs.involuntary_switches = d.involuntary;
	h->hs.io_latency_ns = d.io_ns;
	h->hs.io_count = d.io_count;
	h->hs.tcp_retransmits = d.tcp_retx;
	h->hs.nic_errors = a->nic.errors;
	h->hs.nic_drops = a->nic.drops;
	h->hs.nic_link_downs = (uint32_t)a->nic.link_downs;
	h->hs.nic_xmit_wait = a->nic.xmit_wait;
	top_preemptors(h, pre, npre, e->slot);
	h->rec.kind_case = TRAINSCOPE__V1__RECORD__KIND_HOST_SAMPLE;
	h->rec.host_sample = &h->hs;
	a->rates[e->slot] = (struct rank_rates){ d.runq_ns * 1e3 / interval, d.offcpu_ns * 1e3 / interval,
						 d.oncpu_ns * 1e3 / interval };
	a->samples++;
}

/* The rank's GPU or NPU in the same terms: a node has one or the other. */
static int read_device(struct agent *a, int index, struct ts_gpu_sample *g)
{
	if (a->nvml)
		return ts_nvml_sample(a->nvml, index, g);
	return a->dcmi ? ts_dcmi_sample_gpu(a->dcmi, index, g) : -ENODEV;
}

static void device_sample(struct agent *a, struct ts_rank_entry *e)
{
	Trainscope__V1__Record rec = TRAINSCOPE__V1__RECORD__INIT, *recp = &rec;
	Trainscope__V1__DeviceSample ds = TRAINSCOPE__V1__DEVICE_SAMPLE__INIT;
	Trainscope__V1__Device dev = TRAINSCOPE__V1__DEVICE__INIT;
	struct ts_gpu_sample g;

	if (read_device(a, e->id.dev_index, &g))
		return;
	dev.index = g.index;
	dev.uuid = g.uuid;
	ds.device = &dev;
	ds.time_ns = ts_real_ns();
	ds.sm_clock_mhz = g.sm_clock_mhz;
	ds.throttle_reasons = g.throttle_reasons;
	ds.temperature_c = g.temperature_c;
	ds.power_mw = g.power_mw;
	ds.xid_errors = g.xid_errors;
	ds.ecc_errors = g.ecc_errors;
	ds.pcie_replays = g.pcie_replays;
	ds.other_processes = ts_ranks_strangers(&a->ranks, e->host_tgid, g.pids, g.npids);
	rec.kind_case = TRAINSCOPE__V1__RECORD__KIND_DEVICE_SAMPLE;
	rec.device_sample = &ds;
	publish(a, e, "dev", &recp, 1);
	a->device_samples++;
}

/* This period's port counters (zero when the ports cannot be read). */
static void read_nic(struct agent *a)
{
	struct ts_nic_counts cur;

	memset(&a->nic, 0, sizeof(a->nic));
	if (ts_nic_read(a->opts.sysfs, &cur))
		return;
	if (a->nic_ok)
		ts_nic_delta(&cur, &a->nic_prev, &a->nic);
	a->nic_prev = cur;
	a->nic_ok = true;
}

void agent_tick(struct agent *a)
{
	uint64_t now = ts_real_ns(), interval = a->last_tick_ns ? now - a->last_tick_ns : 0;
	bool done[TS_MAX_SLOTS] = { false };

	pthread_mutex_lock(&a->lock);
	follow(a);
	read_nic(a);
	int npre = ts_probe_take_preemptors(a->probe, a->pre, (int)(sizeof(a->pre) / sizeof(a->pre[0])));
	/* one batch per job: its ranks on this node */
	for (int i = 0; interval && i < TS_MAX_SLOTS; i++) {
		struct ts_rank_entry *lead = &a->ranks.e[i];
		size_t n = 0;
		if (!lead->used || !lead->resolved || done[i])
			continue;
		for (int k = i; k < TS_MAX_SLOTS; k++) {
			struct ts_rank_entry *e = &a->ranks.e[k];
			if (!e->used || !e->resolved || done[k] || strcmp(e->id.ns, lead->id.ns) ||
			    strcmp(e->id.job, lead->id.job))
				continue;
			done[k] = true;
			host_sample(a, e, &a->recs[n], a->pre, npre, a->last_tick_ns, interval);
			a->recp[n] = &a->recs[n].rec;
			n++;
			device_sample(a, e);
		}
		publish(a, lead, "host", a->recp, n);
	}
	pthread_mutex_unlock(&a->lock);
	tsn_pump(a->nats);
	a->last_tick_ns = now;
}

int agent_new(struct agent **out, const struct agent_opts *opts, char *err, size_t errlen)
{
	struct agent *a = calloc(1, sizeof(*a));
	char subject[256];
	int rc;

	if (!a)
		return -ENOMEM;
	a->opts = *opts;
	if (a->opts.interval_ms <= 0)
		a->opts.interval_ms = 1000;
	if (a->opts.forget_after_ms <= 0)
		a->opts.forget_after_ms = 30000;
	if (!a->opts.sysfs)
		a->opts.sysfs = "/sys";
	a->nonce = ts_real_ns() ^ ((uint64_t)getpid() << 40);
	pthread_mutex_init(&a->lock, NULL);
	ts_ranks_init(&a->ranks, a->opts.host_cgroup);
	a->recs = calloc(TS_MAX_SLOTS, sizeof(*a->recs));
	a->recp = calloc(TS_MAX_SLOTS, sizeof(*a->recp));
	if (!a->recs || !a->recp) {
		rc = -ENOMEM;
		goto fail;
	}
	if ((rc = ts_probe_open(&a->probe, err, errlen)))
		goto fail;
	/* a node has GPUs or NPUs: NVML first, DCMI where there is none */
	if (!ts_nvml_open(&a->nvml))
		ts_info("agent: NVML sees %d GPUs", ts_nvml_count(a->nvml));
	else if (!ts_dcmi_open(&a->dcmi))
		ts_info("agent: DCMI sees %d NPUs", ts_dcmi_count(a->dcmi));
	else
		ts_info("agent: no NVML or DCMI on this node: no device health samples");
	if ((rc = tsn_open(&a->nats, &a->opts.nats))) {
		snprintf(err, errlen, "cannot use NATS at %s", a->opts.nats.url);
		goto fail;
	}
	/* announcements of ranks on this node, from every job */
	char node[64];
	ts_subject_token(node, sizeof(node), a->opts.node);
	snprintf(subject, sizeof(subject), "ts.v1.*.*.ctl.%s", node);
	if ((rc = tsn_subscribe_core(a->nats, subject, on_ctl, a, &a->ctl))) {
		snprintf(err, errlen, "cannot subscribe to %s", subject);
		goto fail;
	}
	ts_info("agent: node %s, learning ranks from %s", a->opts.node, subject);
	*out = a;
	return 0;
fail:
	agent_free(a);
	return rc;
}

void agent_free(struct agent *a)
{
	if (!a)
		return;
	tsn_unsubscribe_core(a->ctl);
	tsn_close(a->nats);
	ts_probe_close(a->probe);
	ts_nvml_close(a->nvml);
	ts_dcmi_close(a->dcmi);
	free(a->recs);
	free(a->recp);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

void agent_describe(struct agent *a, struct ts_buf *b)
{
	const struct ts_probe_feature *f;
	int n = ts_probe_features(a->probe, &f);

	for (int i = 0; i < n; i++)
		ts_buf_printf(b, "%s: %s%s%s\n", f[i].name, f[i].ok ? "on" : "off", f[i].ok ? "" : ": ",
			      f[i].ok ? "" : f[i].why);
	struct ts_nic_counts nc;
	if (!ts_nic_read(a->opts.sysfs, &nc))
		ts_buf_printf(b, "nic: on (%d ports under %s)\n", nc.ports, a->opts.sysfs);
	else
		ts_buf_printf(b, "nic: off: no network port with a device under %s/class\n",
			      a->opts.sysfs);
	if (a->nvml)
		ts_buf_printf(b, "gpu_health: on (NVML, %d GPUs)\n", ts_nvml_count(a->nvml));
	else if (a->dcmi)
		ts_buf_printf(b, "gpu_health: on (DCMI, %d NPUs)\n", ts_dcmi_count(a->dcmi));
	else
		ts_buf_printf(b, "gpu_health: off: no usable NVML or DCMI on this node\n");
}

enum {
	AM_NATS_ACKED,
	AM_NATS_DROPPED,
	AM_NATS_DENIED,
	AM_NATS_CONNECTED,
	AM_HELLOS,
	AM_ANNOUNCEMENTS_DROPPED,
	AM_REFUSED_ANNOUNCEMENTS,
	AM_BAD_ANNOUNCEMENTS,
	AM_HOST_SAMPLES,
	AM_DEVICE_SAMPLES,
	AM_PUBLISH_ERRORS,
	AM_UNRESOLVED_RANKS,
	AM_NODE_NIC_PORTS,
	AM_NODE_NIC_ERRORS,
	AM_NODE_NIC_DROPS,
	AM_NODE_NIC_LINK_DOWNS,
	AM_NODE_NIC_XMIT_WAIT,
	AM_FEATURE,
	AM_RANK_RUNQ,
};

static const struct ts_metric_family agent_metrics[] = {
	[AM_NATS_ACKED] = { "trainscope_agent_nats_acked_total", TS_COUNTER, NULL,
		"Batches stored by JetStream." },
	[AM_NATS_DROPPED] = { "trainscope_agent_nats_dropped_total", TS_COUNTER, NULL,
		"Batches dropped from a full outbox (NATS away)." },
	[AM_NATS_DENIED] = { "trainscope_agent_nats_denied_total", TS_COUNTER, NULL,
		"Operations NATS refused as not permitted (the server's words are "
		"logged)." },
	[AM_NATS_CONNECTED] = { "trainscope_agent_nats_connected", TS_GAUGE, NULL,
		"1 while connected to NATS." },
	[AM_HELLOS] = { "trainscope_agent_hellos_total", TS_COUNTER, NULL,
		"Rank announcements received." },
	[AM_ANNOUNCEMENTS_DROPPED] = { "trainscope_agent_announcements_dropped_total",
		TS_COUNTER, NULL,
		"Announcements dropped: every slot held by a traced or recently "
		"announced rank, or their pod holding its most on the node." },
	[AM_REFUSED_ANNOUNCEMENTS] = { "trainscope_agent_refused_announcements_total",
		TS_COUNTER, NULL,
		"Announced processes not traced: pid 1, the agent, or (pods only) not "
		"in the announcing pod's cgroup." },
	[AM_BAD_ANNOUNCEMENTS] = { "trainscope_agent_bad_announcements_total", TS_COUNTER, NULL,
		"Announcements refused as malformed." },
	[AM_HOST_SAMPLES] = { "trainscope_agent_host_samples_total", TS_COUNTER, NULL,
		"Host samples published." },
	[AM_DEVICE_SAMPLES] = { "trainscope_agent_device_samples_total", TS_COUNTER, NULL,
		"Device (GPU or NPU) samples published." },
	[AM_PUBLISH_ERRORS] = { "trainscope_agent_publish_errors_total", TS_COUNTER, NULL,
		"Batches refused by the outbox." },
	[AM_UNRESOLVED_RANKS] = { "trainscope_agent_unresolved_ranks", TS_GAUGE, NULL,
		"Announced ranks whose process was not found yet." },
	[AM_NODE_NIC_PORTS] = { "trainscope_node_nic_ports", TS_GAUGE, NULL,
		"Network ports read (Ethernet with a device, InfiniBand/RoCE)." },
	[AM_NODE_NIC_ERRORS] = { "trainscope_node_nic_errors_total", TS_COUNTER, NULL,
		"Port errors: rx/tx errors, IB symbol, link-recovery, receive and "
		"integrity errors." },
	[AM_NODE_NIC_DROPS] = { "trainscope_node_nic_drops_total", TS_COUNTER, NULL,
		"Transmit drops and IB transmit discards." },
	[AM_NODE_NIC_LINK_DOWNS] = { "trainscope_node_nic_link_downs_total", TS_COUNTER, NULL,
		"Carrier losses and IB link-downed events." },
	[AM_NODE_NIC_XMIT_WAIT] = { "trainscope_node_nic_xmit_wait_total", TS_COUNTER, NULL,
		"IB port_xmit_wait ticks (data to send, no credit)." },
	[AM_FEATURE] = { "trainscope_agent_feature", TS_GAUGE, "feature",
		"1 when the feature runs." },
	[AM_RANK_RUNQ] = { "trainscope_rank_runq_ms_per_second", TS_GAUGE,
		"k8s_namespace,training_job,rank", "Run-queue delay of the rank." },
};

const struct ts_metric_table agent_metric_table = TS_METRIC_TABLE(agent_metrics);

#define PUT(b, id, v) ts_metric_u64((b), &agent_metrics[(id)], (uint64_t)(v))

/* Bounded cardinality: at most TS_MAX_SLOTS ranks, three series each. */
void agent_render_metrics(void *agent, struct ts_buf *b)
{
	struct agent *a = agent;
	const struct ts_probe_feature *f;
	int n = ts_probe_features(a->probe, &f);
	struct tsn_stats ns;

	tsn_get_stats(a->nats, &ns);
	PUT(b, AM_NATS_ACKED, ns.acked);
	PUT(b, AM_NATS_DROPPED, ns.dropped);
	PUT(b, AM_NATS_DENIED, ns.denied);
	PUT(b, AM_NATS_CONNECTED, ns.connected);
	pthread_mutex_lock(&a->lock);
	PUT(b, AM_HELLOS, a->hellos);
	PUT(b, AM_ANNOUNCEMENTS_DROPPED, a->table_full + a->pod_full);
	PUT(b, AM_REFUSED_ANNOUNCEMENTS, a->refused);
	PUT(b, AM_BAD_ANNOUNCEMENTS, a->bad_ctl);
	PUT(b, AM_HOST_SAMPLES, a->samples);
	PUT(b, AM_DEVICE_SAMPLES, a->device_samples);
	PUT(b, AM_PUBLISH_ERRORS, a->publish_errors);
	PUT(b, AM_UNRESOLVED_RANKS, a->unresolved);
	if (a->nic_ok) { /* sums over the node's ports, as sysfs counts them */
		PUT(b, AM_NODE_NIC_PORTS, (uint64_t)a->nic_prev.ports);
		PUT(b, AM_NODE_NIC_ERRORS, a->nic_prev.errors);
		PUT(b, AM_NODE_NIC_DROPS, a->nic_prev.drops);
		PUT(b, AM_NODE_NIC_LINK_DOWNS, a->nic_prev.link_downs);
		PUT(b, AM_NODE_NIC_XMIT_WAIT, a->nic_prev.xmit_wait);
	}
	ts_metric_head(b, &agent_metrics[AM_FEATURE]);
	for (int i = 0; i < n; i++)
		ts_metric_sample(b, &agent_metrics[AM_FEATURE], "{feature=\"%s\"} %d\n", f[i].name,
				 f[i].ok);
	ts_metric_head(b, &agent_metrics[AM_RANK_RUNQ]);
	for (int i = 0; i < TS_MAX_SLOTS; i++) {
		struct ts_rank_entry *e = &a->ranks.e[i];
		char lns[160], ljob[160]; /* label values escaped: names are the pods' */
		if (e->used && e->resolved)
			ts_metric_sample(b, &agent_metrics[AM_RANK_RUNQ],
					 "{k8s_namespace=\"%s\",training_job=\"%s\",rank=\"%d\"} %.3f\n",
					 ts_name_label(lns, sizeof(lns), e->id.ns),
					 ts_name_label(ljob, sizeof(ljob), e->id.job), e->id.rank,
					 a->rates[i].runq_ms);
	}
	pthread_mutex_unlock(&a->lock);
}
