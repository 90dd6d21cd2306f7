// SPDX-License-Identifier: Apache-2.0
/* trainscope-webhook: the mutating admission webhook that injects trainscope; with
 * --bootstrap-certs, the init container that makes its certificates. */
#include "metric.h"
#include "bootstrap.h"
#include "cert.h"
#include "log.h"
#include "numparse.h"
#include "opts.h"
#include "signals.h"
#include "server.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#define HEAD                                                                                    \
	"Usage: trainscope-webhook --tls-cert FILE --tls-key FILE [options]\n"                    \
	"       trainscope-webhook --bootstrap-certs --secret NAME --service NAME\n"              \
	"                          [--webhook-config NAME] [--validity-days N] [--kubeconfig FILE]\n" \
	"                          [--out-dir DIR] [--wait-s N] [--peer-names NAME,...]\n"        \
	"Mutating admission webhook for pods (AdmissionReview v1). A pod annotated\n"             \
	"trainscope.dev/inject: \"true\" (POST /mutate), or any pod of a namespace that opts in\n" \
	"by label (POST /mutate-namespace, unless the pod says \"false\"), gets an init\n"        \
	"container that copies the library and the Python shim, the relay as a native\n"         \
	"sidecar, LD_PRELOAD (appended), PYTHONPATH (prepended), TRAINSCOPE_* and volumes.\n"     \
	"Only the containers named by the annotation trainscope.dev/container-names\n"           \
	"(comma-separated) are instrumented, else the first. A second pass changes\n"            \
	"nothing. GET /healthz and /metrics.\n\n"

/* Everything the command line sets: the server's, and --bootstrap-certs' (ts_bootstrap). */
struct cli {
	struct webhook_opts o;
	struct ts_cert_files files;
	struct ts_bootstrap_opts boot;
	struct ts_missed_opts missed;
	int port, check_s, missed_check_s, missed_page;
	bool plain, bootstrap_certs, events;
	const char *ca_file;
};

#define F(f) offsetof(struct cli, f)
#define STR(f) TS_OPT_STR, F(f), 0, 0
static const struct ts_opt options[] = {
	{ "tls-cert", 0, STR(files.cert_path), "FILE", NULL,
	  "PEM certificate (chain) the API server trusts", NULL },
	{ "tls-key", 0, STR(files.key_path), "FILE", NULL, "its PEM key", NULL },
	{ "cert-check-s", 0, TS_OPT_INT, F(check_s), 0, 86400, "N", NULL, "reread both files "
	  "every N seconds and serve a new pair without closing the port (default 10; 0 = "
	  "never)", NULL },
	{ "plain-http", 0, TS_OPT_TRUE, F(plain), 0, 0, NULL, NULL,
	  "serve without TLS (local tests only)", NULL },
	{ "addr", 0, STR(o.addr), "ADDR", NULL, "listen address (default 0.0.0.0)", NULL },
	{ "port", 0, TS_OPT_INT, F(port), 0, 65535, "N", NULL,
	  "listen port (default 8443; 0 = any free port)", NULL },
	{ "image", 0, STR(o.inject.image), "IMAGE", "TRAINSCOPE_IMAGE",
	  "the trainscope image injected", NULL },
	{ "nats", 0, STR(o.inject.nats_url), "URL", "TRAINSCOPE_NATS_URL",
	  "NATS URL for the relays (default nats://trainscope-nats:4222)", NULL },
	{ "nats-audience", 0, STR(o.inject.nats_audience), "AUD", NULL, "authenticated NATS: "
	  "each relay gets a projected token of its pod's ServiceAccount for this audience "
	  "(trainscope-natsauth's)", NULL },
	{ "nats-ca", 0, STR(ca_file), "FILE", NULL,
	  "the CA bundle the relays trust for NATS's TLS (read at start)", NULL },
	{ "events", 0, TS_OPT_TRUE, F(events), 0, 0, NULL, NULL, "a Warning Event (reason "
	  "TrainscopeNotInjected) on each pod that asked for trainscope and was left unchanged "
	  "(needs events create; the API server of --kubeconfig, else the pod's)", NULL },
	{ "missed-check-s", 0, TS_OPT_INT, F(missed_check_s), 0, 86400, "N", NULL, "with "
	  "--events: every N seconds (and at start) look for pods that asked for trainscope "
	  "and were admitted without it, the API server having not reached the webhook "
	  "(failurePolicy: Ignore), and tell each once with a TrainscopeNotInjected Event "
	  "(needs pods get and list, namespaces list; default 0: never)", NULL },
	{ "namespace-label", 0, STR(missed.namespace_label), "KEY", NULL, "for that look: "
	  "pods of namespaces labelled KEY=enabled opt in (default trainscope.dev/inject, as "
	  "the chart's /mutate-namespace selector)", NULL },
	{ "exclude-namespaces", 0, STR(missed.exclude), "NS,...", NULL, "for that look: "
	  "namespaces never sent to the webhook (the chart's release namespace and "
	  "webhook.excludeNamespaces)", NULL },
	{ "missed-page", 0, TS_OPT_INT, F(missed_page), 1, 5000, "N", NULL, "for that look: "
	  "pods listed a request (default 250)", NULL },
	{ "relay-cpu", 0, STR(o.inject.relay_cpu), "Q", NULL, "the relay's cpu request and "
	  "limit, given when the pod declares resources (default " TS_RELAY_CPU_DEFAULT ")", NULL },
	{ "relay-memory", 0, STR(o.inject.relay_memory), "Q", NULL,
	  "its memory request and limit (default " TS_RELAY_MEMORY_DEFAULT ")", NULL },
	{ NULL, 0, TS_OPT_NOTE, 0, 0, 0, NULL, NULL, "\n--bootstrap-certs: make the certificates "
	  "once and exit (the webhook pod's init container, with webhook.certs.job=true). In "
	  "the pod's namespace (env POD_NAMESPACE, else the service account's), the Secret's "
	  "ca.crt, tls.crt and tls.key are kept when they load, the key matches, the "
	  "certificate verifies against ca.crt, names the service and lasts 30 more days; else "
	  "a new CA and certificate (EC P-256, serverAuth and clientAuth) are written to it "
	  "(created as kubernetes.io/tls when missing). Then ca.crt becomes the caBundle of "
	  "every webhook of the MutatingWebhookConfiguration. Writes that meet a conflict are "
	  "retried. Exit 0 when done, 1 when something failed (one line names the object and "
	  "what the API server said), 2 on bad options.", NULL },
	{ "bootstrap-certs", 0, TS_OPT_TRUE, F(bootstrap_certs), 0, 0, NULL, NULL,
	  "make them, as above, and exit", NULL },
	{ "secret", 0, STR(boot.secret), "NAME", NULL, "the Secret", NULL },
	{ "service", 0, STR(boot.service), "NAME", NULL, "the webhook's Service: the "
	  "certificate names NAME, NAME.NS, NAME.NS.svc and NAME.NS.svc.cluster.local", NULL },
	{ "peer-names", 0, STR(boot.peer_names), "NAME,...", NULL, "up to 4 more names (\"*.\" "
	  "before a name: its subdomains), those a cluster's servers dial one another by, e.g. "
	  "*.trainscope-nats-cluster.NS.svc for NATS's routes; a certificate kept must then be "
	  "a TLS client's too", NULL },
	{ "webhook-config", 0, STR(boot.webhook_config), "NAME", NULL, "the "
	  "MutatingWebhookConfiguration (none: only the Secret and --out-dir, as for NATS's own "
	  "serving certificate)", NULL },
	{ "validity-days", 0, TS_OPT_INT, F(boot.validity_days), 1, 36500, "N", NULL,
	  "of a new CA and certificate (default 365)", NULL },
	{ "kubeconfig", 0, STR(boot.kubeconfig), "FILE", NULL, "the API server and credentials "
	  "(default: in cluster, the pod's service account)", NULL },
	{ "out-dir", 0, STR(boot.out_dir), "DIR", NULL, "also write the pair kept or made to "
	  "DIR/tls.crt and DIR/tls.key (0600), and the CA to DIR/ca.crt, for the server's "
	  "container", NULL },
	{ "wait-s", 0, TS_OPT_INT, F(boot.wait_s), 0, 3600, "N", NULL, "wait up to N seconds for "
	  "the MutatingWebhookConfiguration to exist (default 0: a missing one fails at once)",
	  NULL },
};

static int bootstrap(const struct ts_bootstrap_opts *b)
{
	if (!b->secret || !b->service) {
		fprintf(stderr, "trainscope-webhook: --bootstrap-certs needs --secret and "
				"--service\n");
		return 2;
	}
	/* one line per failure, ours: the client's own warnings only when asked for */
	if (!getenv("TRAINSCOPE_LOG"))
		ts_log_set_level(TS_LOG_ERROR);
	return ts_bootstrap_certs(b) ? 1 : 0;
}

/* The pair at startup: it must load. */
static int first_pair(struct ts_cert_files *f, struct webhook_opts *o, struct ts_cert_pair *p)
{
	char why[256];

	if (ts_cert_poll(f, p, why, sizeof(why)) != TS_CERT_NEW) {
		fprintf(stderr, "trainscope-webhook: %s and %s: %s\n", f->cert_path, f->key_path,
			why);
		return -1;
	}
	o->cert_pem = p->cert_pem;
	o->key_pem = p->key_pem;
	o->cert_not_after = p->not_after;
	return 0;
}

/* Serves the files' new pair, if any. Returns -1 when nothing serves the port any more. */
static int check_certs(struct webhook *w, struct ts_cert_files *f)
{
	struct ts_cert_pair p;
	char why[256], when[32];
	int rc = 0;

	switch (ts_cert_poll(f, &p, why, sizeof(why))) {
	case TS_CERT_NEW:
		rc = webhook_reload_tls(w, p.cert_pem, p.key_pem, p.not_after);
		if (!rc) {
			ts_cert_time(p.not_after, when, sizeof(when));
			ts_info("webhook: reloaded certificate from %s (notAfter %s)",
				f->cert_path, when);
		}
		ts_cert_pair_free(&p);
		break;
	case TS_CERT_BAD:
		ts_error("webhook: the new certificate %s and key %s do not load: %s; still "
			 "serving the previous pair", f->cert_path, f->key_path, why);
		webhook_count_tls_failure(w);
		break;
	case TS_CERT_SAME:
		break;
	}
	return rc == -2 ? -1 : 0;
}

/* Until SIGTERM: every check_s seconds, the certificate files. The stop flag is read
 * every second: the signal may reach another thread (libmicrohttpd's, the events
 * thread), and would not end this one's sleep. */
static int serve(struct webhook *w, struct ts_cert_files *f, unsigned check_s)
{
	unsigned waited = 0;

	while (!ts_stop_requested()) {
		sleep(1);
		if (!f || !check_s || ++waited < check_s)
			continue;
		waited = 0;
		if (!ts_stop_requested() && check_certs(w, f))
			return 1;
	}
	return 0;
}

static int start_events(struct cli *c)
{
	char err[256] = "";

	c->missed.sz = sizeof(c->missed);
	c->missed.check_s = (unsigned)c->missed_check_s;
	c->missed.page = (unsigned)c->missed_page;
	if (ts_events_start(&c->o.events, c->boot.kubeconfig, &c->missed, err, sizeof(err)) == 0)
		return 0;
	fprintf(stderr, "trainscope-webhook: --events: the API server: %s\n", err);
	return -1;
}

/* The whole of a CA bundle, for the relays' environment. */
static char *read_pem(const char *file)
{
	FILE *f = fopen(file, "r");
	char *buf = NULL;
	size_t n = 0;

	if (f) {
		buf = calloc(1, 65537);
		n = buf ? fread(buf, 1, 65536, f) : 0;
		fclose(f);
	}
	if (!buf || !strstr(buf, "-----BEGIN CERTIFICATE-----") || n == 65536) {
		fprintf(stderr, "trainscope-webhook: --nats-ca %s: %s\n", file,
			!f ? strerror(errno) : "not a PEM CA bundle (of at most 64 KiB)");
		free(buf);
		return NULL;
	}
	return buf;
}

/* The command line into c, with the defaults where it says nothing: 0, or 2 (bad
 * options) or -1 (--help printed) as the exit status to leave with. */
static int parse_args(int argc, char **argv, struct cli *c)
{
	const struct ts_metric_table served[] = { webhook_metric_table };
	struct ts_metric_list list = { served, sizeof(served) / sizeof(served[0]) };
	const struct ts_opt_group groups[] = { TS_OPTS_GROUP(options, c),
					       TS_OPTS_GROUP(ts_metric_opts, &list) };
	int rc;

	c->port = 8443, c->check_s = 10, c->boot.validity_days = 365;
	c->o.inject.image = "trainscope:latest";
	c->o.inject.nats_url = "nats://trainscope-nats:4222";
	c->o.inject.init_cpu = TS_INIT_CPU_DEFAULT;
	c->o.inject.init_memory = TS_INIT_MEMORY_DEFAULT;
	c->o.inject.relay_cpu = TS_RELAY_CPU_DEFAULT;
	c->o.inject.relay_memory = TS_RELAY_MEMORY_DEFAULT;
	if ((rc = ts_opts_parse(groups, 2, "trainscope-webhook", HEAD, 0, argc, argv)) <= 0)
		return rc ? 2 : -1;
	c->o.port = (uint16_t)c->port;
	return 0;
}

int main(int argc, char **argv)
{
	struct cli c = { 0 };
	struct ts_cert_pair pair = { 0 };
	struct webhook_opts *o = &c.o;
	struct webhook *w;
	char *ca_pem = NULL;
	int rc;

	ts_log_init("webhook");
	if ((rc = parse_args(argc, argv, &c)))
		return rc < 0 ? 0 : rc;
	if (c.bootstrap_certs)
		return bootstrap(&c.boot);
	if (c.ca_file && !(o->inject.nats_ca_pem = ca_pem = read_pem(c.ca_file)))
		return 1;
	if (c.missed_check_s && !c.events) {
		fprintf(stderr, "trainscope-webhook: --missed-check-s tells pods with Events: it "
				"needs --events\n");
		free(ca_pem);
		return 2;
	}
	if (!c.plain && (!c.files.cert_path || !c.files.key_path)) {
		fprintf(stderr, "trainscope-webhook: the API server only calls HTTPS: pass --tls-cert "
				"and --tls-key (or --plain-http for a local test)\n");
		free(ca_pem);
		return 2;
	}
	/* before any thread: the events thread's first look starts at once */
	ts_signals_init();
	if (c.events && start_events(&c)) {
		free(ca_pem);
		return 1;
	}
	rc = !c.plain && first_pair(&c.files, o, &pair) ? 1 : webhook_start(&w, o) ? 1 : 0;
	ts_cert_pair_free(&pair);
	if (rc) {
		ts_events_stop(o->events);
		free(ca_pem);
		return rc;
	}
	ts_info("webhook: serving %s on port %u, injecting %s (relays to %s)",
		c.plain ? "HTTP" : "HTTPS", webhook_port(w), o->inject.image, o->inject.nats_url);
	rc = serve(w, c.plain ? NULL : &c.files, (unsigned)c.check_s);
	/* the server first: its reviews queue Events and read the CA bundle */
	webhook_stop(w);
	ts_events_stop(o->events);
	free(ca_pem);
	ts_cert_files_free(&c.files);
	return rc;
}
