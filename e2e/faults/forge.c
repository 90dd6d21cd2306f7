// SPDX-License-Identifier: Apache-2.0
/* forge: publishes hand-made trainscope.v1.Batch messages to JetStream, as a buggy or
 * hostile producer would, for the fault-injection suite (e2e/test-faults.sh). Test-only.
 *
 *   forge --nats URL [--ns NS] [--payload-ns NS] [--job NAME] [--jobs N] [--rank R] [--world W]
 *         [--step S] [--steps N] [--producer ID] [--seq Q] [--final]
 *   forge --nats URL --delete-consumer NAME
 *   forge --nats URL --fill-store BYTES | --free-store
 *   forge --nats URL --announce NODE --pid P [--cgroup-id C] [--pod-uid U] [--rank R]
 *   forge --nats URL --try pub:SUBJECT | sub:SUBJECT | req:SUBJECT
 *
 * One batch per job (--jobs N: jobs NAME-0 .. NAME-(N-1)), each holding --steps steps
 * from --step, of rank R of a world of W, as producer ID (default: a new one per job)
 * from sequence Q (--final: the producer's last, as one that exited sends); --payload-ns names another namespace in the batch than its subject. Exit 0 once JetStream stored them all. --delete-consumer deletes a
 * durable consumer of the stream, as any client with the rights can. --fill-store fills
 * JetStream's store with BYTES in a stream FORGE_FILLER (another tenant filling it);
 * --free-store deletes it. --announce publishes a relay's announcement of rank R, process
 * P (its cgroup C, its pod U) to the node agent of NODE, as anyone who may publish can.
 * --try publishes to, subscribes to or requests on SUBJECT with the credentials given
 * (--nats-token-file, TRAINSCOPE_NATS_*) and says what the server did: exit 0 allowed
 * (a request answered: the answer printed), 3 refused as not permitted, 4 the connection
 * itself refused, 1 anything else. */
#include "natsw.h"
#include "common/tests/testbatch.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct forge {
	const char *ns, *job, *payload_ns;
	int64_t jobs, steps;
	int rank, world;
	bool final;
	uint64_t step, producer, seq;
	const char *pod_uid;
	int pid;
	uint64_t cgroup_id;
};

static int announce_one(struct tsn *n, const struct forge *f, const char *node)
{
	static struct ts_test_batch x;
	char subject[512];
	uint8_t buf[4096];
	size_t len;

	ts_test_batch_init(&x, f->ns, f->job, f->rank, f->world,
			   f->producer ? f->producer : (uint64_t)f->pid << 20 | (uint64_t)f->rank | 1,
			   f->seq);
	x.id.node = (char *)node;
	x.id.pid = f->pid;
	x.id.cgroup_id = f->cgroup_id;
	x.id.pod_uid = (char *)(f->pod_uid ? f->pod_uid : "");
	if (!(len = ts_test_batch_pack(&x, buf, sizeof(buf))))
		return -1;
	snprintf(subject, sizeof(subject), "ts.v1.%s.%s.ctl.%s", f->ns, f->job, node);
	return tsn_publish_seq(n, subject, buf, len, x.b.producer_id, x.b.seq);
}

static int publish_one(struct tsn *n, const struct forge *f, const char *job, uint64_t producer)
{
	static struct ts_test_batch x;
	struct timespec now;
	char subject[512];
	uint8_t buf[16384];
	size_t len;

	clock_gettime(CLOCK_REALTIME, &now);
	ts_test_batch_init(&x, f->payload_ns ? f->payload_ns : f->ns, job, f->rank, f->world,
			   producer, f->seq);
	x.b.final = f->final;
	for (long i = 0; i < f->steps; i++) {
		uint64_t start = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)i * 100000000ull;
		if (!ts_test_batch_step(&x, f->step + (uint64_t)i, start, start + 90000000ull,
					60000000ull))
			return -1;
	}
	if (!(len = ts_test_batch_pack(&x, buf, sizeof(buf))))
		return -1;
	snprintf(subject, sizeof(subject), "ts.v1.%s.%s.rank.%d", f->ns, job, f->rank);
	return tsn_publish_seq(n, subject, buf, len, producer, f->seq);
}

/* bytes > 0: a stream with no limits of its own filled with that much data, or until
 * JetStream refuses more; 0: it is deleted. 0, -EAGAIN (not connected yet), -EIO. */
static int filler(struct tsn *n, int64_t bytes)
{
	const char *subjects[] = { "forge.filler" };
	static char chunk[64 << 10];
	jsStreamConfig cfg;
	jsErrCode jerr = 0;
	natsStatus s;

	if (bytes == 0) {
		s = js_DeleteStream(tsn_jsctx(n, NULL), "FORGE_FILLER", NULL, &jerr);
	} else {
		jsStreamConfig_Init(&cfg);
		cfg.Name = "FORGE_FILLER";
		cfg.Subjects = subjects;
		cfg.SubjectsLen = 1;
		cfg.Storage = js_FileStorage;
		s = js_AddStream(NULL, tsn_jsctx(n, NULL), &cfg, NULL, &jerr);
		/* a refused chunk is tried again halved, to the last few hundred bytes: full */
		for (int64_t put = 0, len = sizeof(chunk); s == NATS_OK && put < bytes && len >= 256;)
			if (js_Publish(NULL, tsn_jsctx(n, NULL), "forge.filler", chunk, (int)len, NULL,
				       &jerr) == NATS_OK)
				put += len;
			else if ((len /= 2) < 256)
				fprintf(stderr, "forge: the store took %lld bytes: %s (%d)\n", (long long)put,
					nats_GetLastError(NULL), (int)jerr);
	}
	if (s == NATS_OK)
		return 0;
	if (!jerr)
		return -EAGAIN;
	fprintf(stderr, "forge: %s the filler stream: %s (%d)\n", bytes ? "cannot make" : "cannot delete",
		nats_GetLastError(NULL), (int)jerr);
	return -EIO;
}

struct probe {
	atomic_int denied;
	char text[512];
};

static void on_probe_error(natsConnection *nc, natsSubscription *sub, natsStatus err, void *closure)
{
	struct probe *p = closure;
	const char *text = NULL;

	(void)sub;
	natsConnection_GetLastError(nc, &text);
	snprintf(p->text, sizeof(p->text), "%s", text ? text : natsStatus_GetText(err));
	if (err == NATS_NOT_PERMITTED)
		p->denied = 1;
}

static int try_op(const struct tsn_opts *o, const char *what)
{
	const char *subject = strchr(what, ':') ? strchr(what, ':') + 1 : "";
	struct probe p = { 0 };
	natsConnection *nc = NULL;
	natsSubscription *sub = NULL;
	natsOptions *opts = NULL;
	natsMsg *reply = NULL;
	natsStatus s;
	int rc = 1;

	s = tsn_nats_options(o, &opts);
	if (s == NATS_OK)
		s = natsOptions_SetErrorHandler(opts, on_probe_error, &p);
	if (s == NATS_OK)
		s = natsOptions_SetAllowReconnect(opts, false);
	if (s == NATS_OK && (s = natsConnection_Connect(&nc, opts)) != NATS_OK) {
		printf("connection refused: %s\n", nats_GetLastError(NULL));
		natsOptions_Destroy(opts);
		return 4;
	}
	if (s == NATS_OK && !strncmp(what, "pub:", 4))
		s = natsConnection_PublishString(nc, subject, "forged");
	else if (s == NATS_OK && !strncmp(what, "sub:", 4))
		s = natsConnection_SubscribeSync(&sub, nc, subject);
	else if (s == NATS_OK && !strncmp(what, "req:", 4))
		s = natsConnection_RequestString(&reply, nc, subject, "", 3000);
	else if (s == NATS_OK)
		s = NATS_INVALID_ARG;
	if (s == NATS_OK || s == NATS_TIMEOUT)
		natsConnection_FlushTimeout(nc, 3000);
	/* the server's -ERR comes before its PONG, its callback on another thread */
	for (int i = 0; i < 100 && !p.denied; i++)
		nats_Sleep(10);
	if (p.denied) {
		printf("denied: %s\n", p.text);
		rc = 3;
	} else if (s == NATS_OK) {
		printf("allowed%s%.*s\n", reply ? ": " : "", reply ? natsMsg_GetDataLength(reply) : 0,
		       reply ? natsMsg_GetData(reply) : "");
		rc = 0;
	} else {
		printf("failed: %s\n", natsStatus_GetText(s));
	}
	natsMsg_Destroy(reply);
	natsSubscription_Destroy(sub);
	natsConnection_Destroy(nc);
	natsOptions_Destroy(opts);
	return rc;
}

/* forge's command line: what to forge, and the other things it does instead. */
struct forge_cli {
	struct forge f;
	struct tsn_opts nats;
	const char *doomed, *node, *probe;
	int64_t fill;
};

static int free_store(void *s, const char *arg, char *err, size_t n)
{
	(void)arg, (void)err, (void)n;
	((struct forge_cli *)s)->fill = 0;
	return 0;
}

#define F(f) offsetof(struct forge_cli, f)
#define STR(f, what) { what, 0, TS_OPT_STR, F(f), 0, 0, "X", NULL, what, NULL }
#define NUM(f, what) { what, 0, TS_OPT_I64, F(f), 0, 9e18, "N", NULL, what, NULL }
#define INT(f, what) { what, 0, TS_OPT_INT, F(f), -1, 1 << 30, "N", NULL, what, NULL }
/* The options the comment at the top of this file explains. */
static const struct ts_opt options[] = {
	STR(f.ns, "ns"), STR(f.job, "job"), NUM(f.jobs, "jobs"), INT(f.rank, "rank"),
	INT(f.world, "world"), NUM(f.step, "step"), NUM(f.steps, "steps"),
	NUM(f.producer, "producer"), NUM(f.seq, "seq"), STR(doomed, "delete-consumer"),
	NUM(fill, "fill-store"), STR(node, "announce"), INT(f.pid, "pid"),
	NUM(f.cgroup_id, "cgroup-id"), STR(f.pod_uid, "pod-uid"), STR(probe, "try"),
	STR(f.payload_ns, "payload-ns"),
	{ "free-store", 0, TS_OPT_CALL, 0, 0, 0, NULL, NULL, "free-store", free_store },
	{ "final", 0, TS_OPT_TRUE, F(f.final), 0, 0, NULL, NULL, "final", NULL },
};

int main(int argc, char **argv)
{
	struct forge_cli c = { .f = { .ns = "default", .job = "forged", .jobs = 1, .steps = 1,
				      .world = 1, .seq = 1 }, .fill = -1 };
	const struct ts_opt_group groups[] = { TS_OPTS_GROUP(tsn_opt_table, &c.nats),
					       TS_OPTS_GROUP(options, &c) };
	struct forge *f = &c.f;
	struct tsn_opts *o = &c.nats;
	struct tsn *n;
	char job[256];
	int rc = 0;

	tsn_opts_from_env(&c.nats, "forge");
	if ((rc = ts_opts_parse(groups, 2, "forge", "forge: see the comment at the top of "
				"e2e/faults/forge.c\n", 0, argc, argv)) <= 0)
		return rc ? 2 : 0;
	rc = 0;
	if (f->steps < 1 || f->steps > 64 || f->jobs < 1) {
		fprintf(stderr, "forge: --steps 1..64, --jobs >= 1\n");
		return 2;
	}
	tsn_opts_finish(o);
	if (c.probe)
		return try_op(o, c.probe);
	o->publish_only = tsn_opts_authenticated(o) && !c.doomed && c.fill < 0;
	if (tsn_open(&n, o)) {
		fprintf(stderr, "forge: cannot open NATS at %s\n", o->url);
		return 1;
	}
	if (c.doomed) {
		for (int i = 0; i < 100 && (rc = tsn_delete_consumer(n, c.doomed)); i++)
			usleep(100000); /* connecting in the background */
		tsn_close(n);
		if (rc)
			fprintf(stderr, "forge: cannot delete consumer %s (%d)\n", c.doomed, rc);
		return rc ? 1 : 0;
	}
	if (c.fill >= 0) {
		for (int i = 0; i < 100 && (rc = filler(n, c.fill)) == -EAGAIN; i++)
			usleep(100000); /* connecting in the background */
		tsn_close(n);
		return rc ? 1 : 0;
	}
	if (c.node) {
		rc = announce_one(n, f, c.node);
		rc = rc ? rc : tsn_flush(n, 30000);
		tsn_close(n);
		if (rc)
			fprintf(stderr, "forge: the announcement was not stored (%d)\n", rc);
		return rc ? 1 : 0;
	}
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	for (long i = 0; i < f->jobs && !rc; i++) {
		uint64_t producer = f->producer ? f->producer : ((uint64_t)rand() << 32 | (uint64_t)rand()) | 1;
		if (f->jobs > 1)
			snprintf(job, sizeof(job), "%s-%ld", f->job, i);
		else
			snprintf(job, sizeof(job), "%s", f->job);
		rc = publish_one(n, f, job, producer);
		if (i % 256 == 255)
			rc = rc ? rc : tsn_flush(n, 30000);
	}
	if (!rc)
		rc = tsn_flush(n, 30000);
	tsn_close(n);
	if (rc)
		fprintf(stderr, "forge: not all stored (%d)\n", rc);
	return rc ? 1 : 0;
}
