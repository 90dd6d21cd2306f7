// SPDX-License-Identifier: Apache-2.0
/* A producer's identity as its ring says it and as its TS_REC_IDENT records update it
 * (a rank learned from the program after the ring was made), and the notices for the
 * processes the analyzer cannot use: steps with no rank (held here until a rank comes),
 * a rank's device work with no step. */
#include "relay_impl.h"
#include "log.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The ring is the process's memory: its text is taken bounded, each string ended. */
void relay_copy_ident(struct ts_ident *dst, const struct ts_ident *src)
{
	*dst = *src;
	dst->ns[sizeof(dst->ns) - 1] = dst->job[sizeof(dst->job) - 1] = 0;
	dst->pod[sizeof(dst->pod) - 1] = dst->node[sizeof(dst->node) - 1] = 0;
	dst->container[sizeof(dst->container) - 1] = dst->groups[sizeof(dst->groups) - 1] = 0;
	dst->dev_uuid[sizeof(dst->dev_uuid) - 1] = 0;
}

/* The rank's subjects, from its identity (again when it learns its rank). */
void relay_set_subjects(struct producer *p)
{
	char leaf[16];

	snprintf(leaf, sizeof(leaf), "%d", p->id.rank);
	ts_subject(p->subject, sizeof(p->subject), p->id.ns, p->id.job, "rank", leaf);
	ts_subject(p->pod_subject, sizeof(p->pod_subject), p->id.ns, p->id.job, "pod", p->id.pod);
	ts_subject(p->ctl_subject, sizeof(p->ctl_subject), p->id.ns, p->id.job, "ctl",
		   p->id.node);
}

/* The process's local rank and device as it learned them late: announced anew with the
 * next batch and to the node's agent. */
static void take_device(struct producer *p, int32_t local, int32_t dev)
{
	p->id.local_rank = local;
	p->id.dev_index = dev;
	/* written into the header before the record was */
	memcpy(p->id.dev_uuid, p->ring->id.dev_uuid, sizeof(p->id.dev_uuid));
	p->id.dev_uuid[sizeof(p->id.dev_uuid) - 1] = 0;
	p->hello_sent = false;
	p->next_hello_ms = 0;
}

/* The rank the process learned after its ring was made (its process group, its
 * communicator): the steps held till now go out under it, and the rank is announced. */
void relay_learn(struct relay *r, struct producer *p, const struct ts_rec *rec)
{
	int32_t rank = (int32_t)rec->ident.rank, world = (int32_t)rec->ident.world;

	if (rank < 0 || world <= rank || rec->ident.rank > INT32_MAX ||
	    rec->ident.world > INT32_MAX) {
		r->st.bad_records++;
		return;
	}
	int32_t local = (int32_t)rec->ident.local_rank, dev = (int32_t)rec->ident.device;
	bool same = rank == p->id.rank && world == p->id.world_size;

	if (same && local == p->id.local_rank && dev == p->id.dev_index)
		return;
	take_device(p, local, dev);
	if (same) /* its device, learned at its first step */
		return;
	if (p->id.rank >= 0)
		ts_warn("relay: %s: rank %d/%d becomes %d/%d (its program says so) after %" PRIu64
			" batches went out under the first", p->path, p->id.rank,
			p->id.world_size, rank, world, p->seq);
	p->id.rank = rank;
	p->id.world_size = world;
	p->id.world_known = true;
	relay_set_subjects(p);
	r->st.ranks_learned++;
	ts_info("relay: %s (pid %d) is rank %d of %d, as its %s says%s%d steps held go out "
		"under it", p->path, p->id.pid, rank, world,
		rec->kind == TS_IDENT_COMM ? "NCCL/HCCL communicator" : "program",
		p->said_unranked ? " (late): " : ": ", p->npending);
}

/* A notice with no records (h says what) on the rank's subject, next in its sequence. */
static void send_notice(struct relay *r, struct producer *p, struct ts_batch_hdr *h)
{
	h->producer_id = p->producer_id;
	h->seq = p->seq + 1;
	relay_reserve(r, p, h->seq, 0);
	relay_send_rank(r, p, h, NULL, 0);
	p->seq++;
}

/* The oldest held steps past HELD_MAX go, counted. */
static void hold_bound(struct relay *r, struct producer *p)
{
	int over = p->npending - HELD_MAX;

	if (over <= 0)
		return;
	memmove(p->pending, p->pending + over, (size_t)HELD_MAX * sizeof(*p->pending));
	p->npending = HELD_MAX;
	r->st.unranked_steps_dropped += (uint64_t)over;
}

/* Once per process: what it lacks and the cure, in the log and the metrics. */
static void say_unranked(struct relay *r, struct producer *p)
{
	char vars[256];

	p->said_unranked = true;
	r->st.unranked_producers++;
	ts_warn("relay: %s (pid %d, job %s/%s) made %" PRIu64 " steps with no rank: none of %s "
		"is set and it made no torch.distributed process group or NCCL/HCCL communicator "
		"of the whole job. Its steps are held (up to %d) until it does; set RANK and "
		"WORLD_SIZE in its environment (or TRAINSCOPE_RANK and TRAINSCOPE_WORLD_SIZE). "
		"The job's report says so too", p->path, p->id.pid, p->id.ns, p->id.job, p->steps,
		ts_rank_source_names(vars, sizeof(vars)), HELD_MAX);
}

/* A process with no rank: its steps are held, and once it has made a few (or at its
 * end) the analyzer is told, every HELLO_EVERY_MS, on its rank subject (".-1"), so the
 * job's report can say what to set. A process that never stepped (a launcher, a data
 * loader worker) says nothing. At its end, what is held is lost, and counted. */
void relay_unranked_round(struct relay *r, struct producer *p, bool done, uint64_t now)
{
	if (!p->steps)
		return;
	if (!p->unranked_ms)
		p->unranked_ms = now;
	hold_bound(r, p);
	if (!p->said_unranked && (done || p->steps >= UNRANKED_STEPS ||
				  now - p->unranked_ms >= UNRANKED_MS))
		say_unranked(r, p);
	if (p->said_unranked && (done || now >= p->next_hello_ms)) {
		struct ts_batch_hdr h = { .unranked_steps = p->steps };
		p->next_hello_ms = now + HELLO_EVERY_MS;
		send_notice(r, p, &h);
	}
	if (done && p->npending) {
		r->st.unranked_steps_dropped += (uint64_t)p->npending;
		ts_warn("relay: %s ended with no rank: its %d held steps are not published",
			p->path, p->npending);
		p->npending = 0;
	}
}

/* A rank that runs collectives or GEMMs and makes no step (a training loop whose steps
 * the shim did not find; a data-loader worker does neither): said once with the cure,
 * and to the analyzer every HELLO_EVERY_MS, so that the report says what to set. */
void relay_stepless_round(struct relay *r, struct producer *p, bool done, uint64_t now)
{
	if (p->steps || !p->device_ops)
		return;
	if (!p->stepless_ms)
		p->stepless_ms = now;
	if (!p->said_stepless && (done || now - p->stepless_ms >= STEPLESS_MS)) {
		p->said_stepless = true;
		r->st.stepless_producers++;
		ts_warn("relay: %s (rank %d, pid %d) ran %" PRIu64 " collectives and GEMMs and made "
			"no step: no torch.optim optimizer step was seen. Set TRAINSCOPE_STEP_FUNC="
			"module@object@function (each call one step) or call trainscope.step() at "
			"each iteration's end", p->path, p->id.rank, p->id.pid, p->device_ops);
	}
	if (p->said_stepless && (done || now >= p->next_stepless_ms)) {
		struct ts_batch_hdr h = { .stepless_records = p->device_ops };
		p->next_stepless_ms = now + HELLO_EVERY_MS;
		send_notice(r, p, &h);
	}
}
