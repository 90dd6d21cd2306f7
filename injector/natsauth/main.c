// SPDX-License-Identifier: Apache-2.0
/* trainscope-natsauth: the NATS auth callout service. Each client's token is a Kubernetes
 * ServiceAccount token; the API server vouches for it (TokenReview) and the client gets
 * its role's rights only: a relay publishes its own namespace's subjects, an agent its
 * node's, the analyzer alone manages the stream. */
#include "cache.h"
#include "callout.h"
#include "httpd.h"
#include "keep.h"
#include "kube.h"
#include "log.h"
#include "natsw.h"
#include "numparse.h"
#include "review.h"
#include "signals.h"
#include "metric.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <openssl/evp.h>

#define REQ_SUBJECT "$SYS.REQ.USER.AUTH"
#define MAX_WORKERS 64

#define HEAD                                                                                   \
	"Usage: trainscope-natsauth --dir DIR --init [--secret NAME] [--routes URL,...]\n"        \
	"       trainscope-natsauth --dir DIR [options]\n"                                        \
	"       trainscope-natsauth --issuer-seed-file FILE [--server-config OUT] [options]\n"    \
	"NATS auth callout for trainscope (nats-server 2.10 or later). A client connects with\n" \
	"a Kubernetes ServiceAccount token as its NATS token; the API server reviews it\n"       \
	"(TokenReview, for --audience) and the client gets the rights of its role only:\n"      \
	"  relay     any pod's token: publish ts.v1.<its namespace>.*.{rank,pod,hang}.* and\n"  \
	"            ts.v1.<its namespace>.*.ctl.<its node>\n"                                  \
	"  agent     --agent's token: publish ts.v1.*.*.{host,dev}.<its node>, read\n"          \
	"            ts.v1.*.*.ctl.<its node>\n"                                                \
	"  analyzer  --analyzer's token: the JetStream API (the stream, its consumers) and\n"   \
	"            its snapshot bucket\n"                                                     \
	"  cli       a --cli token: read the stream through consumers of its own, never\n"     \
	"            the analyzer's\n"                                                          \
	"Pod tokens (projected volumes) take replies on _INBOX.<pod uid> only. Relays are\n"    \
	"refused in system namespaces; tokens not bound to a pod are refused, but for --cli.\n" \
	"Answers on " REQ_SUBJECT " in queue group trainscope-natsauth.\n\n"

struct natsauth;

/* A review worker: one subscription of the queue group, with its own API server client
 * (one curl handle: one request at a time) behind the shared cache. */
struct worker {
	struct natsauth *a;
	struct ts_callout co;        /* a->co, reviewing through cr */
	struct ts_review review;
	struct ts_cached_review cr;
	struct tsn_core_sub *_Atomic sub; /* set once subscribed: requests may come first */
};

struct natsauth {
	struct ts_callout co;
	struct ts_review review;     /* the options the workers' reviews share */
	struct ts_review_cache cache;
	struct worker *workers;
	int n_workers, review_queue;
	int64_t review_cache_s;
	const char *seed_file, *server_config, *auth_user, *auth_account, *kubeconfig, *dir;
	const char *secret, *routes;
	bool init;
	char seed_path[4096], password_path[4096], conf_path[4096], password[128];
	const char *metrics_addr;
	int metrics_port;
	struct tsn_opts nats;
	struct tsn *n;
	_Atomic uint64_t granted[5], refused, review_errors, unreadable, shed, stale;
	pthread_mutex_t say_lock;    /* what was last said of refusals (workers share it) */
	char last_why[256];
	time_t last_said, overload_said;
	uint64_t shed_said, stale_said; /* the counts when overload was last said */
};

static int load_issuer(struct natsauth *a)
{
	char buf[4096];
	uint8_t raw[32];
	unsigned len = 0;
	size_t n;

	if (tsn_read_secret(a->seed_file, buf, sizeof(buf))) {
		ts_error("cannot read the issuer seed %s: %s", a->seed_file, strerror(errno));
		return -EIO;
	}
	n = strlen(buf);
	if (!ts_nkey_from_seed(&a->co.issuer, buf)) {
		if (a->co.issuer.kind == TS_NKEY_ACCOUNT)
			return 0;
		ts_error("%s: the issuer must be an account seed (SA...)", a->seed_file);
		return -EINVAL;
	}
	if (n < 16) {
		ts_error("%s: neither an account seed nor a secret of 16 bytes or more", a->seed_file);
		return -EINVAL;
	}
	if (EVP_Digest(buf, n, raw, &len, EVP_sha256(), NULL) != 1 || len != 32)
		return -EIO;
	return ts_nkey_from_raw(&a->co.issuer, TS_NKEY_ACCOUNT, raw);
}

/* A file of random text (a seed's secret, a password) unless it is there: 0 or -errno. */
static int make_secret(const char *dir, const char *name)
{
	char path[4096], text[TS_KEEP_LEN + 1];
	int fd, bad;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600)) < 0)
		return errno == EEXIST ? 0 : -errno;
	bad = ts_random_text(text, TS_KEEP_LEN) || write(fd, text, TS_KEEP_LEN) != TS_KEEP_LEN;
	if (close(fd) || bad) {
		unlink(path);
		return -EIO;
	}
	return 0;
}

static const char *const shared_keys[] = { "issuer.seed", "password", "route.password" };

static int init_dir(struct natsauth *a)
{
	struct ts_keep_opts ko = { .secret = a->secret, .kubeconfig = a->kubeconfig,
				   .dir = a->dir, .keys = shared_keys, .n_keys = 3 };
	int err = 0;

	if (a->secret)
		return ts_keep_secrets(&ko) ? -1 : 0;
	for (size_t i = 0; i < ko.n_keys && !err; i++)
		err = make_secret(a->dir, shared_keys[i]);
	if (err) {
		ts_error("cannot make the secrets in %s: %s", a->dir, strerror(-err));
		return -1;
	}
	return 0;
}

/* DIR/routes.conf: the routes' credentials, and each route URL carrying them (a server
 * dialling a route presents what its URL holds, not its cluster block's). */
static int write_routes_conf(struct natsauth *a)
{
	char path[4096], pw[128], list[4096], *save = NULL, *url;
	FILE *f = NULL;
	int fd;

	snprintf(path, sizeof(path), "%s/route.password", a->dir);
	if (tsn_read_secret(path, pw, sizeof(pw))) {
		ts_error("cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	/* it goes into URLs and a quoted string: a password set by hand may not fit */
	if (strspn(pw, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~") !=
	    strlen(pw)) {
		ts_error("%s: the routes' password may hold letters, digits and -._~ only", path);
		return -1;
	}
	if (strlen(a->routes) >= sizeof(list)) {
		ts_error("--routes: longer than %zu characters", sizeof(list) - 1);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/routes.conf", a->dir);
	snprintf(list, sizeof(list), "%s", a->routes);
	/* it holds the password: the server's group may read it (fsGroup), nobody else */
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0640)) < 0 || !(f = fdopen(fd, "w"))) {
		ts_error("cannot write %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	fprintf(f, "# written by trainscope-natsauth --init: include it in the cluster block\n"
		   "authorization { user: \"route\", password: \"%s\" }\nroutes: [\n", pw);
	for (url = strtok_r(list, ",", &save); url; url = strtok_r(NULL, ",", &save)) {
		const char *rest = strstr(url, "://");

		if (!rest || strchr(url, '@') || strpbrk(url, "\" \t\n")) {
			ts_error("--routes: '%s' is not scheme://host:port", url);
			fclose(f);
			return -1;
		}
		fprintf(f, "  \"%.*s://route:%s@%s\"\n", (int)(rest - url), url, pw, rest + 3);
	}
	fprintf(f, "]\n");
	if (fclose(f)) {
		ts_error("cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	ts_info("wrote %s", path);
	return 0;
}

static int write_server_config(struct natsauth *a)
{
	char pub[TS_NKEY_PUBLIC_LEN + 1];
	/* it holds the password: the server's group may read it (fsGroup), nobody else */
	int fd = open(a->server_config, O_WRONLY | O_CREAT | O_TRUNC, 0640);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");

	if (!f) {
		ts_error("cannot write %s: %s", a->server_config, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	ts_nkey_public(&a->co.issuer, pub);
	fprintf(f,
		"# written by trainscope-natsauth: nats-server asks it who may connect\n"
		"accounts {\n"
		"  %s { users: [ { user: \"%s\", password: \"%s\" } ] }\n"
		"  %s { jetstream: enabled }\n"
		"  SYS {}\n"
		"}\n"
		"system_account: SYS\n"
		"authorization {\n"
		"  auth_callout {\n"
		"    issuer: \"%s\"\n"
		"    auth_users: [ \"%s\" ]\n"
		"    account: \"%s\"\n"
		"  }\n"
		"}\n",
		a->auth_account, a->auth_user, a->password, a->co.account, pub, a->auth_user,
		a->auth_account);
	if (fclose(f)) {
		ts_error("cannot write %s: %s", a->server_config, strerror(errno));
		return 1;
	}
	ts_info("wrote %s (issuer %s)", a->server_config, pub);
	return 0;
}

/* Requests waiting on w beyond --review-queue (0: not over it). */
static int over_queue(struct worker *w)
{
	int waiting;

	if (w->a->review_queue <= 0)
		return 0;
	waiting = tsn_core_sub_pending(atomic_load(&w->sub));
	return waiting > w->a->review_queue ? waiting : 0;
}

/* Says, once in 10 s at most, how many requests were shed or dropped stale since. */
static void say_overload(struct natsauth *a, int waiting)
{
	uint64_t shed = atomic_load(&a->shed), stale = atomic_load(&a->stale);
	time_t now = time(NULL);

	pthread_mutex_lock(&a->say_lock);
	if (now - a->overload_said >= 10) {
		ts_warn("overloaded: since %s, refused %llu authorization requests unreviewed as "
			"busy (more than --review-queue %d waiting on a worker; %d now) and dropped "
			"%llu expired ones (their server had given up waiting): the clients retry",
			a->overload_said ? "the last said" : "the start",
			(unsigned long long)(shed - a->shed_said), a->review_queue, waiting,
			(unsigned long long)(stale - a->stale_said));
		a->overload_said = now;
		a->shed_said = shed;
		a->stale_said = stale;
	}
	pthread_mutex_unlock(&a->say_lock);
}

/* nats.c thread (the worker's subscription's): one authorization request. A worker with
 * too many waiting refuses it at once, "busy", unreviewed; one that expired while it
 * waited is dropped (its server has refused the client already). */
static void *on_request(const void *data, size_t len, size_t *answer_len, void *closure)
{
	struct worker *w = closure;
	struct natsauth *a = w->a;
	struct ts_callout_result r;
	int waiting = over_queue(w);
	char *answer, why[128];
	time_t now;

	*answer_len = 0;
	if (waiting) {
		snprintf(why, sizeof(why), "busy: %d authorization requests waiting; retry", waiting);
		answer = ts_callout_refuse(&w->co, data, len, why, &r);
	} else {
		answer = ts_callout_answer(&w->co, data, len, &r);
	}
	if (r.stale || waiting) {
		if (r.stale)
			a->stale++;
		else if (answer)
			a->shed++;
		else
			a->unreadable++;
		say_overload(a, waiting);
		if (answer)
			*answer_len = strlen(answer);
		return answer;
	}
	now = time(NULL);
	if (!answer)
		a->unreadable++;
	else if (r.role != TS_ROLE_NONE)
		a->granted[r.role]++;
	else if (strstr(r.why, "TokenReview"))
		a->review_errors++;
	else
		a->refused++;
	if (answer && r.role != TS_ROLE_NONE) {
		ts_debug("granted %s/%s (pod %s, node %s) the %s role", r.who.ns, r.who.sa,
			 r.who.pod, r.who.node, ts_authz_role_name(r.role));
	} else {
		/* a refused client retries every fraction of a second: said once a while */
		pthread_mutex_lock(&a->say_lock);
		if (strcmp(r.why, a->last_why) || now - a->last_said >= 10) {
			ts_warn("refused a client%s%s%s: %s", *r.who.ns ? " " : "", r.who.ns,
				*r.who.pod ? "/" : "", r.why);
			snprintf(a->last_why, sizeof(a->last_why), "%s", r.why);
			a->last_said = now;
		}
		pthread_mutex_unlock(&a->say_lock);
	}
	if (answer)
		*answer_len = strlen(answer);
	return answer;
}

enum {
	NM_REFUSED,
	NM_REVIEW_ERRORS,
	NM_UNREADABLE,
	NM_SHED,
	NM_STALE,
	NM_CACHE_HITS,
	NM_CACHE_MISSES,
	NM_REVIEWS_IN_FLIGHT,
	NM_NATS_CONNECTED,
	NM_GRANTED,
};

static const struct ts_metric_family natsauth_metrics[] = {
	[NM_REFUSED] = { "trainscope_natsauth_refused_total", TS_COUNTER, NULL,
		"Clients refused: no token, a token the API server rejects, or no role." },
	[NM_REVIEW_ERRORS] = { "trainscope_natsauth_review_errors_total", TS_COUNTER, NULL,
		"Clients refused because the API server could not be asked." },
	[NM_UNREADABLE] = { "trainscope_natsauth_unreadable_total", TS_COUNTER, NULL,
		"Authorization requests that could not be read (left unanswered)." },
	[NM_SHED] = { "trainscope_natsauth_shed_total", TS_COUNTER, NULL,
		"Authorization requests refused unreviewed, busy: more than "
		"--review-queue waiting on a worker (the clients retry)." },
	[NM_STALE] = { "trainscope_natsauth_stale_total", TS_COUNTER, NULL,
		"Authorization requests dropped unanswered: expired (their server had "
		"given up waiting, auth_timeout) before a worker read them." },
	[NM_CACHE_HITS] = { "trainscope_natsauth_cache_hits_total", TS_COUNTER, NULL,
		"Tokens answered from the review cache, without a TokenReview." },
	[NM_CACHE_MISSES] = { "trainscope_natsauth_cache_misses_total", TS_COUNTER, NULL,
		"Tokens the cache could not answer: the TokenReviews made." },
	[NM_REVIEWS_IN_FLIGHT] = { "trainscope_natsauth_reviews_in_flight", TS_GAUGE, NULL,
		"TokenReviews under way now (at most --review-workers)." },
	[NM_NATS_CONNECTED] = { "trainscope_natsauth_nats_connected", TS_GAUGE, NULL,
		"Connected to NATS." },
	[NM_GRANTED] = { "trainscope_natsauth_granted_total", TS_COUNTER, "role",
		"Clients granted a role." },
};

#define PUT(b, id, v) ts_metric_u64((b), &natsauth_metrics[(id)], (uint64_t)(v))

static void render(void *ctx, struct ts_buf *out)
{
	struct natsauth *a = ctx;
	struct tsn_stats st;

	ts_metric_head(out, &natsauth_metrics[NM_GRANTED]);
	for (int r = TS_ROLE_RELAY; r <= TS_ROLE_CLI; r++)
		ts_metric_sample(out, &natsauth_metrics[NM_GRANTED], "{role=\"%s\"} %llu\n",
				 ts_authz_role_name(r), (unsigned long long)a->granted[r]);
	PUT(out, NM_REFUSED, a->refused);
	PUT(out, NM_REVIEW_ERRORS, a->review_errors);
	PUT(out, NM_UNREADABLE, a->unreadable);
	PUT(out, NM_SHED, a->shed);
	PUT(out, NM_STALE, a->stale);
	PUT(out, NM_CACHE_HITS, atomic_load(&a->cache.hits));
	PUT(out, NM_CACHE_MISSES, atomic_load(&a->cache.misses));
	PUT(out, NM_REVIEWS_IN_FLIGHT, (uint64_t)atomic_load(&a->cache.in_flight));
	tsn_get_stats(a->n, &st);
	PUT(out, NM_NATS_CONNECTED, st.connected);
}

static int health(void *ctx, struct ts_buf *out)
{
	struct natsauth *a = ctx;
	struct tsn_stats st;

	tsn_get_stats(a->n, &st);
	if (st.connected)
		return 0;
	ts_buf_printf(out, "not connected to NATS at %s\n", a->nats.url);
	return 1;
}

/* What the options imply, checked together: 0, or 2 (the exit status of bad options). */
static int finish(struct natsauth *a, bool operands)
{
	if (a->dir) {
		snprintf(a->seed_path, sizeof(a->seed_path), "%s/issuer.seed", a->dir);
		snprintf(a->password_path, sizeof(a->password_path), "%s/password", a->dir);
		snprintf(a->conf_path, sizeof(a->conf_path), "%s/auth.conf", a->dir);
		a->seed_file = a->seed_file ? a->seed_file : a->seed_path;
		a->server_config = a->init ? a->conf_path : a->server_config;
	}
	if ((a->secret || a->routes) && !a->init) {
		fprintf(stderr, "trainscope-natsauth: --secret and --routes go with --init\n");
		return 2;
	}
	if (operands || !a->seed_file || (a->init && !a->dir)) {
		fprintf(stderr, "trainscope-natsauth: give --dir DIR, or --issuer-seed-file FILE "
				"(--init needs --dir); no operand is taken. Try --help.\n");
		return 2;
	}
	if (!a->nats.user)
		a->nats.user = a->auth_user;
	if (!a->nats.password && a->dir)
		a->nats.password = a->password;
	tsn_opts_finish(&a->nats);
	return 0;
}

static int add_cli(void *s, const char *arg, char *err, size_t n)
{
	struct ts_authz_policy *p = &((struct natsauth *)s)->co.policy;

	if (p->n_cli == TS_AUTHZ_MAX_CLI) {
		snprintf(err, n, "at most %d", TS_AUTHZ_MAX_CLI);
		return -E2BIG;
	}
	p->cli[p->n_cli++] = arg;
	return 0;
}

static int verbose(void *s, const char *arg, char *err, size_t n)
{
	(void)s, (void)arg, (void)err, (void)n;
	ts_log_set_level(TS_LOG_DEBUG);
	return 0;
}

#define F(f) offsetof(struct natsauth, f)
#define STR(f) TS_OPT_STR, F(f), 0, 0
static const struct ts_opt options[] = {
	{ "dir", 0, STR(dir), "DIR", NULL, "the issuer's seed (DIR/issuer.seed), this "
	  "service's password (DIR/password) and nats-server's part of the configuration "
	  "(DIR/auth.conf: the accounts, the auth_callout block; include it in nats-server's)",
	  NULL },
	{ "init", 0, TS_OPT_TRUE, F(init), 0, 0, NULL, NULL, "make DIR's seed and password when "
	  "missing (random, 0600), write DIR/auth.conf, and exit: nats-server's pod's init "
	  "container, sharing DIR with this service's container", NULL },
	{ "secret", 0, STR(secret), "NAME", NULL, "with --init: the seed and the passwords "
	  "(DIR/password, DIR/route.password) from this Secret of the pod's namespace, made "
	  "there when missing: every server of a cluster must have the same (needs get, update, "
	  "create)", NULL },
	{ "routes", 0, STR(routes), "URL,...", NULL, "with --init: DIR/routes.conf, the "
	  "cluster's routes (nats-route://host:port) with the routes' user and password; "
	  "include it in nats-server's cluster block", NULL },
	{ "issuer-seed-file", 0, STR(seed_file), "FILE", NULL, "the issuer's account nkey seed "
	  "(SA...), or any secret of 16 bytes or more whose SHA-256 is the seed", NULL },
	{ "server-config", 0, STR(server_config), "OUT", NULL,
	  "write the configuration part to OUT and exit", NULL },
	{ "account", 0, STR(co.account), "NAME", NULL,
	  "the account granted clients join (default TS)", NULL },
	{ "auth-user", 0, STR(auth_user), "NAME", NULL, "this service's NATS user (default "
	  "trainscope-auth); its password from TRAINSCOPE_NATS_PASSWORD", NULL },
	{ "auth-account", 0, STR(auth_account), "NAME", NULL,
	  "that user's account (default AUTH)", NULL },
	{ "audience", 0, STR(review.audience), "AUD", NULL,
	  "the tokens' audience (default trainscope-nats)", NULL },
	{ "analyzer", 0, STR(co.policy.analyzer), "NS:SA", NULL,
	  "the analyzer's ServiceAccount (default trainscope:trainscope-analyzer)", NULL },
	{ "agent", 0, STR(co.policy.agent), "NS:SA", NULL,
	  "the agent's (default trainscope:trainscope-agent)", NULL },
	{ "cli", 0, TS_OPT_CALL, 0, 0, 0, "NS:SA", NULL,
	  "a ServiceAccount for the trainscope CLI (repeat, at most 8)", add_cli },
	{ "analyzer-durable", 0, STR(co.policy.analyzer_durable), "NAME", NULL,
	  "the analyzer's consumer (default trainscope-analyzer)", NULL },
	{ "analyzer-partitions", 0, TS_OPT_INT, F(co.policy.analyzer_partitions), 0,
	  TS_AUTHZ_MAX_PARTITIONS, "N", NULL, "the analyzer's partitions: its consumers "
	  "<durable>-p0..-p<N-1> are kept from the cli too (default 0: none)", NULL },
	{ "analyzer-bucket", 0, STR(co.policy.analyzer_bucket), "NAME", NULL,
	  "its snapshot bucket (default trainscope-analyzer)", NULL },
	{ "kubeconfig", 0, STR(kubeconfig), "FILE", NULL, "the API server (default: in cluster)",
	  NULL },
	{ "review-workers", 0, TS_OPT_INT, F(n_workers), 1, MAX_WORKERS, "N", NULL,
	  "TokenReviews made at once: N subscriptions of the queue group, each with its own API "
	  "server client (default 8)", NULL },
	{ "review-cache-s", 0, TS_OPT_I64, F(review_cache_s), 0, 24 * 3600, "S", NULL, "a valid "
	  "token's review is remembered (by its SHA-256) until the token expires, S seconds at "
	  "most (default 300; 0: none): a pod's relays and a reconnecting client cost one "
	  "TokenReview. The trade-off: a token the API server stops accepting (its pod deleted) "
	  "is still admitted up to S seconds longer. Refusals are remembered 10 s (at most S); "
	  "\"could not ask\" never", NULL },
	{ "review-queue", 0, TS_OPT_INT, F(review_queue), 0, 1 << 20, "N", NULL, "requests "
	  "waiting on one worker beyond which new ones are refused at once, \"busy\", "
	  "unreviewed: the clients retry with backoff (default 512; 0: never). A request that "
	  "expired while it waited (its server gave up, auth_timeout) is dropped unreviewed",
	  NULL },
	{ "metrics-port", 0, TS_OPT_INT, F(metrics_port), 0, 65535, "N", NULL,
	  "/metrics and /healthz (default 9466; 0: any)", NULL },
	{ "metrics-addr", 0, STR(metrics_addr), "ADDR", NULL, "(default 0.0.0.0)", NULL },
	{ "verbose", 'v', TS_OPT_CALL, 0, 0, 0, NULL, NULL, "log every review", verbose },
};

static int parse(struct natsauth *a, int argc, char **argv)
{
	const struct ts_metric_table served[] = { TS_METRIC_TABLE(natsauth_metrics) };
	struct ts_metric_list list = { served, sizeof(served) / sizeof(served[0]) };
	const struct ts_opt_group groups[] = { TS_OPTS_GROUP(options, a),
					       TS_OPTS_GROUP(tsn_opt_table, &a->nats),
					       TS_OPTS_GROUP(ts_metric_opts, &list) };
	struct ts_authz_policy *p = &a->co.policy;
	int rc;

	tsn_opts_from_env(&a->nats, "trainscope-natsauth");
	a->auth_user = "trainscope-auth";
	a->auth_account = "AUTH";
	a->co.account = "TS";
	a->review.audience = "trainscope-nats";
	p->analyzer = "trainscope:trainscope-analyzer";
	p->agent = "trainscope:trainscope-agent";
	p->analyzer_durable = p->analyzer_bucket = "trainscope-analyzer";
	a->metrics_port = 9466;
	a->n_workers = 8;
	a->review_cache_s = 300;
	a->review_queue = 512;
	a->metrics_addr = "0.0.0.0";
	if ((rc = ts_opts_parse(groups, 3, "trainscope-natsauth", HEAD, 0, argc, argv)) <= 0)
		exit(rc ? 2 : 0);
	return finish(a, rc < argc);
}


/* The workers: each its own API server client and subscription of the queue group. */
static int start_workers(struct natsauth *a)
{
	char err[256] = "";

	if (ts_review_cache_init(&a->cache, a->review_cache_s, TS_REVIEW_CACHE_MAX, a->n_workers))
		return -1;
	if (!(a->workers = calloc((size_t)a->n_workers, sizeof(*a->workers))))
		return -1;
	for (int i = 0; i < a->n_workers; i++) {
		struct worker *w = &a->workers[i];

		w->a = a;
		w->review = a->review;
		if (ts_kube_open(&w->review.kube, a->kubeconfig, err, sizeof(err))) {
			ts_error("kubernetes: %s", err);
			return -1;
		}
		w->cr = (struct ts_cached_review){ .cache = &a->cache, .review = ts_review_token,
						   .ctx = &w->review };
		w->co = a->co;
		w->co.review = ts_cached_review;
		w->co.review_ctx = &w->cr;
	}
	for (int i = 0; i < a->n_workers; i++) {
		struct tsn_core_sub *sub = NULL;

		if (tsn_serve(a->n, REQ_SUBJECT, "trainscope-natsauth", on_request, &a->workers[i],
			      &sub))
			return -1;
		atomic_store(&a->workers[i].sub, sub);
	}
	return 0;
}

static void stop_workers(struct natsauth *a)
{
	for (int i = 0; a->workers && i < a->n_workers; i++)
		tsn_unsubscribe_core(atomic_exchange(&a->workers[i].sub, NULL));
}

static void free_workers(struct natsauth *a)
{
	for (int i = 0; a->workers && i < a->n_workers; i++)
		ts_kube_close(a->workers[i].review.kube);
	free(a->workers);
	a->workers = NULL;
	ts_review_cache_free(&a->cache);
}

static int serve(struct natsauth *a)
{
	struct ts_httpd *h = NULL;
	int rc = 1;

	pthread_mutex_init(&a->say_lock, NULL);
	if (tsn_open(&a->n, &a->nats))
		goto out;
	if (start_workers(a))
		goto out;
	if (ts_httpd_start_metrics_health(&h, a->metrics_addr, (uint16_t)a->metrics_port, render,
					  health, a))
		goto out;
	ts_info("answering %s on %s as %s; clients join account %s; %d review workers, reviews "
		"remembered %llds; metrics on port %u", REQ_SUBJECT, a->nats.url, a->nats.user,
		a->co.account, a->n_workers, (long long)a->review_cache_s, ts_httpd_port(h));
	while (!ts_stop_requested())
		usleep(200 * 1000);
	rc = 0;
out:
	stop_workers(a);
	ts_httpd_stop(h);
	tsn_close(a->n);
	free_workers(a);
	return rc;
}

int main(int argc, char **argv)
{
	struct natsauth a = { 0 };
	int rc;

	ts_log_init("natsauth");
	if ((rc = parse(&a, argc, argv)))
		return rc;
	if (a.init && (init_dir(&a) || (a.routes && write_routes_conf(&a))))
		return 1;
	if (a.dir && tsn_read_secret(a.password_path, a.password, sizeof(a.password))) {
		ts_error("cannot read %s: %s (made by --init)", a.password_path, strerror(errno));
		return 1;
	}
	if (!a.dir) /* the password nats-server's configuration holds for this service */
		snprintf(a.password, sizeof(a.password), "%s", a.nats.password ? a.nats.password : "");
	if (load_issuer(&a))
		return 1;
	if (a.server_config)
		return write_server_config(&a);
	ts_signals_init();
	return serve(&a);
}
