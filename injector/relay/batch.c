// SPDX-License-Identifier: Apache-2.0
#include "batch.h"
#include "proto/trainscope.pb-c.h"
#include "version.h"

#include <errno.h>
#include <stdlib.h>

typedef Trainscope__V1__Record Record;
typedef Trainscope__V1__Step Step;
typedef Trainscope__V1__CollStat CollStat;
typedef Trainscope__V1__GemmStat GemmStat;
typedef Trainscope__V1__CommStat CommStat;
typedef Trainscope__V1__PeerStat PeerStat;

static const char *const op_names[] = { "kernel", "AllReduce", "AllGather", "ReduceScatter",
					"Broadcast", "Reduce", "AllToAll", "SendRecv",
					"Gather", "Scatter" };

static void fill_identity(Trainscope__V1__Identity *pb, Trainscope__V1__Device *dev,
			  const struct ts_ident *id)
{
	pb->namespace_ = (char *)id->ns;
	pb->job = (char *)id->job;
	pb->pod = (char *)id->pod;
	pb->node = (char *)id->node;
	pb->container = (char *)id->container;
	pb->rank = id->rank;
	pb->local_rank = id->local_rank;
	pb->world_size = id->world_size;
	pb->pid = id->pid;
	pb->cgroup_id = id->cgroup_id;
	dev->index = id->dev_index;
	dev->uuid = (char *)id->dev_uuid;
	pb->device = dev;
}

static void fill_step(Step *pb, CollStat *cs, CollStat **csp, const struct ts_step_sum *s,
		      int world)
{
	pb->step = s->step;
	pb->start_ns = s->start_ns;
	pb->end_ns = s->end_ns;
	pb->dataloader_ns = s->dataloader_ns;
	pb->compute_ns = s->compute_ns;
	pb->compute_wall_ns = s->compute_wall_ns;
	pb->device_untimed = s->device_untimed;
	pb->collective_ns = s->collective_ns;
	pb->launch_ns = s->launch_ns;
	pb->sync_ns = s->sync_ns;
	pb->gc_ns = s->gc_ns;
	pb->checkpoint_ns = s->checkpoint_ns;
	for (int i = 0; i < s->ncoll; i++) {
		const struct ts_coll_acc *c = &s->coll[i];
		trainscope__v1__coll_stat__init(&cs[i]);
		cs[i].op = (Trainscope__V1__CollOp)c->op;
		cs[i].size_bucket = c->bucket;
		cs[i].count = c->count;
		cs[i].bytes = c->bytes;
		cs[i].time_ns = c->time_ns;
		if (c->time_ns)
			cs[i].bus_bw_gbps = (double)c->bytes / (double)c->time_ns *
					    ts_busbw_factor(c->op, world);
		csp[i] = &cs[i];
	}
	pb->n_colls = (size_t)s->ncoll;
	pb->colls = csp;
	pb->mem_live_bytes = s->mem_live;
	pb->mem_peak_bytes = s->mem_peak;
	pb->mem_alloc_failures = s->alloc_failures;
}

static void fill_gemms(Step *pb, GemmStat *gs, GemmStat **gsp, const struct ts_step_sum *s)
{
	for (int i = 0; i < s->ngemm; i++) {
		const struct ts_gemm_acc *g = &s->gemm[i];
		trainscope__v1__gemm_stat__init(&gs[i]);
		gs[i].size_bucket = g->bucket;
		gs[i].count = g->count;
		gs[i].time_ns = g->time_ns;
		gs[i].tflops = g->time_ns ? g->flops / (double)g->time_ns / 1e3 : 0;
		gsp[i] = &gs[i];
	}
	pb->n_gemms = (size_t)s->ngemm;
	pb->gemms = gsp;
}

static void fill_comms(Step *pb, CommStat *cm, CommStat **cmp, const struct ts_step_sum *s)
{
	for (int i = 0; i < s->ncomm; i++) {
		const struct ts_comm_acc *c = &s->comm[i];
		trainscope__v1__comm_stat__init(&cm[i]);
		cm[i].comm_hash = c->id;
		cm[i].count = c->count;
		cm[i].p2p_count = c->p2p;
		cm[i].bytes = c->bytes;
		cm[i].time_ns = c->time_ns;
		cm[i].nranks = c->nranks;
		cmp[i] = &cm[i];
	}
	pb->n_comms = (size_t)s->ncomm;
	pb->comms = cmp;
	pb->comm_ops_dropped = s->comm_overflow;
}

static void fill_peers(Step *pb, PeerStat *ps, PeerStat **psp, const struct ts_step_sum *s)
{
	for (int i = 0; i < s->npeer; i++) {
		const struct ts_peer_acc *p = &s->peer[i];
		trainscope__v1__peer_stat__init(&ps[i]);
		ps[i].comm_hash = p->comm;
		ps[i].peer = p->peer;
		ps[i].bytes = p->bytes;
		ps[i].time_ns = p->time_ns;
		ps[i].count = p->count;
		psp[i] = &ps[i];
	}
	pb->n_peers = (size_t)s->npeer;
	pb->peers = psp;
	pb->peers_dropped = s->peer_overflow;
}

int ts_batch_encode(const struct ts_batch_hdr *h, const struct ts_step_sum *steps, int n,
		    uint8_t **out, size_t *len)
{
	Trainscope__V1__Batch b = TRAINSCOPE__V1__BATCH__INIT;
	Trainscope__V1__Identity id = TRAINSCOPE__V1__IDENTITY__INIT;
	Trainscope__V1__Device dev = TRAINSCOPE__V1__DEVICE__INIT;
	Trainscope__V1__Hello hello = TRAINSCOPE__V1__HELLO__INIT;
	Trainscope__V1__Hang hang = TRAINSCOPE__V1__HANG__INIT;
	int nrec = n + (h->hello ? 1 : 0) + (h->hang ? 1 : 0), k = 0, err = -ENOMEM;
	Record *recs = calloc((size_t)nrec + 1, sizeof(*recs));
	Record **recp = calloc((size_t)nrec + 1, sizeof(*recp));
	Step *st = calloc((size_t)n + 1, sizeof(*st));
	CollStat *cs = calloc((size_t)n * TS_AGG_MAX_COLL + 1, sizeof(*cs));
	CollStat **csp = calloc((size_t)n * TS_AGG_MAX_COLL + 1, sizeof(*csp));
	GemmStat *gs = calloc((size_t)n * TS_AGG_MAX_GEMM + 1, sizeof(*gs));
	GemmStat **gsp = calloc((size_t)n * TS_AGG_MAX_GEMM + 1, sizeof(*gsp));
	CommStat *cm = calloc((size_t)n * TS_AGG_MAX_COMM + 1, sizeof(*cm));
	CommStat **cmp = calloc((size_t)n * TS_AGG_MAX_COMM + 1, sizeof(*cmp));
	PeerStat *ps = calloc((size_t)n * TS_AGG_MAX_PEER + 1, sizeof(*ps));
	PeerStat **psp = calloc((size_t)n * TS_AGG_MAX_PEER + 1, sizeof(*psp));

	if (!recs || !recp || !st || !cs || !csp || !gs || !gsp || !cm || !cmp || !ps || !psp)
		goto out;
	fill_identity(&id, &dev, h->id);
	id.pod_uid = (char *)(h->pod_uid ? h->pod_uid : "");
	b.id = &id;
	b.producer_id = h->producer_id;
	b.seq = h->seq;
	b.dropped_records = h->dropped_records;
	b.final = h->final;
	b.died = h->died;
	b.unranked_steps = h->unranked_steps;
	b.stepless_records = h->stepless_records;
	if (h->hello) {
		hello.start_time_ns = h->start_real_ns;
		hello.version = (char *)TS_VERSION;
		hello.comm = (char *)"";
		hello.groups = (char **)h->groups;
		hello.n_groups = h->groups ? h->ngroups : 0;
		trainscope__v1__record__init(&recs[k]);
		recs[k].kind_case = TRAINSCOPE__V1__RECORD__KIND_HELLO;
		recs[k].hello = &hello;
		recp[k] = &recs[k];
		k++;
	}
	for (int i = 0; i < n; i++, k++) {
		trainscope__v1__step__init(&st[i]);
		fill_step(&st[i], &cs[i * TS_AGG_MAX_COLL], &csp[i * TS_AGG_MAX_COLL], &steps[i],
			  h->id->world_size);
		fill_gemms(&st[i], &gs[i * TS_AGG_MAX_GEMM], &gsp[i * TS_AGG_MAX_GEMM], &steps[i]);
		fill_comms(&st[i], &cm[i * TS_AGG_MAX_COMM], &cmp[i * TS_AGG_MAX_COMM], &steps[i]);
		fill_peers(&st[i], &ps[i * TS_AGG_MAX_PEER], &psp[i * TS_AGG_MAX_PEER], &steps[i]);
		trainscope__v1__record__init(&recs[k]);
		recs[k].kind_case = TRAINSCOPE__V1__RECORD__KIND_STEP;
		recs[k].step = &st[i];
		recp[k] = &recs[k];
	}
	if (h->hang) {
		hang.time_ns = h->hang->time_ns;
		hang.op = (char *)op_names[h->hang->op < 10 ? h->hang->op : 0];
		hang.comm_hash = h->hang->comm_hash;
		hang.seq = h->hang->seq;
		hang.pending_ns = h->hang->pending_ns;
		hang.stacks = h->hang->stacks ? h->hang->stacks : (char *)"";
		trainscope__v1__record__init(&recs[k]);
		recs[k].kind_case = TRAINSCOPE__V1__RECORD__KIND_HANG;
		recs[k].hang = &hang;
		recp[k] = &recs[k];
		k++;
	}
	b.n_records = (size_t)nrec;
	b.records = recp;
	*len = trainscope__v1__batch__get_packed_size(&b);
	*out = malloc(*len ? *len : 1);
	if (*out) {
		trainscope__v1__batch__pack(&b, *out);
		err = 0;
	}
out:
	free(recs);
	free(recp);
	free(st);
	free(cs);
	free(csp);
	free(gs);
	free(gsp);
	free(cm);
	free(cmp);
	free(ps);
	free(psp);
	return err;
}
