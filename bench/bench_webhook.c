/* make bench, webhook part: p50/p99 latency of 1,000 AdmissionReviews over HTTPS to
 * the webhook server, one kept-alive connection as the API server uses. */
#include <curl/curl.h>
#include <stdio.h>
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

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	char cert[512], key[512], url[64];
	struct webhook_opts o = { .addr = "127.0.0.1", .inject = { "img", "nats://n:4222", false } };
	static double ms[N];
	struct webhook *w;
	char *body;
	CURL *c;

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
	c = curl_easy_init();
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CAINFO, cert);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
	double first = 0;
	for (int i = 0; i <= N; i++) {
		struct timespec a, b;
		long code = 0;
		clock_gettime(CLOCK_MONOTONIC, &a);
		if (curl_easy_perform(c) != CURLE_OK ||
		    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK || code != 200) {
			fprintf(stderr, "bench_webhook: request %d failed (HTTP %ld)\n", i, code);
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		double t = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
		if (i == 0)
			first = t; /* pays the TLS handshake */
		else
			ms[i - 1] = t;
	}
	qsort(ms, N, sizeof(ms[0]), cmp);
	printf("\nwebhook benchmark (%d AdmissionReviews of a training pod over HTTPS, kept alive)\n\n",
	       N);
	printf("| %-46s | %14s %-10s |\n", "what", "measured", "");
	printf("|%.48s|%.27s|\n", "------------------------------------------------",
	       "---------------------------");
	printf("| %-46s | %14.3f %-10s |\n", "first request (TLS handshake included)", first, "ms");
	printf("| %-46s | %14.3f %-10s |\n", "p50", ms[N / 2], "ms");
	printf("| %-46s | %14.3f %-10s |\n", "p99", ms[N * 99 / 100], "ms");
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	curl_global_cleanup();
	webhook_stop(w);
	return 0;
}
