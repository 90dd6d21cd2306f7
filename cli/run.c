// SPDX-License-Identifier: Apache-2.0
/* trainscope run: a command under the preload with a relay for its lifetime. */
#include "cli.h"
#include "natsw.h"
#include "numparse.h"
#include "ring.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long the command's other ranks may outlive it before the relay stops. */
#define RANKS_GRACE_MS 10000

static volatile pid_t forward_to;

static void forward(int sig)
{
	if (forward_to > 0)
		kill(forward_to, sig);
}

/* The rings in dir whose process still lives. */
static int rings_alive(const char *dir)
{
	size_t sl = strlen(TS_RING_SUFFIX);
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (len <= sl || strcmp(de->d_name + len - sl, TS_RING_SUFFIX) ||
		    snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		n += ts_ring_producer_alive(path) > 0;
	}
	closedir(d);
	return n;
}

/* Waits up to ms for the processes that hold a ring to exit once the command has: a
 * launcher's ranks (Lightning Fabric's past rank 0, which is the launcher) may still be in
 * their teardown, and their last steps and exit records must reach the relay before it
 * stops, or they are reported lost. Says so when some outlive the wait. */
static void wait_ranks(const char *dir, int ms)
{
	const struct timespec tick = { 0, 50 * 1000000L };
	int left = rings_alive(dir);

	for (int waited = 0; left && waited < ms; waited += 50) {
		nanosleep(&tick, NULL);
		left = rings_alive(dir);
	}
	if (left)
		fprintf(stderr, "trainscope run: %d traced process(es) still running %d s after the "
				"command exited; the relay stops without their exit records\n", left,
			ms / 1000);
}

#define RUN_HEAD                                                                             \
	"Usage: trainscope run [options] -- command [args...]\n"                              \
	"Runs command with libtrainscope.so preloaded (LD_PRELOAD is appended to, not\n"      \
	"replaced) and a trainscope-relay that publishes its ranks' steps to NATS while it\n" \
	"runs. Python programs also get the shim (PYTHONPATH, prepended) that finds their\n"  \
	"steps, and NCCL gets the library as its profiler plugin (NCCL_PROFILER_PLUGIN;\n"    \
	"one you set already is chained behind it: TRAINSCOPE_NCCL_PROFILER_CHAIN). The\n"   \
	"command's exit status is passed through. When it exits, the relay stays up to\n"    \
	"10 s more for the processes it started that are still traced (a launcher's other\n" \
	"ranks in their teardown), so that their last steps and exits are delivered.\n\n"

/* What the command line says: the relay's NATS options are handed on to it. */
struct run_cli {
	const char *job, *ns, *ring_dir, *lib, *shim;
	int metrics_port; /* the relay's; -2: not given */
	bool local;
	struct cli_local_opts lo;
	struct tsn_opts nats;
};

/* --nats: the relay's server, and --local's (yours instead of one of ours); the
 * variable only the relay's (a NATS of a harness around us is not --local's). */
static int nats_opt(void *s, const char *arg, char *err, size_t n)
{
	struct run_cli *c = s;

	(void)err, (void)n;
	c->nats.url = c->lo.nats = arg;
	return 0;
}

#define F(f) offsetof(struct run_cli, f)
#define STR(f) TS_OPT_STR, F(f), 0, 0
static const struct ts_opt run_options[] = {
	{ "job", 'j', STR(job), "NAME", "TRAINSCOPE_JOB", "job name (default local)", NULL },
	{ "namespace", 'n', STR(ns), "NS", "TRAINSCOPE_NAMESPACE", "namespace (default default)",
	  NULL },
	{ "ring-dir", 0, STR(ring_dir), "DIR", NULL,
	  "ring folder (default: a new folder under /dev/shm)", NULL },
	{ "lib", 0, STR(lib), "PATH", "TRAINSCOPE_LIB", "the preload library", NULL },
	{ "shim", 0, STR(shim), "DIR", "TRAINSCOPE_SHIM", "the Python shim's folder (default "
	  "../python beside the library's folder, or the source tree's)", NULL },
	{ "relay-metrics-port", 0, TS_OPT_INT, F(metrics_port), -1, 65535, "N", NULL,
	  "serve the relay's /metrics on port N", NULL },
	{ "local", 0, TS_OPT_TRUE, F(local), 0, 0, NULL, NULL, "all on this machine: a "
	  "nats-server (JetStream, a free loopback port, its store in a temporary folder) and a "
	  "trainscope-analyzer run with the command and end with it; the job's verdict shows on "
	  "one line as it runs; at the end the report is printed and kept with the job's "
	  "picture (report --plot) and timeline in the --out folder. With --nats URL, that "
	  "server instead (yours: the analyzer keeps its TRAINSCOPE stream to "
	  "TRAINSCOPE_STREAM_*)", NULL },
	{ "nats-server", 0, STR(lo.nats_server), "PATH", NULL,
	  "--local's nats-server (default: the one on PATH)", NULL },
	{ "out", 0, STR(lo.out), "DIR", NULL,
	  "--local's folder (default ./trainscope-<job>-<time>)", NULL },
	{ NULL, 0, TS_OPT_NOTE, 0, 0, 0, NULL, NULL,
	  "NATS, for the relay (credentials: when the server authenticates):", NULL },
	{ "nats", 's', TS_OPT_CALL, 0, 0, 0, "URL", NULL, "NATS server (TRAINSCOPE_NATS_URL, "
	  "default nats://127.0.0.1:4222); with --local, yours in place of one of ours (the "
	  "variable is not)", nats_opt },
};

/* The command line into c; returns the index of the command, or 0 (after --help) or
 * -EINVAL (said) to leave with. */
static int run_parse(int argc, char **argv, struct run_cli *c)
{
	/* --nats is run's own (nats_opt): the other five of NATS's */
	const struct ts_opt_group groups[] = { TS_OPTS_GROUP(run_options, c),
					       { tsn_opt_table + 1, 5, &c->nats } };
	int at;

	c->nats.url = getenv("TRAINSCOPE_NATS_URL");
	at = ts_opts_parse(groups, 2, "trainscope run", RUN_HEAD, TS_OPTS_STOP, argc, argv);
	if (at > 0 && at >= argc) {
		fprintf(stderr, "trainscope run: no command given (trainscope run [options] -- cmd)\n");
		return -EINVAL;
	}
	if (at <= 0 || (c->job && setenv("TRAINSCOPE_JOB", c->job, 1)) ||
	    (c->ns && setenv("TRAINSCOPE_NAMESPACE", c->ns, 1)) || tsn_opts_export(&c->nats))
		return at <= 0 ? at : -ENOMEM;
	return at;
}

/* <dir of this executable>/<rel> */
void beside_self(char *out, size_t n, const char *rel)
{
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (len <= 0) {
		snprintf(out, n, "%s", rel);
		return;
	}
	self[len] = 0;
	*strrchr(self, '/') = 0;
	if ((size_t)snprintf(out, n, "%.*s/%s", (int)(sizeof(self) - 256), self, rel) >= n)
		out[n - 1] = 0;
}

static int exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

static pid_t start_relay(const char *ring_dir, const char *nats, const char *metrics_port)
{
	char relay[PATH_MAX];
	pid_t pid;

	beside_self(relay, sizeof(relay), "trainscope-relay");
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM); /* never outlive `trainscope run` */
		unsetenv("LD_PRELOAD");
		if (metrics_port)
			execl(relay, relay, "--ring-dir", ring_dir, "--nats", nats, "--metrics-port",
			      metrics_port, (char *)NULL);
		else
			execl(relay, relay, "--ring-dir", ring_dir, "--nats", nats, (char *)NULL);
		fprintf(stderr, "trainscope run: cannot start %s: %s\n", relay, strerror(errno));
		_exit(127);
	}
	return pid;
}

/* Adds ours to a colon-separated variable, keeping the user's value: appended for
 * LD_PRELOAD (their libraries interpose first), prepended for PYTHONPATH. */
static int chain_env(const char *name, const char *ours, bool prepend)
{
	const char *old = getenv(name);
	char *v;
	int rc;

	if (old && *old) {
		if (asprintf(&v, "%s:%s", prepend ? ours : old, prepend ? old : ours) < 0)
			return -1;
	} else if (!(v = strdup(ours))) {
		return -1;
	}
	rc = setenv(name, v, 1);
	free(v);
	return rc;
}

/* The Python shim's folder: <lib folder>/../python where installed (/opt/trainscope),
 * else the source tree's beside a build tree (build/bin -> injector/preload/python). */
static bool find_shim(const char *lib, char *out, size_t n)
{
	const char *slash = strrchr(lib, '/');
	struct stat st;

	snprintf(out, n, "%.*s/../python/sitecustomize.py", slash ? (int)(slash - lib) : 1,
		 slash ? lib : ".");
	if (stat(out, &st) != 0)
		beside_self(out, n, "../../injector/preload/python/sitecustomize.py");
	if (stat(out, &st) != 0)
		return false;
	*strrchr(out, '/') = 0;
	return true;
}

/* NCCL loads one profiler plugin: the library. A user's own moves to
 * TRAINSCOPE_NCCL_PROFILER_CHAIN, which the library loads behind itself and feeds every
 * event it asks for. Left alone: the library already, "none" (NCCL's word for no plugin)
 * and a chain the user set. 0, or -1 when the environment cannot grow. */
static int set_profiler(const char *lib)
{
	const char *user = getenv("NCCL_PROFILER_PLUGIN"), *slash = user ? strrchr(user, '/') : NULL;

	if (user && (!strcasecmp(user, "none") || !strcmp(user, lib) ||
		     !strcmp(slash ? slash + 1 : user, "libtrainscope.so") ||
		     getenv("TRAINSCOPE_NCCL_PROFILER_CHAIN")))
		return 0;
	/* empty is NCCL's default file name: nothing of the user's to keep */
	if (user && *user && setenv("TRAINSCOPE_NCCL_PROFILER_CHAIN", user, 1))
		return -1;
	return setenv("NCCL_PROFILER_PLUGIN", lib, 1);
}

/* LD_PRELOAD, the Python shim on PYTHONPATH, and the library as NCCL's profiler plugin
 * (set_profiler). */
static int set_preload(const char *lib, const char *shim)
{
	char found[PATH_MAX];

	if (access(lib, R_OK) != 0) {
		fprintf(stderr, "trainscope run: preload library %s: %s\n", lib, strerror(errno));
		return -1;
	}
	if (!shim && find_shim(lib, found, sizeof(found)))
		shim = found;
	if (!shim)
		fprintf(stderr, "trainscope run: no Python shim found (--shim); Python programs "
				"get step boundaries only from trainscope.step()\n");
	if (set_profiler(lib))
		return -1;
	if (shim && chain_env("PYTHONPATH", shim, true))
		return -1;
	return chain_env("LD_PRELOAD", lib, false);
}

int cmd_run(int argc, char **argv)
{
	struct run_cli c = { .metrics_port = -2 };
	const char *nats, *ring_dir, *lib;
	char tmpl[32] = "/dev/shm/trainscope-XXXXXX", libpath[PATH_MAX], port[16] = "";
	int status = 0, rstatus = 0, at = run_parse(argc, argv, &c);
	struct cli_local *local = NULL;
	pid_t relay, child;

	if (at <= 0)
		return at ? 2 : 0;
	nats = c.nats.url, ring_dir = c.ring_dir, lib = c.lib;
	if (c.metrics_port > -2)
		snprintf(port, sizeof(port), "%d", c.metrics_port);
	if (!nats || !*nats)
		nats = "nats://127.0.0.1:4222";
	if (!lib) {
		beside_self(libpath, sizeof(libpath), "../lib/libtrainscope.so");
		lib = libpath;
	}
	if (!ring_dir && !(ring_dir = mkdtemp(tmpl)) &&
	    !(ring_dir = mkdtemp(strcpy(tmpl, "/tmp/trainscope-XXXXXX")))) {
		fprintf(stderr, "trainscope run: cannot create a ring folder: %s\n", strerror(errno));
		return 1;
	}
	if (c.local && cli_local_start(&local, &c.lo)) {
		if (ring_dir == tmpl)
			rmdir(ring_dir);
		return 1;
	}
	if (local)
		nats = cli_local_url(local);
	setenv("TRAINSCOPE_RING_DIR", ring_dir, 1);
	setenv("TRAINSCOPE_NATS_URL", nats, 1);
	relay = start_relay(ring_dir, nats, *port ? port : NULL);
	if (relay < 0 || set_preload(lib, c.shim)) {
		cli_local_stop(local);
		return 1;
	}
	child = fork();
	if (child == 0) {
		execvp(argv[at], &argv[at]);
		fprintf(stderr, "trainscope run: %s: %s\n", argv[at], strerror(errno));
		_exit(127);
	}
	/* the command decides what a signal means; the relay outlives it to drain */
	forward_to = child;
	struct sigaction sa = { .sa_handler = forward };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGINT, SIG_IGN); /* the terminal sends it to the command too */
	if (local)
		cli_local_watch(local, child);
	while (child > 0 && waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	wait_ranks(ring_dir, RANKS_GRACE_MS);
	kill(relay, SIGTERM);
	waitpid(relay, &rstatus, 0);
	if (!WIFEXITED(rstatus) || WEXITSTATUS(rstatus))
		fprintf(stderr, "trainscope run: the relay did not deliver everything "
				"(status %d): see its log above\n", exit_status(rstatus));
	if (ring_dir == tmpl)
		rmdir(ring_dir); /* fails, harmlessly, if unfinished rings are left */
	if (local)
		cli_local_finish(local);
	cli_local_stop(local);
	return child > 0 ? exit_status(status) : 1;
}
