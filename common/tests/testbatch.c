// SPDX-License-Identifier: Apache-2.0
#include "testbatch.h"

#include <string.h>

void ts_test_batch_init(struct ts_test_batch *x, const char *ns, const char *job, int rank,
			int world, uint64_t producer, uint64_t seq)
{
	static const Trainscope__V1__Batch b0 = TRAINSCOPE__V1__BATCH__INIT;
	static const Trainscope__V1__Identity id0 = TRAINSCOPE__V1__IDENTITY__INIT;

	memset(x, 0, sizeof(*x));
	x->b = b0;
	x->id = id0;
	x->id.namespace_ = (char *)ns;
	x->id.job = (char *)job;
	x->id.rank = rank;
	x->id.world_size = world;
	x->b.id = &x->id;
	x->b.producer_id = producer;
	x->b.seq = seq;
	x->b.records = x->recp;
}

Trainscope__V1__Record *ts_test_batch_record(struct ts_test_batch *x)
{
	static const Trainscope__V1__Record r0 = TRAINSCOPE__V1__RECORD__INIT;
	size_t i = x->b.n_records;

	if (i >= TS_TEST_BATCH_MAX)
		return NULL;
	x->b.n_records++;
	x->rec[i] = r0;
	x->recp[i] = &x->rec[i];
	return &x->rec[i];
}

Trainscope__V1__Step *ts_test_batch_step(struct ts_test_batch *x, uint64_t k, uint64_t start_ns,
					 uint64_t end_ns, uint64_t compute_ns)
{
	static const Trainscope__V1__Step s0 = TRAINSCOPE__V1__STEP__INIT;
	Trainscope__V1__Record *r = ts_test_batch_record(x);
	Trainscope__V1__Step *s;

	if (!r)
		return NULL;
	s = &x->step[r - x->rec];
	*s = s0;
	s->step = k;
	s->start_ns = start_ns;
	s->end_ns = end_ns;
	s->compute_ns = compute_ns;
	r->kind_case = TRAINSCOPE__V1__RECORD__KIND_STEP;
	r->step = s;
	return s;
}

size_t ts_test_batch_pack(const struct ts_test_batch *x, uint8_t *buf, size_t cap)
{
	size_t len = trainscope__v1__batch__get_packed_size(&x->b);

	if (len > cap)
		return 0;
	trainscope__v1__batch__pack(&x->b, buf);
	return len;
}
