// SPDX-License-Identifier: Apache-2.0
/* trainscope run --local: one command on one machine. The run gets a nats-server with
 * JetStream and a trainscope-analyzer of its own, in a private temporary folder; the
 * job's verdict shows on one line while it runs; at the end come its report, picture and
 * timeline. The two servers are children in a process group of their own (the
 * terminal's Ctrl-C stops the command, not them: the report still comes) that end with
 * this process (PR_SET_PDEATHSIG) or when cli_local_stop stops them. */
#include "cli.h"
#include "analysis/sinks/report.h"
#include "ident.h"
#include "names.h"
#include "tsclock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum {
	START_MS = 30000,  /* nats-server, then the analyzer, ready */
	SETTLE_MS = 60000, /* the analyzer evaluates the job's last step (its lateness_s
			    * is 10 s: a step that lacks a lost rank waits that long) */
	STOP_MS = 5000,    /* a child ends after SIGTERM, else SIGKILL */
	TICK_MS = 250,     /* the verdict line's refresh */
	LOOK_MS = 50,      /* a file a starting child writes, looked for again */
};

struct child {
	pid_t pid;          /* 0: none */
	int pidfd;          /* readable once it ends; -1: a kernel without pidfd_open */
	char log[PATH_MAX]; /* its stderr */
};

struct cli_local {
	char ns[64], job[64];    /* as the ranks' identity has them (TRAINSCOPE_*) */
	char dir[PATH_MAX - 64]; /* private: the server's store, the reports, the logs */
	char out[PATH_MAX];      /* where the report, picture and timeline go */
	char url[256];           /* the NATS the relay and analyzer use */
	char report[PATH_MAX];   /* the analyzer's report file of the job */
	char durable[64];        /* the analyzer's consumer */
	bool external;           /* --nats: the user's server, not ours */
	bool tty;                /* stderr is a terminal: the verdict redrawn in place */
	bool said;               /* the analyzer's stop said */
	char shown[512];         /* the verdict last shown (state and summary) */
	struct child server, analyzer;
};

static atomic_int stopping; /* a signal during the final wait: stop now (lock-free) */

/* SIGINT, SIGTERM, SIGHUP once the command has ended: the final wait ends. */
static void on_stop(int sig)
{
	(void)sig;
	atomic_store(&stopping, 1);
}

/* Starts argv[0] (a path or a name on PATH) as c: its own process group, ended by
 * SIGTERM when this process dies, stdout to out_path and stderr to c->log, without the
 * preload. Returns 0 or -errno. */
static int child_start(struct child *c, char *const argv[], const char *out_path)
{
	pid_t parent = getpid(), pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);
		int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int err = open(c->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent || in < 0 || out < 0 || err < 0)
			_exit(126); /* the parent died before the line above, or no logs */
		dup2(in, 0);
		dup2(out, 1);
		dup2(err, 2);
		unsetenv("LD_PRELOAD");
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	c->pid = pid;
	c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return 0;
}

/* Whether c has ended (left unreaped, for its parent's waitpid). */
static bool child_ended(const struct child *c)
{
	siginfo_t si = { 0 };

	if (c->pid <= 0)
		return true;
	return waitid(P_PID, c->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == c->pid;
}

/* Waits up to ms for c to end; a signal cuts the wait short. Returns whether it ended. */
static bool child_wait(const struct child *c, int ms)
{
	struct pollfd p = { .fd = c->pidfd, .events = POLLIN };
	uint64_t end = ts_mono_ns() + (uint64_t)ms * 1000000ull;

	while (!child_ended(c)) {
		int64_t left = (int64_t)(end - ts_mono_ns()) / 1000000;
		if (left <= 0)
			return false;
		/* without a pidfd, look again every LOOK_MS */
		if (poll(c->pidfd >= 0 ? &p : NULL, c->pidfd >= 0, c->pidfd >= 0 ? (int)left :
			 (int)(left < LOOK_MS ? left : LOOK_MS)) < 0 && errno == EINTR)
			return child_ended(c);
	}
	return true;
}

/* Ends c (SIGTERM, then SIGKILL after STOP_MS) and reaps it. */
static void child_stop(struct child *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGTERM);
		if (!child_wait(c, STOP_MS))
			kill(c->pid, SIGKILL);
		while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (c->pidfd >= 0)
		close(c->pidfd);
	c->pid = 0, c->pidfd = -1;
}

/* The end of a child's log on stderr: what it said before it stopped. */
static void log_tail(const char *what, const char *path)
{
	char buf[1536];
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f) {
		if (fseek(f, -(long)(sizeof(buf) - 1), SEEK_END))
			rewind(f); /* shorter than buf */
		else if (!fgets(buf, sizeof(buf), f)) /* skips the line cut in two */
			rewind(f);
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = 0;
	fprintf(stderr, "trainscope run: %s said:\n%s%s", what, n ? buf : "(nothing)\n",
		n && buf[n - 1] != '\n' ? "\n" : "");
}

/* The program: a path as given, else a name looked up on PATH. Returns 0 or -ENOENT. */
static int find_program(const char *name, char *out, size_t n)
{
	const char *path = getenv("PATH");
	char *dirs, *save = NULL;

	if (strchr(name, '/')) {
		snprintf(out, n, "%s", name);
		return access(out, X_OK) ? -ENOENT : 0;
	}
	if (!path || !(dirs = strdup(path)))
		return -ENOENT;
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		if ((size_t)snprintf(out, n, "%s/%s", *d ? d : ".", name) < n && !access(out, X_OK)) {
			free(dirs);
			return 0;
		}
	}
	free(dirs);
	return -ENOENT;
}

/* The client URL in the ports file nats-server writes once it listens (the only
 * *.ports in dir). Returns 0, or -EAGAIN while there is none yet. */
static int read_ports(const char *dir, char *url, size_t n)
{
	char path[PATH_MAX + 320] = "";
	struct dirent *de;
	DIR *d = opendir(dir);
	json_t *root;
	const char *u;

	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (len > 6 && !strcmp(de->d_name + len - 6, ".ports"))
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
	}
	if (d)
		closedir(d);
	root = *path ? json_load_file(path, 0, NULL) : NULL; /* half written: not yet */
	u = json_string_value(json_array_get(json_object_get(root, "nats"), 0));
	if (u)
		snprintf(url, n, "%s", u);
	json_decref(root);
	return u ? 0 : -EAGAIN;
}

/* The private nats-server: JetStream stored in the private folder, on a loopback port
 * it picks itself (-p -1: no race for a free one) and names in its ports file. Returns 0
 * or -errno, said on stderr. */
static int start_server(struct cli_local *l, const char *program)
{
	char prog[PATH_MAX], store[PATH_MAX + 16], out[PATH_MAX + 16];
	char *argv[] = { prog, "-a", "127.0.0.1", "-p", "-1", "-js", "-sd", store,
			 "--ports_file_dir", l->dir, NULL };
	uint64_t deadline = ts_mono_ns() + START_MS * 1000000ull;
	int rc;

	if (find_program(program ? program : "nats-server", prog, sizeof(prog))) {
		fprintf(stderr, "trainscope run --local: %s%s: install it (apt-get install "
			"nats-server), give its path (--nats-server PATH), or use a NATS server with "
			"JetStream that you run (--nats URL)\n", program ? program : "nats-server",
			program ? " is not an executable" : " is not on PATH");
		return -ENOENT;
	}
	snprintf(store, sizeof(store), "%s/jetstream", l->dir);
	snprintf(out, sizeof(out), "%s/nats-server.out", l->dir);
	snprintf(l->server.log, sizeof(l->server.log), "%s/nats-server.log", l->dir);
	if ((rc = child_start(&l->server, argv, out)))
		return rc;
	while (read_ports(l->dir, l->url, sizeof(l->url))) {
		if (child_wait(&l->server, LOOK_MS) || ts_mono_ns() > deadline) {
			fprintf(stderr, "trainscope run --local: %s did not start\n", prog);
			log_tail("nats-server", l->server.log);
			return -ECHILD;
		}
	}
	return 0;
}

/* Whether the file holds text (a log line a child writes once ready). */
static bool file_says(const char *path, const char *text)
{
	char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = 0;
	return strstr(buf, text) != NULL;
}

/* The private analyzer (beside this executable, as the relay): reports into the private
 * folder, reading only this job with a consumer of its own (on the user's server, others'
 * jobs and analyzers are left alone), no snapshots (nothing outlives the run). Ready once
 * it consumes. Returns 0 or -errno, said on stderr with its log's end. */
static int start_analyzer(struct cli_local *l)
{
	char prog[PATH_MAX], reports[PATH_MAX + 16], out[PATH_MAX + 16], filter[160];
	char ns[64], job[64];
	char *argv[] = { prog, "--nats", l->url, "--report-dir", reports, "--metrics-port", "-1",
			 "--quiet", "--snapshot-s", "0", "--durable", l->durable, "--filter",
			 filter, NULL };
	uint64_t deadline = ts_mono_ns() + START_MS * 1000000ull;
	int rc;

	beside_self(prog, sizeof(prog), "trainscope-analyzer");
	snprintf(reports, sizeof(reports), "%s/reports", l->dir);
	snprintf(out, sizeof(out), "%s/analyzer.out", l->dir);
	snprintf(l->analyzer.log, sizeof(l->analyzer.log), "%s/analyzer.log", l->dir);
	snprintf(l->durable, sizeof(l->durable), "trainscope-local-%d", (int)getpid());
	ts_subject_token(ns, sizeof(ns), l->ns);
	ts_subject_token(job, sizeof(job), l->job);
	snprintf(filter, sizeof(filter), "ts.v1.%s.%s.>", ns, job);
	if (ts_name_report_path(l->report, sizeof(l->report), reports, l->ns, l->job))
		return -ENAMETOOLONG;
	if ((rc = child_start(&l->analyzer, argv, out)))
		return rc;
	while (!file_says(l->analyzer.log, "consuming")) {
		if (child_wait(&l->analyzer, LOOK_MS) || ts_mono_ns() > deadline) {
			fprintf(stderr, "trainscope run --local: %s did not start\n", prog);
			log_tail("trainscope-analyzer", l->analyzer.log);
			return -ECHILD;
		}
	}
	return 0;
}

/* The private folder under $TMPDIR, and the output folder's name: --out, else
 * ./trainscope-<job>-<local time> (the job made safe for a file name). */
static int make_dirs(struct cli_local *l, const char *out)
{
	const char *tmp = getenv("TMPDIR");
	char stamp[32], job[sizeof(l->job)];
	time_t now = time(NULL);
	size_t i;
	struct tm tm;

	snprintf(l->dir, sizeof(l->dir), "%s/trainscope-local-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(l->dir)) {
		int err = errno;
		fprintf(stderr, "trainscope run --local: cannot make a folder in %s: %s\n",
			tmp && *tmp ? tmp : "/tmp", strerror(err));
		l->dir[0] = 0;
		return -err;
	}
	for (i = 0; l->job[i]; i++)
		job[i] = strchr("/\\ :*?\"<>|", l->job[i]) ? '_' : l->job[i];
	job[i] = 0;
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime_r(&now, &tm));
	if (out)
		snprintf(l->out, sizeof(l->out), "%s", out);
	else
		snprintf(l->out, sizeof(l->out), "trainscope-%s-%s", job, stamp);
	return 0;
}

int cli_local_start(struct cli_local **out, const struct cli_local_opts *o)
{
	struct cli_local *l = calloc(1, sizeof(*l));
	struct ts_ident id;
	int rc;

	*out = NULL;
	if (!l)
		return -ENOMEM;
	l->server.pidfd = l->analyzer.pidfd = -1;
	l->tty = isatty(STDERR_FILENO);
	l->external = o->nats != NULL;
	ts_ident_from_env(&id); /* the ranks name their job by the same rules */
	snprintf(l->ns, sizeof(l->ns), "%s", id.ns);
	snprintf(l->job, sizeof(l->job), "%s", id.job);
	if (l->external)
		snprintf(l->url, sizeof(l->url), "%s", o->nats);
	rc = make_dirs(l, o->out);
	if (!rc && !l->external)
		rc = start_server(l, o->nats_server);
	if (!rc)
		rc = start_analyzer(l);
	if (rc) {
		cli_local_stop(l);
		return rc;
	}
	*out = l;
	return 0;
}

const char *cli_local_url(const struct cli_local *l)
{
	return l->url;
}

/* The verdict in one line, "ns/job step N: STATE  slow: SUMMARY  step time X ms (+Y%)",
 * and its key (state and summary: what counts as a change). */
static void verdict(const struct cli_local *l, json_t *r, char *line, size_t n, char *key,
		    size_t kn)
{
	json_t *st = json_object_get(r, "status"), *t = json_object_get(st, "stepTime");
	const char *state = json_string_value(json_object_get(st, "state"));
	const char *sum = json_string_value(json_object_get(st, "summary"));
	size_t len;

	snprintf(key, kn, "%s %s", state ? state : "", sum ? sum : "");
	if (!state) {
		snprintf(line, n, "%s/%s: waiting for its first steps", l->ns, l->job);
		key[0] = 0;
		return;
	}
	snprintf(line, n, "%s/%s step %lld: %s", l->ns, l->job,
		 (long long)json_integer_value(json_object_get(st, "lastStep")), state);
	if (sum && *sum && (len = strlen(line)) < n)
		snprintf(line + len, n - len, "  slow: %s", sum);
	if (json_is_number(json_object_get(t, "currentMs")) && (len = strlen(line)) < n)
		snprintf(line + len, n - len, "  step time %.1f ms (%+.0f%%)",
			 json_number_value(json_object_get(t, "currentMs")),
			 100 * json_number_value(json_object_get(t, "degradation")));
}

/* Shows the report's verdict on stderr: on a terminal one line redrawn in place (the
 * cursor left at its start, so the command's own output writes over it), else a new
 * line each time the verdict changes. */
static void show_verdict(struct cli_local *l, json_t *r)
{
	char line[512], key[sizeof(l->shown)];
	struct winsize ws = { 0 };

	verdict(l, r, line, sizeof(line), key, sizeof(key));
	if (l->tty) {
		int w = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col : 80;
		fprintf(stderr, "\033[K%.*s\r", w - 1, line);
	} else if (strcmp(key, l->shown)) {
		fprintf(stderr, "trainscope: %s\n", line);
	}
	snprintf(l->shown, sizeof(l->shown), "%s", key);
}

/* Says, once, that the analyzer stopped, and what it said last. */
static void analyzer_stopped(struct cli_local *l)
{
	if (l->said)
		return;
	l->said = true;
	fprintf(stderr, "%strainscope run: the analyzer stopped: no verdict for this run\n",
		l->tty ? "\033[K" : "");
	log_tail("trainscope-analyzer", l->analyzer.log);
}

void cli_local_watch(struct cli_local *l, pid_t child)
{
	struct child cmd = { .pid = child, .pidfd = (int)syscall(SYS_pidfd_open, child, 0) };

	do {
		json_t *r = json_load_file(l->report, 0, NULL);
		show_verdict(l, r);
		json_decref(r);
		if (!l->said && child_ended(&l->analyzer)) /* the command runs on regardless */
			analyzer_stopped(l);
	} while (!child_wait(&cmd, TICK_MS));
	if (cmd.pidfd >= 0)
		close(cmd.pidfd);
}

/* cli_read_job's callback: the highest step of the batch's step records into *arg. */
static void max_step(void *arg, const Trainscope__V1__Batch *b)
{
	int64_t *last = arg;

	for (size_t i = 0; i < b->n_records; i++)
		if (b->records[i]->kind_case == TRAINSCOPE__V1__RECORD__KIND_STEP &&
		    (int64_t)b->records[i]->step->step > *last)
			*last = (int64_t)b->records[i]->step->step;
}

/* The last step any rank of the job recorded, as the stream holds it (the relay has
 * delivered everything by now). Returns 0, -ENODATA (no step) or -EIO, said. */
static int last_step(struct cli_local *l, struct tsn *n, int64_t *last)
{
	*last = -1;
	if (cli_read_job(n, l->ns, l->job, max_step, last)) {
		fprintf(stderr, "trainscope run: cannot read the stream at %s\n", l->url);
		return -EIO;
	}
	if (*last < 0) {
		fprintf(stderr, "trainscope run: no step of %s/%s reached NATS: nothing to report "
			"(do its ranks run under the preload, and mark steps?)\n", l->ns, l->job);
		return -ENODATA;
	}
	return 0;
}

/* Waits (SETTLE_MS at most, showing the verdict) until the report has evaluated step
 * last. *out: the report as it then stands (NULL: none). Returns 0, -ETIMEDOUT,
 * -ECHILD (the analyzer stopped) or -EINTR (a signal asked to stop), said. */
static int settle(struct cli_local *l, int64_t last, json_t **out)
{
	uint64_t deadline = ts_mono_ns() + SETTLE_MS * 1000000ull;
	json_t *r = json_load_file(l->report, 0, NULL);
	int rc = 0;

	for (;;) {
		show_verdict(l, r);
		if (r && json_integer_value(json_object_get(json_object_get(r, "status"),
							    "lastStep")) >= last)
			break;
		rc = atomic_load(&stopping) ? -EINTR : child_ended(&l->analyzer) ? -ECHILD :
		     ts_mono_ns() > deadline ? -ETIMEDOUT : 0;
		if (rc)
			break;
		child_wait(&l->analyzer, TICK_MS); /* or less: the analyzer stopped */
		json_decref(r);
		r = json_load_file(l->report, 0, NULL);
	}
	if (l->tty)
		fputs("\033[K", stderr);
	if (rc == -ETIMEDOUT)
		fprintf(stderr, "trainscope run: the analyzer had not evaluated step %lld within "
			"%d s: the report as it stands\n", (long long)last, SETTLE_MS / 1000);
	else if (rc == -ECHILD)
		analyzer_stopped(l);
	*out = r;
	return rc;
}

/* mkdir -p: the folder and those above it. Returns 0 or -errno. */
static int make_path(const char *dir)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", dir);
	for (char *s = strchr(p + 1, '/');; s = strchr(s + 1, '/')) {
		if (s)
			*s = 0;
		if (mkdir(p, 0755) && errno != EEXIST)
			return -errno;
		if (!s)
			return 0;
		*s = '/';
	}
}

/* Prints the report (as trainscope report does) and keeps it, the job's picture (as
 * report --plot draws it) and its timeline (as trainscope timeline writes it) in the
 * out folder, saying each path. Returns 0 or the first failure's -errno. */
static int keep(struct cli_local *l, struct tsn *n, json_t *r)
{
	char path[PATH_MAX], svg[PATH_MAX + 16], trace[PATH_MAX + 16];
	int rc;

	printf("\n");
	ts_report_print(r, stdout);
	printf("\n");
	if ((rc = make_path(l->out))) {
		fprintf(stderr, "trainscope run: cannot make %s: %s\n", l->out, strerror(-rc));
		return rc;
	}
	if (ts_name_report_path(path, sizeof(path), l->out, l->ns, l->job) ||
	    json_dump_file(r, path, JSON_INDENT(2) | JSON_SORT_KEYS)) {
		fprintf(stderr, "trainscope run: cannot write the report into %s\n", l->out);
		rc = -EIO;
	} else {
		printf("wrote %s: the report (trainscope report --dir %s --job %s%s%s)\n", path,
		       l->out, l->job, strcmp(l->ns, "default") ? " --namespace " : "",
		       strcmp(l->ns, "default") ? l->ns : "");
	}
	snprintf(svg, sizeof(svg), "%s/heatmap.svg", l->out);
	if (cli_plot(n, r, svg, NULL) && !rc)
		rc = -EIO;
	snprintf(trace, sizeof(trace), "%s/timeline.json", l->out);
	if (cli_timeline(n, l->ns, l->job, trace) && !rc)
		rc = -EIO;
	fflush(stdout);
	return rc;
}

int cli_local_finish(struct cli_local *l)
{
	struct sigaction sa = { .sa_handler = on_stop }; /* no SA_RESTART: waits end */
	struct tsn_opts o = { 0 };
	struct tsn *n = NULL;
	json_t *r = NULL;
	int64_t last;
	int rc;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	tsn_opts_from_env(&o, "trainscope-run");
	o.url = l->url;
	if ((rc = tsn_open(&n, &o)))
		goto out;
	if ((rc = last_step(l, n, &last)))
		goto out;
	rc = settle(l, last, &r);
	if (r && rc != -EINTR)
		rc = keep(l, n, r) ? -EIO : rc;
out:
	json_decref(r);
	tsn_close(n);
	return rc;
}

/* On the user's server the analyzer's durable consumer would stay: removed. */
static void drop_consumer(struct cli_local *l)
{
	struct tsn_opts o = { 0 };
	struct tsn *n;

	tsn_opts_from_env(&o, "trainscope-run");
	o.url = l->url;
	if (tsn_open(&n, &o) == 0) {
		if (tsn_delete_consumer(n, l->durable))
			fprintf(stderr, "trainscope run: the analyzer's consumer %s is left on %s "
				"(nats consumer rm %s %s)\n", l->durable, l->url, TSN_STREAM,
				l->durable);
		tsn_close(n);
	}
}

/* nftw's callback: removes each entry, the folders last (FTW_DEPTH). */
static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

void cli_local_stop(struct cli_local *l)
{
	bool consumed = l && l->analyzer.pid > 0;

	if (!l)
		return;
	child_stop(&l->analyzer);
	if (l->external && consumed)
		drop_consumer(l);
	child_stop(&l->server);
	if (l->dir[0])
		nftw(l->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(l);
}
