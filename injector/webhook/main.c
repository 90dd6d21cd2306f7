// SPDX-License-Identifier: Apache-2.0
/* trainscope-webhook: the mutating admission webhook that injects trainscope; with
 * --bootstrap-certs, the init container that makes its certificates. */
#include "bootstrap.h"
#include "cert.h"
#include "log.h"
#include "numparse.h"
#include "signals.h"
#include "server.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: trainscope-webhook --tls-cert FILE --tls-key FILE [options]\n"
		"       trainscope-webhook --bootstrap-certs --secret NAME --service NAME\n"
		"                          [--webhook-config NAME] [--validity-days N] [--kubeconfig FILE]\n"
		"                          [--out-dir DIR] [--wait-s N] [--peer-names NAME,...]\n"
		"Mutating admission webhook for pods (AdmissionReview v1). A pod annotated\n"
		"trainscope.dev/inject: \"true\" (POST /mutate), or any pod of a namespace that opts in\n"
		"by label (POST /mutate-namespace, unless the pod says \"false\"), gets an init\n"
		"container that copies the library and the Python shim, the relay as a native\n"
		"sidecar, LD_PRELOAD (appended), PYTHONPATH (prepended), TRAINSCOPE_* and volumes.\n"
		"Only the containers named by the annotation trainscope.dev/container-names\n"
		"(comma-separated) are instrumented, else the first. A second pass changes\n"
		"nothing. GET /healthz and /metrics.\n\n"
		"  --tls-cert FILE   PEM certificate (chain) the API server trusts\n"
		"  --tls-key FILE    its PEM key\n"
		"  --cert-check-s N  reread both files every N seconds and serve a new pair\n"
		"                    without closing the port (default 10; 0 = never)\n"
		"  --plain-http      serve without TLS (local tests only)\n"
		"  --addr ADDR       listen address (default 0.0.0.0)\n"
		"  --port N          listen port (default 8443; 0 = any free port)\n"
		"  --image IMAGE     the trainscope image injected (env TRAINSCOPE_IMAGE)\n"
		"  --nats URL        NATS URL for the relays (env TRAINSCOPE_NATS_URL,\n"
		"                    default nats://trainscope-nats:4222)\n"
		"  --nats-audience AUD  authenticated NATS: each relay gets a projected token of its\n"
		"                    pod's ServiceAccount for this audience (trainscope-natsauth's)\n"
		"  --nats-ca FILE    the CA bundle the relays trust for NATS's TLS (read at start)\n"
		"  --events          a Warning Event (reason TrainscopeNotInjected) on each pod that\n"
		"                    asked for trainscope and was left unchanged (needs events create;\n"
		"                    the API server of --kubeconfig, else the pod's)\n"
		"  --relay-cpu Q     the relay's cpu request and limit, given when the pod\n"
		"                    declares resources (default " TS_RELAY_CPU_DEFAULT ")\n"
		"  --relay-memory Q  its memory request and limit (default " TS_RELAY_MEMORY_DEFAULT ")\n"
		"  -h, --help\n\n"
		"--bootstrap-certs: make the certificates once and exit (the webhook pod's init\n"
		"container, with webhook.certs.job=true). In the pod's namespace (env POD_NAMESPACE, else the\n"
		"service account's), the Secret's ca.crt, tls.crt and tls.key are kept when they load,\n"
		"the key matches, the certificate verifies against ca.crt, names the service and\n"
		"lasts 30 more days; else a new CA and certificate (EC P-256, serverAuth and\n"
		"clientAuth)\n"
		"are written to it (created as kubernetes.io/tls when missing). Then ca.crt becomes\n"
		"the caBundle of every webhook of the MutatingWebhookConfiguration. Writes that\n"
		"meet a conflict are retried. Exit 0 when done, 1 when something failed (one line\n"
		"names the object and what the API server said), 2 on bad options.\n"
		"  --secret NAME          the Secret\n"
		"  --service NAME         the webhook's Service: the certificate names NAME, NAME.NS,\n"
		"                         NAME.NS.svc and NAME.NS.svc.cluster.local\n"
		"  --peer-names NAME,...  up to 4 more names (\"*.\" before a name: its subdomains),\n"
		"                         those a cluster's servers dial one another by, e.g.\n"
		"                         *.trainscope-nats-cluster.NS.svc for NATS's routes; a\n"
		"                         certificate kept must then be a TLS client's too\n"
		"  --webhook-config NAME  the MutatingWebhookConfiguration (none: only the Secret and\n"
		"                         --out-dir, as for NATS's own serving certificate)\n"
		"  --validity-days N      of a new CA and certificate (default 365)\n"
		"  --kubeconfig FILE      the API server and credentials (default: in cluster, the\n"
		"                         pod's service account)\n"
		"  --out-dir DIR          also write the pair kept or made to DIR/tls.crt and\n"
		"                         DIR/tls.key (0600), and the CA to DIR/ca.crt, for the\n"
		"                         server's container\n"
		"  --wait-s N             wait up to N seconds for the MutatingWebhookConfiguration\n"
		"                         to exist (default 0: a missing one fails at once)\n");
}

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

/* Until SIGTERM: every check_s seconds, the certificate files. */
static int serve(struct webhook *w, struct ts_cert_files *f, unsigned check_s)
{
	while (!ts_stop_requested()) {
		if (!f || !check_s) {
			pause();
			continue;
		}
		sleep(check_s); /* a signal ends it early */
		if (!ts_stop_requested() && check_certs(w, f))
			return 1;
	}
	return 0;
}

static int start_events(struct webhook_opts *o, const char *kubeconfig)
{
	char err[256] = "";

	if (ts_events_start(&o->events, kubeconfig, err, sizeof(err)) == 0)
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

/* Codes of the long-only options (every one but --help): past any character. */
enum webhook_opt {
	OPT_TLS_CERT = 0x100,
	OPT_TLS_KEY,
	OPT_PLAIN_HTTP,
	OPT_ADDR,
	OPT_PORT,
	OPT_IMAGE,
	OPT_NATS,
	OPT_CERT_CHECK_S,
	OPT_RELAY_CPU,
	OPT_RELAY_MEMORY,
	OPT_BOOTSTRAP_CERTS,
	OPT_SECRET,
	OPT_SERVICE,
	OPT_WEBHOOK_CONFIG,
	OPT_VALIDITY_DAYS,
	OPT_KUBECONFIG,
	OPT_OUT_DIR,
	OPT_WAIT_S,
	OPT_NATS_AUDIENCE,
	OPT_NATS_CA,
	OPT_EVENTS,
	OPT_PEER_NAMES,
};

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "tls-cert", required_argument, NULL, OPT_TLS_CERT },
		{ "tls-key", required_argument, NULL, OPT_TLS_KEY },
		{ "plain-http", no_argument, NULL, OPT_PLAIN_HTTP },
		{ "addr", required_argument, NULL, OPT_ADDR },
		{ "port", required_argument, NULL, OPT_PORT },
		{ "image", required_argument, NULL, OPT_IMAGE },
		{ "nats", required_argument, NULL, OPT_NATS },
		{ "help", no_argument, NULL, 'h' },
		{ "cert-check-s", required_argument, NULL, OPT_CERT_CHECK_S },
		{ "relay-cpu", required_argument, NULL, OPT_RELAY_CPU },
		{ "relay-memory", required_argument, NULL, OPT_RELAY_MEMORY },
		{ "bootstrap-certs", no_argument, NULL, OPT_BOOTSTRAP_CERTS },
		{ "secret", required_argument, NULL, OPT_SECRET },
		{ "service", required_argument, NULL, OPT_SERVICE },
		{ "webhook-config", required_argument, NULL, OPT_WEBHOOK_CONFIG },
		{ "validity-days", required_argument, NULL, OPT_VALIDITY_DAYS },
		{ "kubeconfig", required_argument, NULL, OPT_KUBECONFIG },
		{ "out-dir", required_argument, NULL, OPT_OUT_DIR },
		{ "wait-s", required_argument, NULL, OPT_WAIT_S },
		{ "nats-audience", required_argument, NULL, OPT_NATS_AUDIENCE },
		{ "nats-ca", required_argument, NULL, OPT_NATS_CA },
		{ "events", no_argument, NULL, OPT_EVENTS },
		{ "peer-names", required_argument, NULL, OPT_PEER_NAMES },
		{ 0 }
	};
	struct webhook_opts o = { .port = 8443 };
	struct ts_cert_files files = { 0 };
	struct ts_cert_pair pair = { 0 };
	struct ts_bootstrap_opts boot = { .validity_days = 365 };
	unsigned check_s = 10;
	struct webhook *w;
	bool plain = false, bootstrap_certs = false, events = false;
	const char *ca_file = NULL;
	char *ca_pem = NULL;
	int ch, rc;

	ts_log_init("webhook");
	o.inject.image = getenv("TRAINSCOPE_IMAGE") ? getenv("TRAINSCOPE_IMAGE") : "trainscope:latest";
	o.inject.nats_url = getenv("TRAINSCOPE_NATS_URL") ? getenv("TRAINSCOPE_NATS_URL")
							  : "nats://trainscope-nats:4222";
	o.inject.init_cpu = TS_INIT_CPU_DEFAULT;
	o.inject.init_memory = TS_INIT_MEMORY_DEFAULT;
	o.inject.relay_cpu = TS_RELAY_CPU_DEFAULT;
	o.inject.relay_memory = TS_RELAY_MEMORY_DEFAULT;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case OPT_TLS_CERT: files.cert_path = optarg; break;
		case OPT_TLS_KEY: files.key_path = optarg; break;
		case OPT_PLAIN_HTTP: plain = true; break;
		case OPT_ADDR: o.addr = optarg; break;
		case OPT_PORT: o.port = (uint16_t)ts_opt_int("--port", optarg, 0, 65535); break;
		case OPT_IMAGE: o.inject.image = optarg; break;
		case OPT_NATS: o.inject.nats_url = optarg; break;
		case OPT_NATS_AUDIENCE: o.inject.nats_audience = optarg; break;
		case OPT_EVENTS: events = true; break;
		case OPT_NATS_CA: ca_file = optarg; break;
		case OPT_CERT_CHECK_S:
			check_s = (unsigned)ts_opt_int("--cert-check-s", optarg, 0, 86400);
			break;
		case OPT_RELAY_CPU: o.inject.relay_cpu = optarg; break;
		case OPT_RELAY_MEMORY: o.inject.relay_memory = optarg; break;
		case OPT_BOOTSTRAP_CERTS: bootstrap_certs = true; break;
		case OPT_SECRET: boot.secret = optarg; break;
		case OPT_SERVICE: boot.service = optarg; break;
		case OPT_PEER_NAMES: boot.peer_names = optarg; break;
		case OPT_WEBHOOK_CONFIG: boot.webhook_config = optarg; break;
		case OPT_VALIDITY_DAYS:
			boot.validity_days = (unsigned)ts_opt_int("--validity-days", optarg, 1, 36500);
			break;
		case OPT_KUBECONFIG: boot.kubeconfig = optarg; break;
		case OPT_OUT_DIR: boot.out_dir = optarg; break;
		case OPT_WAIT_S: boot.wait_s = (unsigned)ts_opt_int("--wait-s", optarg, 0, 3600); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (bootstrap_certs)
		return bootstrap(&boot);
	if (ca_file && !(o.inject.nats_ca_pem = ca_pem = read_pem(ca_file)))
		return 1;
	if (events && start_events(&o, boot.kubeconfig)) {
		free(ca_pem);
		return 1;
	}
	if (!plain && (!files.cert_path || !files.key_path)) {
		fprintf(stderr, "trainscope-webhook: the API server only calls HTTPS: pass --tls-cert "
				"and --tls-key (or --plain-http for a local test)\n");
		return 2;
	}
	rc = !plain && first_pair(&files, &o, &pair) ? 1 : webhook_start(&w, &o) ? 1 : 0;
	ts_cert_pair_free(&pair);
	if (rc) {
		ts_events_stop(o.events);
		free(ca_pem);
		return rc;
	}
	ts_info("webhook: serving %s on port %u, injecting %s (relays to %s)",
		plain ? "HTTP" : "HTTPS", webhook_port(w), o.inject.image, o.inject.nats_url);
	ts_signals_init();
	rc = serve(w, plain ? NULL : &files, check_s);
	ts_events_stop(o.events);
	free(ca_pem);
	webhook_stop(w);
	ts_cert_files_free(&files);
	return rc;
}
