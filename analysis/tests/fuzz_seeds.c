// SPDX-License-Identifier: Apache-2.0
/* Writes the seed corpus of fuzz_ingest (make fuzz-seeds): inputs in its frame format
 * (subject '\n', 2-byte big-endian length, a packed trainscope.v1.Batch, or on a pod
 * subject a Bundle), each a small job as the relay and the node agent would send it.
 * Usage: fuzz_seeds DIR */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tests/testbatch.h"
#include "proto/wire.h"

#define T0_NS 1700000000000000000ull /* fuzz_ingest ticks from here */
#define MS 1000000ull
#define MAX_RECORDS TS_TEST_BATCH_MAX

struct seed {
	uint8_t data[16384];
	size_t len;
};

/* One batch being built (steps and records in t), the records of other kinds than steps
 * pointing into the arrays here, by the record's place. */
struct batch {
	struct ts_test_batch t;
	Trainscope__V1__Device dev;
	Trainscope__V1__HostSample host[MAX_RECORDS];
	Trainscope__V1__Preemptor preemptor[MAX_RECORDS], *preemptorp[MAX_RECORDS];
	Trainscope__V1__DeviceSample dsample[MAX_RECORDS];
	Trainscope__V1__Device ddev[MAX_RECORDS];
	Trainscope__V1__Hang hang;
};

static void batch_init(struct batch *x, int rank, int world, const char *node, uint64_t producer,
		       uint64_t seq)
{
	static const Trainscope__V1__Device dev0 = TRAINSCOPE__V1__DEVICE__INIT;
	static char pod[8][32];

	memset(x, 0, sizeof(*x));
	ts_test_batch_init(&x->t, "ml", "llm", 0, world, producer, seq);
	x->dev = dev0;
	if (rank >= 0 && rank < 8) {
		snprintf(pod[rank], sizeof(pod[rank]), "llm-worker-%d", rank);
		x->t.id.pod = pod[rank];
		x->t.id.rank = rank;
		x->t.id.local_rank = rank % 2;
		x->t.id.pid = 1000 + rank;
		x->dev.index = rank % 2;
		x->dev.uuid = rank % 2 ? "GPU-1" : "GPU-0";
		x->t.id.device = &x->dev;
	}
	x->t.id.node = (char *)node;
}

static Trainscope__V1__Record *add_record(struct batch *x)
{
	Trainscope__V1__Record *r = ts_test_batch_record(&x->t);

	if (!r)
		abort();
	return r;
}

/* Step k: 100 ms of compute, collective, dataloader and launch, plus slow_ms of compute
 * on a slow rank or of waiting in the collective on the others; one step each 150 ms. */
static void add_step(struct batch *x, uint64_t k, uint64_t compute_ms, uint64_t wait_ms)
{
	uint64_t start = T0_NS - 15000 * MS + k * 150 * MS;
	Trainscope__V1__Step *s = ts_test_batch_step(&x->t, k, start,
						     start + (100 + compute_ms + wait_ms) * MS,
						     (60 + compute_ms) * MS + (k % 3) * MS / 10);

	if (!s)
		abort();
	s->collective_ns = (30 + wait_ms) * MS;
	s->dataloader_ns = 5 * MS;
	s->launch_ns = 2 * MS;
}

static void add_host_sample(struct batch *x, int rank, uint64_t runq_ms)
{
	static const Trainscope__V1__HostSample h0 = TRAINSCOPE__V1__HOST_SAMPLE__INIT;
	static const Trainscope__V1__Preemptor p0 = TRAINSCOPE__V1__PREEMPTOR__INIT;
	Trainscope__V1__Record *r = add_record(x);
	size_t i = x->t.b.n_records - 1;
	Trainscope__V1__HostSample *h = &x->host[i];

	*h = h0;
	h->rank = rank;
	h->start_ns = T0_NS - 1000 * MS;
	h->interval_ns = 1000 * MS;
	h->oncpu_ns = 900 * MS;
	h->offcpu_ns = 50 * MS;
	h->runq_delay_ns = runq_ms * MS;
	h->involuntary_switches = 12;
	if (runq_ms) {
		x->preemptor[i] = p0;
		x->preemptor[i].comm = "stress-ng";
		x->preemptor[i].pid = 4242;
		x->preemptor[i].time_ns = runq_ms * MS;
		x->preemptorp[i] = &x->preemptor[i];
		h->n_preemptors = 1;
		h->preemptors = &x->preemptorp[i];
	}
	r->kind_case = TRAINSCOPE__V1__RECORD__KIND_HOST_SAMPLE;
	r->host_sample = h;
}

static void add_device_sample(struct batch *x, int index, uint32_t clock, uint64_t throttle)
{
	static const Trainscope__V1__DeviceSample d0 = TRAINSCOPE__V1__DEVICE_SAMPLE__INIT;
	static const Trainscope__V1__Device dev0 = TRAINSCOPE__V1__DEVICE__INIT;
	Trainscope__V1__Record *r = add_record(x);
	size_t i = x->t.b.n_records - 1;
	Trainscope__V1__DeviceSample *d = &x->dsample[i];

	*d = d0;
	x->ddev[i] = dev0;
	x->ddev[i].index = index;
	x->ddev[i].uuid = index ? "GPU-1" : "GPU-0";
	d->device = &x->ddev[i];
	d->time_ns = T0_NS - 500 * MS;
	d->sm_clock_mhz = clock;
	d->throttle_reasons = throttle;
	d->temperature_c = 70;
	r->kind_case = TRAINSCOPE__V1__RECORD__KIND_DEVICE_SAMPLE;
	r->device_sample = d;
}

static void add_hang(struct batch *x, uint64_t seq)
{
	static const Trainscope__V1__Hang h0 = TRAINSCOPE__V1__HANG__INIT;
	Trainscope__V1__Record *r = add_record(x);

	x->hang = h0;
	x->hang.time_ns = T0_NS - 10 * MS;
	x->hang.op = "ALL_REDUCE";
	x->hang.comm_hash = 0xc0ffee;
	x->hang.seq = seq;
	x->hang.pending_ns = 600000 * MS;
	x->hang.stacks = "Thread 0x1 (most recent call first):\n  File \"train.py\", line 42 in step\n";
	r->kind_case = TRAINSCOPE__V1__RECORD__KIND_HANG;
	r->hang = &x->hang;
}

/* Appends one frame: the subject, then the packed batch (or raw bytes). */
static void frame(struct seed *s, const char *subject, const void *raw, size_t rawlen,
		  const struct batch *x)
{
	size_t n = strlen(subject), len = x ? trainscope__v1__batch__get_packed_size(&x->t.b) : rawlen;

	if (s->len + n + 3 + len > sizeof(s->data) || len > 0xffff)
		abort();
	memcpy(s->data + s->len, subject, n);
	s->len += n;
	s->data[s->len++] = '\n';
	s->data[s->len++] = (uint8_t)(len >> 8);
	s->data[s->len++] = (uint8_t)len;
	if (x)
		trainscope__v1__batch__pack(&x->t.b, s->data + s->len);
	else
		memcpy(s->data + s->len, raw, len);
	s->len += len;
}

static void rank_subject(char *out, size_t n, const char *kind, int rank)
{
	snprintf(out, n, "ts.v1.ml.llm.%s.%d", kind, rank);
}

/* world ranks, steps in batches of per_batch, round robin; from step slow_from, slow_rank
 * computes slow_ms longer and the others wait for it; the last batches are final when
 * final is set. */
static void ranks(struct seed *s, int world, int steps, int per_batch, int slow_rank,
		  int slow_from, uint64_t slow_ms, bool final)
{
	static struct batch x;
	char subject[64];

	for (int first = 0; first < steps; first += per_batch)
		for (int r = 0; r < world; r++) {
			batch_init(&x, r, world, r < 2 ? "node-a" : "node-b", 0x1000 + (uint64_t)r,
				   (uint64_t)(first / per_batch + 1));
			for (int k = first; k < first + per_batch && k < steps; k++)
				add_step(&x, (uint64_t)k, r == slow_rank && k >= slow_from ? slow_ms : 0,
					 r != slow_rank && k >= slow_from ? slow_ms : 0);
			x.t.b.final = final && first + per_batch >= steps;
			rank_subject(subject, sizeof(subject), "rank", r);
			frame(s, subject, NULL, 0, &x);
		}
}

static void node(struct seed *s, const char *name, int rank0, int nranks, int slow_rank,
		 uint64_t seq)
{
	static struct batch x;
	char subject[64];

	batch_init(&x, -1, 0, name, 0x2000 + (uint64_t)name[5], seq);
	for (int r = rank0; r < rank0 + nranks; r++)
		add_host_sample(&x, r, r == slow_rank ? 300 : 1);
	snprintf(subject, sizeof(subject), "ts.v1.ml.llm.host.%s", name);
	frame(s, subject, NULL, 0, &x);
	batch_init(&x, -1, 0, name, 0x3000 + (uint64_t)name[5], seq);
	for (int d = 0; d < 2; d++)
		add_device_sample(&x, d, d ? 1980 : 1410, d ? 0 : 0x40);
	snprintf(subject, sizeof(subject), "ts.v1.ml.llm.dev.%s", name);
	frame(s, subject, NULL, 0, &x);
}

/* world ranks (8 at most) of one pod, steps in batches of per_batch, each round's batches
 * in one Bundle on the pod's subject, as a relay of the pod wire sends them; in the
 * second round rank 1's batch claims another pod (refused) and rank 0's is missing (a
 * gap). */
static void pod_rounds(struct seed *s, int world, int steps, int per_batch)
{
	static struct batch x;
	static uint8_t buf[8][2048];
	ProtobufCBinaryData b[8];
	uint64_t seq = 1;
	uint8_t *out;
	size_t len;
	int n;

	for (int first = 0; first < steps; first += per_batch, seq++) {
		n = 0;
		for (int r = 0; r < world; r++) {
			if (seq == 2 && r == 0)
				continue;
			batch_init(&x, r, world, "node-a", 0x7000 + (uint64_t)r, seq);
			x.t.id.pod = (char *)(seq == 2 && r == 1 ? "elsewhere" : "llm-pod");
			for (int k = first; k < first + per_batch && k < steps; k++)
				add_step(&x, (uint64_t)k, 0, 0);
			b[n].data = buf[n];
			if (!(b[n].len = ts_test_batch_pack(&x.t, buf[n], sizeof(buf[n]))))
				abort();
			n++;
		}
		if (ts_bundle_pack(b, (size_t)n, 0xb0, seq, &out, &len))
			abort();
		frame(s, "ts.v1.ml.llm.pod.llm-pod", out, len, NULL);
		free(out);
	}
}

static int save(const char *dir, const char *name, const struct seed *s)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "wb")) || fwrite(s->data, 1, s->len, f) != s->len || fclose(f)) {
		fprintf(stderr, "fuzz_seeds: %s: %s\n", path, strerror(errno));
		return 1;
	}
	printf("  SEED    %s (%zu bytes)\n", path, s->len);
	return 0;
}

int main(int argc, char **argv)
{
	static struct seed s;
	static struct batch x;
	char subject[64];
	int rc = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_seeds DIR\n");
		return 2;
	}

	/* two healthy ranks with their node's samples; both exit (final batches) */
	s.len = 0;
	batch_init(&x, 0, 2, "node-a", 0x1000, 1);
	frame(&s, "ts.v1.ml.llm.ctl.0", NULL, 0, &x);
	node(&s, "node-a", 0, 2, -1, 1);
	ranks(&s, 2, 30, 10, -1, 0, 0, true);
	rc |= save(argv[1], "healthy-final", &s);

	/* four ranks on two nodes; rank 2 computes 40 ms longer from step 10 (the others
	 * wait for it), and its node says it waits for a CPU */
	s.len = 0;
	node(&s, "node-b", 2, 2, 2, 1);
	ranks(&s, 4, 55, 11, 2, 10, 40, false);
	node(&s, "node-b", 2, 2, 2, 2);
	rc |= save(argv[1], "slow-rank", &s);

	/* rank 1 stops after 12 steps, then its hang watch reports a pending all-reduce */
	s.len = 0;
	ranks(&s, 2, 12, 6, -1, 0, 0, false);
	batch_init(&x, 0, 2, "node-a", 0x1000, 3);
	for (int k = 12; k < 16; k++)
		add_step(&x, (uint64_t)k, 0, 0);
	frame(&s, "ts.v1.ml.llm.rank.0", NULL, 0, &x);
	batch_init(&x, 1, 2, "node-a", 0x4001, 1);
	add_hang(&x, 77);
	rank_subject(subject, sizeof(subject), "hang", 1);
	frame(&s, subject, NULL, 0, &x);
	rc |= save(argv[1], "hang", &s);

	/* a producer's batches out of order: a gap, a duplicate, ring drops, a step that ends
	 * before it starts, then its final batch; a bad subject and a payload that is not a
	 * batch are refused */
	s.len = 0;
	batch_init(&x, 0, 1, "node-a", 0x5000, 1);
	add_step(&x, 0, 0, 0);
	add_step(&x, 1, 0, 0);
	frame(&s, "ts.v1.ml.llm.rank.0", NULL, 0, &x);
	batch_init(&x, 0, 1, "node-a", 0x5000, 4);
	x.t.b.dropped_records = 17;
	add_step(&x, 5, 0, 0);
	add_step(&x, 6, 0, 0);
	x.t.step[1].end_ns = x.t.step[1].start_ns - 1;
	frame(&s, "ts.v1.ml.llm.rank.0", NULL, 0, &x);
	batch_init(&x, 0, 1, "node-a", 0x5000, 4);
	add_step(&x, 5, 0, 0);
	frame(&s, "ts.v1.ml.llm.rank.0", NULL, 0, &x);
	batch_init(&x, 0, 1, "node-a", 0x5000, 5);
	x.t.b.final = true;
	add_step(&x, 7, 0, 0);
	frame(&s, "ts.v1.ml.llm.rank.0", NULL, 0, &x);
	frame(&s, "ts.v1.ml.llm.bogus.0", NULL, 0, &x);
	frame(&s, "ts.v1.ml.llm.rank.0", "\xff\xff\xff", 3, NULL);
	rc |= save(argv[1], "gaps-final", &s);

	/* a step counter that jumps by 2^62 must not cost 2^62 turns of ts_job_tick */
	s.len = 0;
	batch_init(&x, 0, 1, "node-a", 0x6000, 1);
	for (int k = 0; k < 4; k++)
		add_step(&x, (uint64_t)k, 0, 0);
	frame(&s, "ts.v1.ml.llm.rank.0", NULL, 0, &x);
	batch_init(&x, 0, 1, "node-a", 0x6000, 2);
	add_step(&x, 1ull << 62, 0, 0);
	x.t.step[0].start_ns = T0_NS - 100 * MS;
	x.t.step[0].end_ns = T0_NS;
	frame(&s, "ts.v1.ml.llm.rank.0", NULL, 0, &x);
	rc |= save(argv[1], "step-jump", &s);

	/* a relay's Bundles of a pod of four ranks, then one that is no Bundle */
	s.len = 0;
	pod_rounds(&s, 4, 24, 6);
	frame(&s, "ts.v1.ml.llm.pod.llm-pod", "\xff\xff\xff", 3, NULL);
	rc |= save(argv[1], "pod-bundles", &s);
	return rc;
}
