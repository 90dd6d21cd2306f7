// SPDX-License-Identifier: Apache-2.0
/* make bench, webhook part: p50/p99 latency of 1,000 AdmissionReviews over HTTPS to
 * the webhook server, one kept-alive connection as the API server uses; then the same
 * while 1,000 slow clients hold connections that never send a request (any pod can),
 * on a connection made after them, and 100 reviews on a new connection each. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "injector/webhook/server.h"

#define N 1000

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
	(void)p, (void)ud;
	return sz * n;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#define SLOW 1000

/* n reviews on c, in ms each; the first, which may pay a handshake, in *first. */
static int measure(CURL *c, double *ms, int n, double *first)
{
	int skip = first ? 1 : 0;

	for (int i = 0; i < n + skip; i++) {
		struct timespec a, b;
		long code = 0;
		clock_gettime(CLOCK_MONOTONIC, &a);
		if (curl_easy_perform(c) != CURLE_OK ||
		    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK || code != 200) {
			fprintf(stderr, "bench_webhook: request %d failed (HTTP %ld)\n", i, code);
			return -1;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		double t = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
		if (i < skip)
			*first = t;
		else
			ms[i - skip] = t;
	}
	qsort(ms, (size_t)n, sizeof(ms[0]), cmp);
	return 0;
}

static CURL *client(const char *url, const char *cert, const char *body, struct curl_slist *h)
{
	CURL *c = curl_easy_init();

	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CAINFO, cert);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	return c;
}

/* Connections that start a TLS record and then say nothing more (slowloris). */
static int hold_slow(uint16_t port, int *fds, int n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct rlimit rl;

	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	for (int i = 0; i < n; i++) {
		if ((fds[i] = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
		    connect(fds[i], (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    write(fds[i], "\x16\x03\x01", 3) != 3) {
			fprintf(stderr, "bench_webhook: slow connection %d: %m\n", i);
			return -1;
		}
	}
	return 0;
}

static void row(const char *what, double v)
{
	printf("| %-46s | %14.3f %-10s |\n", what, v, "ms");
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	char cert[512], key[512], url[64];
	struct webhook_opts o = { .addr = "127.0.0.1", .inject = { "img", "nats://n:4222", false } };
	static double ms[N];
	struct webhook *w;
	char *body;

	snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
	snprintf(key, sizeof(key), "%s/key.pem", dir);
	o.cert_pem = slurp(cert);
	o.key_pem = slurp(key);
	body = slurp("injector/webhook/tests/corpus/pod.json");
	if (!o.cert_pem || !o.key_pem || !body || webhook_start(&w, &o)) {
		fprintf(stderr, "bench_webhook: needs %s, %s and the pod corpus\n", cert, key);
		return 1;
	}
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/mutate", webhook_port(w));
	curl_global_init(CURL_GLOBAL_DEFAULT);
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	CURL *c = client(url, cert, body, h), *c2, *c3;
	static double loaded[N], fresh[100];
	static int fds[SLOW];
	double first = 0, first2 = 0;
	if (measure(c, ms, N, &first) || hold_slow(webhook_port(w), fds, SLOW))
		return 1;
	c2 = client(url, cert, body, h);
	c3 = client(url, cert, body, h);
	curl_easy_setopt(c3, CURLOPT_FORBID_REUSE, 1L);
	if (measure(c2, loaded, N, &first2) || measure(c3, fresh, 100, NULL))
		return 1;
	printf("\nwebhook benchmark (%d AdmissionReviews of a training pod over HTTPS, kept alive)\n\n",
	       N);
	printf("| %-46s | %14s %-10s |\n", "what", "measured", "");
	printf("|%.48s|%.27s|\n", "------------------------------------------------",
	       "---------------------------");
	row("first request (TLS handshake included)", first);
	row("p50", ms[N / 2]);
	row("p99", ms[N * 99 / 100]);
	row("with 1,000 slow connections held: first", first2);
	row("  p50", loaded[N / 2]);
	row("  p99 (budget 10 ms)", loaded[N * 99 / 100]);
	row("  p99, a new connection each (100)", fresh[99]);
	for (int i = 0; i < SLOW; i++)
		close(fds[i]);
	curl_easy_cleanup(c2);
	curl_easy_cleanup(c3);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	curl_global_cleanup();
	webhook_stop(w);
	return 0;
}
