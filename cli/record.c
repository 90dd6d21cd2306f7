// SPDX-License-Identifier: Apache-2.0
/* trainscope record: every message the TRAINSCOPE stream holds for a job, with the time
 * each reached the server, into a recording (common/recording.h) to replay offline. */
#include "cli.h"
#include "natsw.h"
#include "recording.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* For the signal handler (process-wide by nature): the part file being written, and
 * whether a signal asked to stop. */
static char part_path[4096];
static atomic_int stopping; /* lock-free: set by a handler on any thread */

/* SIGINT, SIGTERM. The first ends the read at its next message: the consumer deleted, the
 * part removed. A second (the read still waiting for a server that does not answer)
 * removes the part and ends the process at once, as the signal would have. */
static void on_signal(int sig)
{
	static const char msg[] = "trainscope record: stopping (once more: at once)\n";

	if (!atomic_exchange(&stopping, 1)) {
		ssize_t said = write(STDERR_FILENO, msg, sizeof(msg) - 1);
		(void)said; /* nothing to do if it cannot be said */
		return;
	}
	unlink(part_path);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* The recording being written and what went into it. */
struct recorder {
	struct ts_rec *rec;
	uint64_t msgs, bytes;
};

#define RECORD_HEAD                                                                            \
	"Usage: trainscope record --job NAME --out FILE [options]\n"                             \
	"Saves everything the stream holds for a job, as the analyzer receives it, into one\n"   \
	"recording to replay offline: every message of every kind (its pods' and ranks'\n"      \
	"batches, hangs, announcements, the node agents' host and device samples), its\n"       \
	"subject and payload as the server holds them, in the stream's order, each with the\n"  \
	"time it reached the server. Reads until the stream has nothing more of the job;\n"     \
	"the file (gzip-compressed) appears only once it is complete.\n"                       \
	"Exit status: 0 written; 1 nothing written (the stream not read to its end, no\n"      \
	"message of the job, the file not writable); 2 a bad option.\n\n"

/* What the command line says. */
struct record_cli {
	const char *job, *ns, *out;
	struct tsn_opts nats;
};

#define F(f) offsetof(struct record_cli, f)
static const struct ts_opt record_options[] = {
	{ "job", 'j', TS_OPT_STR, F(job), 0, 0, "NAME", NULL, "the job (required)", NULL },
	{ "namespace", 'n', TS_OPT_STR, F(ns), 0, 0, "NS", NULL, "its namespace (default default)",
	  NULL },
	{ "out", 'o', TS_OPT_STR, F(out), 0, 0, "FILE", NULL,
	  "the recording (required), e.g. NAME.tsrec.gz", NULL },
};

/* cli_read_job_msgs' callback: the message into the recording with its JetStream stored
 * time. Returns 0, -EINTR once a signal asked to stop, -EBADMSG for a message without
 * JetStream metadata, or ts_rec_write's error. */
static int on_msg(void *arg, natsMsg *m)
{
	struct recorder *rc = arg;
	jsMsgMetaData *meta = NULL;
	int len = natsMsg_GetDataLength(m);
	uint64_t t_ns;
	int err;

	if (atomic_load(&stopping))
		return -EINTR;
	if (natsMsg_GetMetaData(&meta, m) != NATS_OK)
		return -EBADMSG;
	t_ns = meta->Timestamp > 0 ? (uint64_t)meta->Timestamp : 0;
	jsMsgMetaData_Destroy(meta);
	err = ts_rec_write(rc->rec, t_ns, natsMsg_GetSubject(m), natsMsg_GetData(m),
			   len > 0 ? (size_t)len : 0);
	if (err)
		return err;
	rc->msgs++;
	rc->bytes += len > 0 ? (uint64_t)len : 0;
	return 0;
}

/* Says on stderr why the job's read ended with err (cli_read_job_msgs). */
static void say_read_error(int err, const char *url, const char *ns, const char *job)
{
	if (err == -EAGAIN)
		fprintf(stderr, "trainscope record: cannot read the stream %s at %s\n", TSN_STREAM,
			url);
	else if (err == -ECONNRESET)
		fprintf(stderr, "trainscope record: the server at %s went away before the end of "
			"%s/%s: nothing written\n", url, ns, job);
	else if (err == -EINTR)
		fprintf(stderr, "trainscope record: interrupted: nothing written\n");
	else if (err == -EMSGSIZE || err == -EBADMSG)
		fprintf(stderr, "trainscope record: a message of %s/%s cannot be recorded (%s)\n",
			ns, job, err == -EMSGSIZE ? "over the format's bounds" :
			"no JetStream metadata");
	else
		fprintf(stderr, "trainscope record: cannot write the recording: %s\n",
			strerror(-err));
}

/* Reads ns/job from the stream into the recording tmp, then renames it to out. Returns 0,
 * or -errno said on stderr (tmp may remain: the caller removes it). */
static int record_job(struct tsn *n, const char *url, const char *ns, const char *job,
		      const char *tmp, const char *out)
{
	struct recorder rc = { 0 };
	int err = ts_rec_open_write(&rc.rec, tmp);

	if (err) {
		fprintf(stderr, "trainscope record: cannot write %s: %s\n", out, strerror(-err));
		return err;
	}
	err = cli_read_job_msgs(n, ns, job, on_msg, &rc);
	if (!err && atomic_load(&stopping))
		err = -EINTR;
	if (err)
		say_read_error(err, url, ns, job);
	if (ts_rec_close(rc.rec) && !err) {
		fprintf(stderr, "trainscope record: cannot write %s: %s\n", out, strerror(EIO));
		err = -EIO;
	}
	if (!err && !rc.msgs) {
		fprintf(stderr, "trainscope record: the stream holds no message of %s/%s (its max "
			"age passed, or another namespace?): nothing written\n", ns, job);
		err = -ENODATA;
	}
	if (!err && rename(tmp, out)) {
		err = -errno;
		fprintf(stderr, "trainscope record: cannot write %s: %s\n", out, strerror(-err));
	}
	if (!err)
		fprintf(stderr, "trainscope record: %" PRIu64 " messages (%" PRIu64 " bytes) of "
			"%s/%s written to %s\n", rc.msgs, rc.bytes, ns, job, out);
	return err;
}

/* Connects and records ns/job into out through a file beside it, so that out appears only
 * complete and an existing out is replaced only by a complete recording. Returns 0 or
 * -errno (said). */
static int record(const struct tsn_opts *o, const char *ns, const char *job, const char *out)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct tsn *n;
	int err;

	if (snprintf(part_path, sizeof(part_path), "%s.part-%d", out, (int)getpid()) >=
	    (int)sizeof(part_path)) {
		fprintf(stderr, "trainscope record: %s: %s\n", out, strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	err = tsn_open(&n, o);
	if (err) {
		fprintf(stderr, "trainscope record: cannot connect to %s: %s\n", o->url,
			strerror(-err));
		return err;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	err = record_job(n, o->url, ns, job, part_path, out);
	if (err)
		unlink(part_path);
	tsn_close(n);
	return err;
}

int cmd_record(int argc, char **argv)
{
	struct record_cli c = { .ns = "default" };
	const struct ts_opt_group groups[] = { TS_OPTS_GROUP(record_options, &c),
					       TS_OPTS_GROUP(tsn_opt_table, &c.nats) };
	int at;

	tsn_opts_from_env(&c.nats, "trainscope-record");
	if ((at = ts_opts_parse(groups, 2, "trainscope record", RECORD_HEAD, 0, argc, argv)) <= 0)
		return at ? 2 : 0;
	if (at < argc || !c.job || !*c.job || !c.out || !*c.out) {
		fprintf(stderr, "trainscope record: %s\n", at < argc ? "no argument is taken" :
			!c.job || !*c.job ? "--job is required" : "--out is required");
		return 2;
	}
	tsn_opts_finish(&c.nats);
	return record(&c.nats, c.ns, c.job, c.out) ? 1 : 0;
}
