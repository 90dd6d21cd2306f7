// SPDX-License-Identifier: Apache-2.0
/* A NATS message in: its subject (ts.v1.<ns>.<job>.<kind>.<id>[.<partition>]) checked,
 * its batch decoded (a relay's Bundle: each of its batches, alike) and held to the
 * subject its identity publishes on, duplicates dropped and gaps counted per producer,
 * and its records given to the job they name: steps, hangs and Hello groups of a rank, a
 * node agent's host and device samples, a rank's end, a relay's notice of processes it
 * cannot use. */
#include "analyzer_impl.h"
#include "ident.h"
#include "log.h"
#include "proto/wire.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct producer *prod_slot(struct producer *tab, size_t cap, uint64_t id)
{
	size_t i = (size_t)(id * 0x9e3779b97f4a7c15ull) & (cap - 1);

	while (tab[i].used && tab[i].id != id)
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

struct producer *ts_analyzer_producer(struct ts_analyzer *a, uint64_t id)
{
	struct producer *p;

	if ((a->nprod + 1) * 2 > a->capprod) {
		size_t cap = a->capprod * 2;
		struct producer *t = calloc(cap, sizeof(*t));
		if (!t)
			return NULL;
		for (size_t i = 0; i < a->capprod; i++)
			if (a->prod[i].used)
				*prod_slot(t, cap, a->prod[i].id) = a->prod[i];
		free(a->prod);
		a->prod = t;
		a->capprod = cap;
	}
	p = prod_slot(a->prod, a->capprod, id);
	if (!p->used) {
		p->used = true;
		p->id = id;
		a->nprod++;
	}
	p->last_ns = a->now_ns;
	return p;
}

/* Where job j (one followed) stands in the table. */
static int job_index(const struct ts_analyzer *a, const struct ts_job *j)
{
	int i = 0;

	while (a->jobs[i] != j)
		i++;
	return i;
}

enum kind { K_RANK, K_HOST, K_DEV, K_HANG, K_CTL, K_POD, K_BAD };
static const char *const kinds[] = { "rank", "host", "dev", "hang", "ctl", "pod" };

/* A rank's batch: on its own subject, or in its pod's Bundle. */
static bool rank_kind(enum kind k)
{
	return k == K_RANK || k == K_POD;
}

/* ts.v1.<ns>.<job>.<kind>.<leaf>[.<partition>]: 6 tokens, none empty, a known kind, and
 * the partition the stream's subject transform appends (a number) when partitioned.
 * *base: the length without the partition; *part: the partition or -1. */
static enum kind subject_kind(const char *s, size_t *base, long *part)
{
	const char *tok[7] = { s };
	int dots = 0;

	if (strncmp(s, "ts.v1.", 6) != 0)
		return K_BAD;
	for (const char *c = s; *c; c++)
		if (*c == '.') {
			if (c[1] == '.' || c[1] == 0 || ++dots > 6)
				return K_BAD;
			tok[dots] = c + 1;
		}
	if (dots < 5)
		return K_BAD;
	*base = strlen(s);
	*part = -1;
	if (dots == 6) {
		char *end;
		*part = strtol(tok[6], &end, 10);
		if (*end || *part < 0 || *part > 65535 || !isdigit((unsigned char)*tok[6]))
			return K_BAD;
		*base = (size_t)(tok[6] - s - 1);
	}
	for (int k = 0; k < K_BAD; k++)
		if ((size_t)(tok[5] - tok[4] - 1) == strlen(kinds[k]) &&
		    !strncmp(tok[4], kinds[k], strlen(kinds[k])))
			return (enum kind)k;
	return K_BAD;
}

/* A partitioned analyzer's messages carry the partition NATS computed; one that is not
 * the job's partition under this analyzer's count was mapped under another count. */
static void check_partition(struct ts_analyzer *a, const char *subject, long part)
{
	const char *ns = subject + 6, *job = strchr(ns, '.') + 1, *kind = strchr(job, '.');

	if (part < 0 || a->opts.partitions <= 1)
		return;
	if ((long)ts_partition(ns, (size_t)(job - 1 - ns), job, (size_t)(kind - job),
			       (unsigned)a->opts.partitions) == part)
		return;
	if (!a->st.other_partition++)
		ts_warn("analyzer: %s was mapped to partition %ld, which its job is not under %d "
			"partitions: the partition count changed while it was stored (counted in "
			"trainscope_analyzer_other_partition_total; analysed all the same)", subject,
			part, a->opts.partitions);
}

/* The step's sampled GEMMs: device ns per flop (their tflops is flops / ns / 1e3); NAN
 * when none was sampled. */
static double gemm_ns_per_flop(const Trainscope__V1__Step *s)
{
	double ns = 0, flops = 0;

	for (size_t i = 0; i < s->n_gemms; i++) {
		ns += (double)s->gemms[i]->time_ns;
		flops += s->gemms[i]->tflops * (double)s->gemms[i]->time_ns * 1e3;
	}
	return ns > 0 && flops > 0 ? ns / flops : NAN;
}

static void to_rank_step(const Trainscope__V1__Step *s, struct ts_rank_step *out)
{
	out->step = s->step;
	out->start_ns = s->start_ns;
	out->end_ns = s->end_ns;
	/* a step the device was not timed in (TRAINSCOPE_DEVICE_EVERY) has no compute: read
	 * as 0 it would look host-bound */
	out->m[TS_M_COMPUTE] = s->device_untimed ? NAN : (double)s->compute_ns / 1e6;
	out->m[TS_M_COLLECTIVE] = (double)s->collective_ns / 1e6;
	out->m[TS_M_LAUNCH] = (double)s->launch_ns / 1e6;
	out->m[TS_M_DATALOADER] = (double)s->dataloader_ns / 1e6;
	out->m[TS_M_CHECKPOINT] = (double)s->checkpoint_ns / 1e6;
	out->m[TS_M_GEMM] = gemm_ns_per_flop(s);
	out->ncomm = 0;
	for (size_t i = 0; i < s->n_comms && out->ncomm < TS_STEP_COMMS; i++) {
		const Trainscope__V1__CommStat *c = s->comms[i];
		out->comm[out->ncomm++] = (struct ts_comm_time){
			.id = c->comm_hash, .nranks = c->nranks, .count = c->count,
			.p2p = c->p2p_count, .ms = (double)c->time_ns / 1e6,
			.mb = (double)c->bytes / 1e6 };
	}
	out->npeer = 0;
	for (size_t i = 0; i < s->n_peers && out->npeer < TS_STEP_PEERS; i++) {
		const Trainscope__V1__PeerStat *p = s->peers[i];
		out->peer[out->npeer++] = (struct ts_peer_time){
			.comm = p->comm_hash, .peer = p->peer, .ns = (double)p->time_ns,
			.bytes = (double)p->bytes };
	}
}

static void note_identity(struct ts_job *j, const Trainscope__V1__Identity *id)
{
	struct ts_rank_meta *m = ts_job_rank(j, id->rank);

	if (!m)
		return;
	snprintf(m->pod, sizeof(m->pod), "%s", id->pod ? id->pod : "");
	snprintf(m->node, sizeof(m->node), "%s", id->node ? id->node : "");
	if (id->device && id->device->uuid && *id->device->uuid)
		snprintf(m->device, sizeof(m->device), "%s", id->device->uuid);
	else if (id->device)
		snprintf(m->device, sizeof(m->device), "%d", id->device->index);
	m->pid = id->pid;
	m->device_index = id->device ? id->device->index : id->local_rank;
}

static void host_sample(struct ts_job *j, const Trainscope__V1__HostSample *h)
{
	double per_s = h->interval_ns ? 1e9 / (double)h->interval_ns : 0;
	struct ts_host_view v = {
		.valid = per_s > 0,
		.time_ns = h->start_ns + h->interval_ns,
		.runq_ms_per_s = (double)h->runq_delay_ns / 1e6 * per_s,
		.offcpu_ms_per_s = (double)h->offcpu_ns / 1e6 * per_s,
		.oncpu_ms_per_s = (double)h->oncpu_ns / 1e6 * per_s,
		.involuntary_per_s = h->involuntary_switches * per_s,
		.tcp_retrans_per_s = h->tcp_retransmits * per_s,
		.nic_err_per_s = (double)h->nic_errors * per_s,
		.nic_drop_per_s = (double)h->nic_drops * per_s,
		.link_down_per_s = h->nic_link_downs * per_s,
	};

	if (h->n_preemptors && h->preemptors[0]->comm) {
		snprintf(v.top_comm, sizeof(v.top_comm), "%s", h->preemptors[0]->comm);
		v.top_pid = h->preemptors[0]->pid;
		v.top_ms_per_s = (double)h->preemptors[0]->time_ns / 1e6 * per_s;
	}
	ts_job_host_view(j, h->rank, &v);
}

static void device_sample(struct ts_job *j, const char *node, const Trainscope__V1__DeviceSample *d)
{
	struct ts_device_view v = {
		.valid = true,
		.sm_clock_mhz = d->sm_clock_mhz,
		.throttle_reasons = d->throttle_reasons,
		.xid_errors = d->xid_errors,
		.temperature_c = d->temperature_c,
		.other_procs = d->other_processes,
	};

	ts_job_device_view(j, node ? node : "", d->device ? d->device->index : -1, &v);
}

static int refuse(struct ts_analyzer *a, uint64_t *counter, int err, const char *subject,
		  const char *why)
{
	(*counter)++;
	ts_warn("analyzer: refused message on %s: %s", subject, why);
	(void)a;
	return err;
}

/* Per producer: duplicates dropped (1 is returned), gaps counted. A batch behind the
 * last one by less than 64 that never came is a resend stored out of order: taken, and
 * no longer counted lost. */
static int check_seq(struct ts_analyzer *a, const Trainscope__V1__Batch *b, uint64_t *dropped,
		     int64_t *lost)
{
	struct producer *p = ts_analyzer_producer(a, b->producer_id);
	uint64_t back;

	if (!p)
		return -ENOMEM;
	if (b->seq <= p->last_seq) {
		back = p->last_seq - b->seq;
		if (back >= 64 || (p->seen >> back) & 1) {
			a->st.duplicates++;
			return 1;
		}
		p->seen |= 1ull << back;
		a->st.reordered++;
		if (a->st.lost_batches)
			a->st.lost_batches--;
		*lost = -1;
		return 0;
	}
	if (p->last_seq && b->seq > p->last_seq + 1) {
		a->st.lost_batches += b->seq - p->last_seq - 1;
		*lost = (int64_t)(b->seq - p->last_seq - 1);
		ts_debug("analyzer: %" PRIu64 " batches missing from producer %016" PRIx64 " (rank %d)",
			 b->seq - p->last_seq - 1, b->producer_id, b->id->rank);
	}
	back = b->seq - p->last_seq;
	p->seen = (back >= 64 ? 0 : p->seen << back) | 1;
	p->last_seq = b->seq;
	if (b->dropped_records > p->dropped) {
		a->st.ring_dropped += b->dropped_records - p->dropped;
		*dropped = b->dropped_records - p->dropped;
		p->dropped = b->dropped_records;
	}
	return 0;
}

/* A rank or world past the job's size grows it, within the limits. */
static int grow_for(struct ts_analyzer *a, struct ts_job *j, const Trainscope__V1__Identity *id)
{
	int want = id->rank >= id->world_size ? (id->rank < INT_MAX ? id->rank + 1 : INT_MAX)
					       : id->world_size;

	if (want <= ts_job_world(j))
		return 0;
	return ts_analyzer_budget_world(a, j, want, id->namespace_, id->job);
}

static void rank_records(struct ts_analyzer *a, struct ts_job *j, const Trainscope__V1__Batch *b)
{
	const Trainscope__V1__Identity *id = b->id;
	int rc;

	note_identity(j, id);
	for (size_t i = 0; i < b->n_records; i++) {
		const Trainscope__V1__Record *r = b->records[i];
		struct ts_rank_step rs;
		if (r->kind_case == TRAINSCOPE__V1__RECORD__KIND_HANG) {
			const Trainscope__V1__Hang *h = r->hang;
			ts_job_rank_hang(j, id->rank, h->op, h->comm_hash, h->seq, h->pending_ns,
					 h->stacks);
			a->st.hangs++;
			ts_warn("analyzer: %s/%s rank %d reports a hang: %s seq %llu", id->namespace_,
				id->job, id->rank, h->op, (unsigned long long)h->seq);
			continue;
		}
		if (r->kind_case == TRAINSCOPE__V1__RECORD__KIND_HELLO && r->hello->n_groups &&
		    !grow_for(a, j, id)) {
			ts_job_rank_groups(j, id->rank, (const char *const *)r->hello->groups,
					   r->hello->n_groups);
			continue;
		}
		if (r->kind_case != TRAINSCOPE__V1__RECORD__KIND_STEP)
			continue;
		if (r->step->end_ns < r->step->start_ns) {
			a->st.bad_steps++;
			continue;
		}
		to_rank_step(r->step, &rs);
		if (grow_for(a, j, id))
			continue; /* counted as past a limit */
		if ((rc = ts_job_add_step(j, id->rank, id->world_size, &rs))) {
			if (rc == -EDOM)
				ts_analyzer_over_limit(a, L_STEP_JUMP, id->namespace_, id->job,
						       "a step far ahead");
			else
				a->st.bad_steps++;
			continue;
		}
		a->st.steps++;
		if (a->opts.on_step)
			a->opts.on_step(a->opts.on_report_ctx, j, id, r->step);
	}
	if (b->final && b->died)
		ts_job_rank_died(j, id->rank);
	else if (b->final)
		ts_job_rank_final(j, id->rank);
}

static void node_records(struct ts_analyzer *a, struct ts_job *j, const Trainscope__V1__Batch *b)
{
	for (size_t i = 0; i < b->n_records; i++) {
		const Trainscope__V1__Record *r = b->records[i];
		if (r->kind_case == TRAINSCOPE__V1__RECORD__KIND_HOST_SAMPLE) {
			host_sample(j, r->host_sample);
			a->st.host_samples++;
		} else if (r->kind_case == TRAINSCOPE__V1__RECORD__KIND_DEVICE_SAMPLE) {
			device_sample(j, b->id->node, r->device_sample);
			a->st.device_samples++;
		}
	}
}

/* A rank that ended (exit record, or lost) and steps again from before the steps the
 * job has analysed is a new run of the job: a launcher's restart, or the same name run
 * again. (A helper process of a live rank that exits, say a dataloader worker that
 * recorded something, sends an exit record too; the rank's steps then go on ahead.) */
static bool new_attempt(struct ts_job *j, const Trainscope__V1__Batch *b)
{
	const struct ts_rank_meta *m = ts_job_rank(j, b->id->rank);

	if (!m || !(m->final || m->lost))
		return false;
	for (size_t i = 0; i < b->n_records; i++)
		if (b->records[i]->kind_case == TRAINSCOPE__V1__RECORD__KIND_STEP)
			return b->records[i]->step->step < ts_job_next_step(j);
	return false;
}

/* The subject a producer of this identity publishes on (ts_subject, as the relay and the
 * agent make it): anything else is a batch that claims someone else's job. */
static bool subject_matches(const char *subject, size_t base, enum kind kind,
			    const Trainscope__V1__Batch *b)
{
	const Trainscope__V1__Identity *id = b->id;
	char want[512], leaf[16];
	const char *at = kind == K_POD ? id->pod : id->node;
	int len;

	snprintf(leaf, sizeof(leaf), "%d", id->rank);
	if (kind == K_RANK || kind == K_HANG)
		at = leaf;
	len = ts_subject(want, sizeof(want), id->namespace_, id->job, kinds[kind], at ? at : "");
	return len >= 0 && (size_t)len == base && !strncmp(want, subject, base);
}

static int refuse_mismatch(struct ts_analyzer *a, const char *subject,
			   const Trainscope__V1__Batch *b)
{
	struct producer *p = ts_analyzer_producer(a, b->producer_id);

	a->st.mismatched++;
	if (p && !p->said_mismatch) { /* once per producer: a forger may send many */
		p->said_mismatch = true;
		ts_warn("analyzer: refused batches of producer %016" PRIx64 " on %s: they claim job "
			"%s/%s rank %d pod %s node %s, which publishes elsewhere (counted in "
			"trainscope_analyzer_mismatched_batches_total)", b->producer_id, subject,
			b->id->namespace_, b->id->job, b->id->rank, b->id->pod ? b->id->pod : "",
			b->id->node ? b->id->node : "");
	}
	return -EBADMSG;
}

/* A relay's word that its process makes steps with no rank (it holds them), or that a
 * rank runs collectives and GEMMs and makes no step: no records, only the count. */
static bool unranked_notice(const Trainscope__V1__Batch *b)
{
	return b->id->rank < 0 ? b->unranked_steps > 0 && !b->n_records
			       : b->stepless_records > 0 && !b->n_records;
}

/* The job's report says which processes cannot be used and what to set; said once per
 * process here. */
static int unranked(struct ts_analyzer *a, struct ts_job *j, const Trainscope__V1__Batch *b)
{
	const Trainscope__V1__Identity *id = b->id;
	bool norank = id->rank < 0;
	uint64_t n = norank ? b->unranked_steps : b->stepless_records;

	a->st.unranked_notices++;
	if (!ts_job_unranked(j, b->producer_id, id->pod, id->pid, norank ? -1 : id->rank, n))
		return 0;
	a->st.unranked_processes++;
	ts_warn("analyzer: %s/%s: process %d (pod %s, rank %d) made %" PRIu64 " %s: its report "
		"says what to set", id->namespace_, id->job, id->pid,
		id->pod && *id->pod ? id->pod : "-", id->rank, n,
		norank ? "steps with no rank" : "collectives and GEMMs and no step");
	return 0;
}

static bool has_steps(const Trainscope__V1__Batch *b)
{
	for (size_t i = 0; i < b->n_records; i++)
		if (b->records[i]->kind_case == TRAINSCOPE__V1__RECORD__KIND_STEP)
			return true;
	return false;
}

/* Reports are JSON: a name must be UTF-8 text (NULL, unset, is fine). */
static bool utf8(const char *s)
{
	json_t *t;

	if (!s)
		return true;
	t = json_string(s);
	json_decref(t);
	return t != NULL;
}

static int ingest_batch(struct ts_analyzer *a, const char *subject, size_t base, enum kind kind,
			Trainscope__V1__Batch *b)
{
	const Trainscope__V1__Identity *id = b->id;
	uint64_t dropped = 0;
	int64_t lost = 0;
	struct ts_job *j;
	int rc;

	if (!id || !id->namespace_ || !*id->namespace_ || !id->job || !*id->job ||
	    (rank_kind(kind) && id->rank < 0 && !unranked_notice(b)))
		return refuse(a, &a->st.bad_msgs, -EBADMSG, subject, "batch without identity");
	if (!b->producer_id || !b->seq)
		return refuse(a, &a->st.bad_msgs, -EBADMSG, subject, "batch without producer/seq");
	if (!utf8(id->namespace_) || !utf8(id->job) || !utf8(id->pod) || !utf8(id->node))
		return refuse(a, &a->st.bad_msgs, -EBADMSG, subject, "names that are not UTF-8");
	if (!subject_matches(subject, base, kind, b))
		return refuse_mismatch(a, subject, b);
	if (kind == K_CTL) { /* announcements are for node agents */
		a->st.control++;
		return 1;
	}
	if ((rc = check_seq(a, b, &dropped, &lost)))
		return rc;
	if ((rc = ts_analyzer_job_get(a, id->namespace_, id->job, id->world_size, &j)))
		return rc;
	if (rank_kind(kind) && new_attempt(j, b)) {
		ts_info("analyzer: %s/%s: a new run (rank %d steps again after its exit): the "
			"report starts afresh", id->namespace_, id->job, id->rank);
		ts_analyzer_drop_job(a, job_index(a, j));
		a->st.attempts++;
		if ((rc = ts_analyzer_job_get(a, id->namespace_, id->job, id->world_size, &j)))
			return rc;
	}
	if (dropped || lost) { /* news for the report, a gap filled late too */
		ts_job_data_loss(j, dropped, lost);
		a->dirty[job_index(a, j)] = true;
	}
	if (rank_kind(kind) && unranked_notice(b))
		return unranked(a, j, b);
	if (rank_kind(kind) && has_steps(b))
		ts_job_ranked(j, b->producer_id);
	if (rank_kind(kind) || kind == K_HANG)
		rank_records(a, j, b);
	else
		node_records(a, j, b);
	return 0;
}

/* Where a message's batches go: its subject as checked. */
struct arrival {
	struct ts_analyzer *a;
	const char *subject;
	size_t base;
	enum kind kind;
	int err; /* the first of a Bundle's batches refused */
};

/* One encoded batch: a message's own, or one of a Bundle's. */
static int ingest_encoded(struct arrival *m, const uint8_t *data, size_t len)
{
	Trainscope__V1__Batch *b = trainscope__v1__batch__unpack(NULL, len, data);
	int err;

	if (!b)
		return refuse(m->a, &m->a->st.bad_msgs, -EBADMSG, m->subject,
			      "not a trainscope.v1.Batch");
	err = ingest_batch(m->a, m->subject, m->base, m->kind, b);
	trainscope__v1__batch__free_unpacked(b, NULL);
	if (!err)
		m->a->st.batches++;
	return err > 0 ? 0 : err; /* a duplicate is not an error */
}

/* A Bundle's batch (ts_batch_fn), taken as if it came alone on its rank's subject. */
static void ingest_bundled(void *ctx, const uint8_t *data, size_t len)
{
	struct arrival *m = ctx;
	int err = ingest_encoded(m, data, len);

	if (err && !m->err)
		m->err = err;
}

int ts_analyzer_ingest(struct ts_analyzer *a, const char *subject, const void *data, size_t len)
{
	struct arrival m = { .a = a, .subject = subject };

	a->st.msgs++;
	if (len > a->opts.max_msg_bytes)
		return refuse(a, &a->st.oversized, -EMSGSIZE, subject, "larger than the message limit");
	long part = -1;
	m.kind = subject ? subject_kind(subject, &m.base, &part) : K_BAD;
	if (m.kind == K_BAD)
		return refuse(a, &a->st.bad_subject, -EINVAL, subject ? subject : "(none)",
			      "subject is not ts.v1.<ns>.<job>.<rank|host|dev|hang|ctl|pod>.<id>"
			      "[.<partition>]");
	check_partition(a, subject, part);
	if (m.kind != K_POD)
		return ingest_encoded(&m, data, len);
	if (ts_bundle_each(data, len, ingest_bundled, &m) < 0)
		return refuse(a, &a->st.bad_msgs, -EBADMSG, subject, "not a trainscope.v1.Bundle");
	a->st.bundles++;
	return m.err;
}

/* Producers silent for limits.job_ttl_s are forgotten, like their jobs: processes come
 * and go over a long life, and each left an entry. The table is made again around those
 * that remain (deleting in place would break open addressing's probe chains). */
void ts_analyzer_prune_producers(struct ts_analyzer *a, uint64_t now_ns)
{
	uint64_t ttl = (uint64_t)(a->opts.params.limits.job_ttl_s * 1e9);
	size_t cap = 256, keep = 0;
	struct producer *t;

	if (now_ns < a->next_prune_ns)
		return;
	a->next_prune_ns = now_ns + (ttl / 4 > 1000000000ull ? ttl / 4 : 1000000000ull);
	for (size_t i = 0; i < a->capprod; i++)
		keep += a->prod[i].used && a->prod[i].last_ns + ttl > now_ns;
	if (keep == a->nprod)
		return;
	while ((keep + 1) * 2 > cap)
		cap *= 2;
	if (!(t = calloc(cap, sizeof(*t))))
		return; /* tried again at the next prune */
	for (size_t i = 0; i < a->capprod; i++)
		if (a->prod[i].used && a->prod[i].last_ns + ttl > now_ns)
			*prod_slot(t, cap, a->prod[i].id) = a->prod[i];
	free(a->prod);
	a->prod = t;
	a->capprod = cap;
	a->nprod = keep;
}
