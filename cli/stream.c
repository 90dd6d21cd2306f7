// SPDX-License-Identifier: Apache-2.0
/* Reading a job back from the TRAINSCOPE stream, for the commands that draw it. */
#include "cli.h"
#include "ident.h"
#include "proto/wire.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The command's callback and its argument. */
struct reader {
	cli_batch_fn fn;
	void *arg;
};

/* One encoded batch to the command (ts_batch_fn); one that does not decode is skipped. */
static void give(void *ctx, const uint8_t *data, size_t len)
{
	struct reader *rd = ctx;
	Trainscope__V1__Batch *b = trainscope__v1__batch__unpack(NULL, len, data);

	if (b) {
		rd->fn(rd->arg, b);
		trainscope__v1__batch__free_unpacked(b, NULL);
	}
}

/* One message to the batch reader: its batches decoded, one by one (cli_msg_fn). */
static int give_msg(void *arg, natsMsg *m)
{
	ts_wire_each(natsMsg_GetSubject(m), natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m),
		     give, arg);
	return 0;
}

/* Every message of the job, raw (cli.h). A durable consumer of this process's own, deleted
 * at the end, so that readers never share one. */
int cli_read_job_msgs(struct tsn *n, const char *ns, const char *job, cli_msg_fn fn, void *arg)
{
	char durable[64], filter[256];
	struct tsn_sub *sub = NULL;
	int idle = 0, failed = 0, rc = 0;

	ts_subject(filter, sizeof(filter), ns, job, "X", "X");
	strcpy(strstr(filter, ".X.X"), ".>");
	snprintf(durable, sizeof(durable), "trainscope-cli-%d", (int)getpid());
	for (int tries = 0; tsn_subscribe(n, durable, filter, &sub) && tries < 20; tries++)
		nats_Sleep(250);
	if (!sub)
		return -EAGAIN;
	while (idle < 2 && !rc) { /* everything the stream holds, then stop */
		natsMsgList l;
		int got = tsn_fetch(sub, &l, 512, 500);
		idle = got > 0 ? 0 : idle + 1;
		failed = got > 0 ? 0 : failed + (got < 0);
		for (int i = 0; got > 0 && i < l.Count && !rc; i++) {
			rc = fn(arg, l.Msgs[i]);
			natsMsg_Ack(l.Msgs[i], NULL);
		}
		if (got > 0)
			natsMsgList_Destroy(&l);
	}
	tsn_unsubscribe(sub);
	tsn_delete_consumer(n, durable);
	return rc ? rc : failed ? -ECONNRESET : 0;
}

/* Every batch of the job, decoded (cli.h). */
int cli_read_job(struct tsn *n, const char *ns, const char *job, cli_batch_fn fn, void *arg)
{
	struct reader rd = { .fn = fn, .arg = arg };
	int rc = cli_read_job_msgs(n, ns, job, give_msg, &rd);

	return rc && rc != -ECONNRESET ? -1 : 0; /* the server gone at the end: what was read */
}
