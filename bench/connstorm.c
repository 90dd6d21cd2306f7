// SPDX-License-Identifier: Apache-2.0
/* A connect storm: N NATS clients connecting at once with K tokens, as a large job's
 * relays do when it starts. One thread and epoll, the NATS protocol by hand (INFO,
 * CONNECT with auth_token, PING, PONG or -ERR), plain TCP: thousands of clients on two
 * cores, where as many nats.c connections would take three threads each. A refused
 * client retries after the relays' backoff (tsn_backoff_ms: doubling from 250 ms to 8 s,
 * drawn between its half and its whole). Says when each connected; exits 0 when all did
 * before --timeout. bench/bench_connstorm.sh runs it against natsauth. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "natsw.h"

enum state { IDLE, CONNECTING, WAIT_INFO, WAIT_PONG, DONE };

struct client {
	int fd;
	enum state st;
	int attempts;          /* refusals so far */
	int64_t retry_at_ms;   /* IDLE: when to connect */
	int64_t done_ms;       /* since the start */
	const char *token;
	uint64_t rng;
	char buf[1024];
	size_t len;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *read_token(const char *path)
{
	char buf[16384];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = 0;
	return strdup(buf);
}

static struct sockaddr_in addr;
static int ep;
static uint64_t refusals;
/* why: the server's -ERR "Authorization Violation" (the callout refused, or its answer
 * did not come in time), its -ERR "Authentication Timeout" (no CONNECT in time), another
 * -ERR, or the socket (refused, reset, closed) */
static uint64_t why_authz, why_timeout, why_err, why_socket;

static void start(struct client *c)
{
	struct epoll_event ev = { .events = EPOLLOUT | EPOLLIN, .data.ptr = c };

	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	c->len = 0;
	if (c->fd < 0) {
		c->st = IDLE; /* out of descriptors: again a little later */
		c->retry_at_ms = now_ms() + 100;
		return;
	}
	if (connect(c->fd, (struct sockaddr *)&addr, sizeof(addr)) && errno != EINPROGRESS) {
		close(c->fd);
		c->fd = -1;
		c->st = IDLE;
		c->retry_at_ms = now_ms() + 100;
		return;
	}
	c->st = CONNECTING;
	epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
}

/* Refused (or the connection lost before PONG): again after the backoff. */
static void refused_for(struct client *c, uint64_t *why)
{
	(*why)++;
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	c->st = IDLE;
	c->retry_at_ms = now_ms() + tsn_backoff_ms(&c->rng, ++c->attempts);
	refusals++;
}

#define refused(c) refused_for(c, &why_socket)

static void on_line(struct client *c, const char *line, int64_t t0)
{
	char connect[20000];
	int n;

	if (c->st == WAIT_INFO && !strncmp(line, "INFO ", 5)) {
		n = snprintf(connect, sizeof(connect),
			     "CONNECT {\"verbose\":false,\"pedantic\":false,\"protocol\":1,"
			     "\"name\":\"connstorm\",\"lang\":\"C\",\"version\":\"0\","
			     "\"auth_token\":\"%s\"}\r\nPING\r\n", c->token);
		if (write(c->fd, connect, (size_t)n) != n)
			refused(c);
		else
			c->st = WAIT_PONG;
	} else if (c->st == WAIT_PONG && !strncmp(line, "PONG", 4)) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };

		c->st = DONE;
		c->done_ms = now_ms() - t0;
		epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev); /* kept open, as a relay's */
	} else if (!strncmp(line, "PING", 4)) {
		if (write(c->fd, "PONG\r\n", 6) != 6)
			refused(c);
	} else if (!strncmp(line, "-ERR", 4)) {
		if (c->st != DONE)
			refused_for(c, strcasestr(line, "Authorization Violation") ? &why_authz :
				       strcasestr(line, "Authentication Timeout") ? &why_timeout : &why_err);
	}
}

static void on_event(struct client *c, uint32_t events, int64_t t0)
{
	if (c->st == CONNECTING) {
		int err = 0;
		socklen_t len = sizeof(err);
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };

		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
			refused(c);
			return;
		}
		c->st = WAIT_INFO;
		epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
		if (!(events & EPOLLIN))
			return;
	}
	for (;;) {
		ssize_t n = read(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);
		char *nl;

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			if (c->st != DONE)
				refused(c);
			else
				c->st = IDLE, c->retry_at_ms = now_ms(); /* lost after: connect again */
			return;
		}
		if (n < 0)
			return;
		c->len += (size_t)n;
		c->buf[c->len] = 0;
		while ((nl = strstr(c->buf, "\r\n"))) {
			enum state before = c->st;

			*nl = 0;
			on_line(c, c->buf, t0);
			if (c->st == IDLE && before != IDLE)
				return; /* refused: the socket is gone */
			memmove(c->buf, nl + 2, c->len - (size_t)(nl + 2 - c->buf) + 1);
			c->len -= (size_t)(nl + 2 - c->buf);
		}
		if (c->len == sizeof(c->buf) - 1) /* a line too long (an INFO of a big cluster) */
			c->len = 0;
	}
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: connstorm --port N [--host IP] --conns N [--timeout S] TOKEN_FILE...\n"
		   "N clients connect at once to a NATS server, client i with token file\n"
		   "i mod K; a refused one retries after the relays' backoff. Prints when all\n"
		   "connected (or how many had by --timeout, default 120 s), the refusals, and\n"
		   "the clients' connect times (p50, p90, p99, max).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "host", required_argument, NULL, 'H' }, { "port", required_argument, NULL, 'p' },
		{ "conns", required_argument, NULL, 'n' }, { "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },       { 0 },
	};
	const char *host = "127.0.0.1";
	int port = 0, conns = 1000, timeout_s = 120, ch, k, done = 0;
	struct epoll_event evs[256];
	struct client *cs;
	char **tokens;
	int64_t t0, *times;
	struct rlimit rl;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'H': host = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'n': conns = atoi(optarg); break;
		case 't': timeout_s = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	k = argc - optind;
	if (!port || conns < 1 || k < 1) {
		usage(stderr);
		return 2;
	}
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < (rlim_t)conns + 64) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)conns + 64 ? rl.rlim_max : (rlim_t)conns + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	tokens = calloc((size_t)k, sizeof(*tokens));
	for (int i = 0; i < k; i++)
		if (!(tokens[i] = read_token(argv[optind + i]))) {
			fprintf(stderr, "connstorm: cannot read %s\n", argv[optind + i]);
			return 2;
		}
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, host, &addr.sin_addr);
	ep = epoll_create1(0);
	cs = calloc((size_t)conns, sizeof(*cs));
	times = calloc((size_t)conns, sizeof(*times));
	t0 = now_ms();
	for (int i = 0; i < conns; i++) {
		cs[i].token = tokens[i % k];
		cs[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1) ^ (uint64_t)t0;
		start(&cs[i]);
	}
	while (now_ms() - t0 < (int64_t)timeout_s * 1000) {
		int n = epoll_wait(ep, evs, 256, 20);
		int64_t now;

		for (int i = 0; i < n; i++)
			on_event(evs[i].data.ptr, evs[i].events, t0);
		now = now_ms();
		done = 0;
		for (int i = 0; i < conns; i++) {
			if (cs[i].st == IDLE && now >= cs[i].retry_at_ms)
				start(&cs[i]);
			done += cs[i].st == DONE;
		}
		if (done == conns)
			break;
	}
	for (int i = 0; i < conns; i++)
		times[i] = cs[i].st == DONE ? cs[i].done_ms : INT64_MAX;
	qsort(times, (size_t)conns, sizeof(*times), cmp64);
#define AT(q) (times[(size_t)((conns - 1) * (q))] == INT64_MAX ? -1.0 : times[(size_t)((conns - 1) * (q))] / 1000.0)
	printf("connstorm: %d of %d clients connected (%d tokens) in %.2f s; %llu refusals "
	       "retried; connect time p50 %.2f s, p90 %.2f s, p99 %.2f s, max %.2f s; refusals: "
	       "%llu authorization violation, %llu authentication timeout, %llu other -ERR, "
	       "%llu socket\n",
	       done, conns, k, (now_ms() - t0) / 1000.0, (unsigned long long)refusals, AT(0.5),
	       AT(0.9), AT(0.99), AT(1.0), (unsigned long long)why_authz,
	       (unsigned long long)why_timeout, (unsigned long long)why_err,
	       (unsigned long long)why_socket);
	return done == conns ? 0 : 1;
}
