// SPDX-License-Identifier: Apache-2.0
/* The daemons' HTTP server: /healthz answers while a /metrics request is still being
 * rendered (a large state takes seconds to render; a liveness probe waits 1 s); /readyz
 * answers apart from it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "httpd.h"

struct slow {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool rendering, released;
};

/* Renders only once the test releases it. */
static void render(void *ctx, struct ts_buf *out)
{
	struct slow *s = ctx;

	pthread_mutex_lock(&s->lock);
	s->rendering = true;
	pthread_cond_broadcast(&s->cond);
	while (!s->released)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	ts_buf_printf(out, "slow_metric 1\n");
}

static int health(void *ctx, struct ts_buf *out)
{
	(void)ctx, (void)out;
	return 0;
}

/* GET path on 127.0.0.1:port; the response's first bytes into buf ("" on a timeout). */
static void get(uint16_t port, const char *path, char *buf, size_t n, int timeout_ms)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	char req[128];
	size_t got = 0;

	buf[0] = 0;
	assert_true(fd >= 0);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	struct pollfd p = { .fd = fd, .events = POLLIN };
	while (got + 1 < n && poll(&p, 1, timeout_ms) == 1) {
		ssize_t r = read(fd, buf + got, n - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	buf[got] = 0;
	close(fd);
}

struct fetch {
	uint16_t port;
	char body[512];
};

static void *fetch_metrics(void *arg)
{
	struct fetch *f = arg;

	get(f->port, "/metrics", f->body, sizeof(f->body), 10000);
	return NULL;
}

static void test_health_not_behind_metrics(void **state)
{
	struct slow s = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false };
	struct ts_httpd *d;
	struct fetch f = { 0 };
	pthread_t t;
	char buf[512];

	(void)state;
	assert_int_equal(ts_httpd_start_metrics_health(&d, NULL, 0, render, health, &s), 0);
	f.port = ts_httpd_port(d);
	assert_int_equal(pthread_create(&t, NULL, fetch_metrics, &f), 0);
	pthread_mutex_lock(&s.lock);
	while (!s.rendering)
		pthread_cond_wait(&s.cond, &s.lock);
	pthread_mutex_unlock(&s.lock);
	/* /metrics is held in its render: /healthz still answers within the second */
	get(f.port, "/healthz", buf, sizeof(buf), 1000);
	assert_non_null(strstr(buf, "200 OK"));
	assert_non_null(strstr(buf, "\r\n\r\nok\n"));
	pthread_mutex_lock(&s.lock);
	s.released = true;
	pthread_cond_broadcast(&s.cond);
	pthread_mutex_unlock(&s.lock);
	pthread_join(t, NULL);
	assert_non_null(strstr(f.body, "slow_metric 1"));
	ts_httpd_stop(d);
}

static int waiting(void *ctx, struct ts_buf *out)
{
	ts_buf_printf(out, "waiting: %s\n", (const char *)ctx);
	return 1;
}

static void nothing(void *ctx, struct ts_buf *out)
{
	(void)ctx, (void)out;
}

/* /readyz answers from the daemon's readiness, apart from /healthz's liveness; a daemon
 * without one answers /readyz as /healthz; an older caller's smaller struct leaves
 * readiness out. */
static void test_ready_apart_from_live(void **state)
{
	struct ts_httpd_daemon d = { sizeof(d), nothing, health, waiting, "the restore" };
	struct ts_httpd *h;
	char buf[512];

	(void)state;
	assert_int_equal(ts_httpd_start_daemon(&h, NULL, 0, &d), 0);
	get(ts_httpd_port(h), "/readyz", buf, sizeof(buf), 1000);
	assert_non_null(strstr(buf, "503"));
	assert_non_null(strstr(buf, "\r\n\r\nwaiting: the restore\n"));
	get(ts_httpd_port(h), "/healthz", buf, sizeof(buf), 1000);
	assert_non_null(strstr(buf, "200 OK"));
	assert_non_null(strstr(buf, "\r\n\r\nok\n"));
	ts_httpd_stop(h);
	d.sz = offsetof(struct ts_httpd_daemon, ready);
	assert_int_equal(ts_httpd_start_daemon(&h, NULL, 0, &d), 0);
	get(ts_httpd_port(h), "/readyz", buf, sizeof(buf), 1000);
	assert_non_null(strstr(buf, "200 OK"));
	assert_non_null(strstr(buf, "\r\n\r\nok\n"));
	ts_httpd_stop(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_health_not_behind_metrics),
		cmocka_unit_test(test_ready_apart_from_live),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
