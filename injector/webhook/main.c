/* trainscope-webhook: the mutating admission webhook that injects trainscope. */
#include "log.h"
#include "signals.h"
#include "server.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: trainscope-webhook --tls-cert FILE --tls-key FILE [options]\n"
		"Mutating admission webhook for pods (AdmissionReview v1). A pod annotated\n"
		"trainscope.dev/inject: \"true\" (POST /mutate), or any pod of a namespace that opts in\n"
		"by label (POST /mutate-namespace, unless the pod says \"false\"), gets an init\n"
		"container that copies the library and the Python shim, the relay as a native\n"
		"sidecar, LD_PRELOAD (appended), PYTHONPATH (prepended), TRAINSCOPE_* and volumes.\n"
		"A second pass changes nothing. GET /healthz and /metrics.\n\n"
		"  --tls-cert FILE   PEM certificate (chain) the API server trusts\n"
		"  --tls-key FILE    its PEM key\n"
		"  --plain-http      serve without TLS (local tests only)\n"
		"  --addr ADDR       listen address (default 0.0.0.0)\n"
		"  --port N          listen port (default 8443; 0 = any free port)\n"
		"  --image IMAGE     the trainscope image injected (env TRAINSCOPE_IMAGE)\n"
		"  --nats URL        NATS URL for the relays (env TRAINSCOPE_NATS_URL,\n"
		"                    default nats://trainscope-nats:4222)\n"
		"  -h, --help\n");
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && n < (1 << 20) &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = calloc(1, (size_t)n + 1)) &&
	    fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "tls-cert", required_argument, NULL, 'c' }, { "tls-key", required_argument, NULL, 'k' },
		{ "plain-http", no_argument, NULL, 'P' },     { "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },     { "image", required_argument, NULL, 'i' },
		{ "nats", required_argument, NULL, 's' },     { "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct webhook_opts o = { .port = 8443 };
	const char *cert = NULL, *key = NULL;
	struct webhook *w;
	bool plain = false;
	int ch;

	ts_log_init("webhook");
	o.inject.image = getenv("TRAINSCOPE_IMAGE") ? getenv("TRAINSCOPE_IMAGE") : "trainscope:latest";
	o.inject.nats_url = getenv("TRAINSCOPE_NATS_URL") ? getenv("TRAINSCOPE_NATS_URL")
							  : "nats://trainscope-nats:4222";
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c': cert = optarg; break;
		case 'k': key = optarg; break;
		case 'P': plain = true; break;
		case 'a': o.addr = optarg; break;
		case 'p': o.port = (uint16_t)atoi(optarg); break;
		case 'i': o.inject.image = optarg; break;
		case 's': o.inject.nats_url = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!plain && (!cert || !key)) {
		fprintf(stderr, "trainscope-webhook: the API server only calls HTTPS: pass --tls-cert "
				"and --tls-key (or --plain-http for a local test)\n");
		return 2;
	}
	if (!plain && (!(o.cert_pem = slurp(cert)) || !(o.key_pem = slurp(key)))) {
		fprintf(stderr, "trainscope-webhook: cannot read %s: %s\n", o.cert_pem ? key : cert,
			strerror(errno ? errno : EINVAL));
		return 1;
	}
	if (webhook_start(&w, &o))
		return 1;
	ts_info("webhook: serving %s on port %u, injecting %s (relays to %s)",
		plain ? "HTTP" : "HTTPS", webhook_port(w), o.inject.image, o.inject.nats_url);
	ts_signals_init();
	while (!ts_stop_requested())
		pause();
	webhook_stop(w);
	free((char *)o.cert_pem);
	free((char *)o.key_pem);
	return 0;
}
