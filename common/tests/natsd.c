// SPDX-License-Identifier: Apache-2.0
#include "natsd.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pause_ms(int ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

/* The server writes "nats://127.0.0.1:PORT" into <dir>/nats-server_<pid>.ports. */
static int read_port(struct natsd *d)
{
	char path[256], buf[512];
	FILE *f;
	char *p;

	snprintf(path, sizeof(path), "%s/nats-server_%d.ports", d->dir, (int)d->pid);
	if (!(f = fopen(path, "r")))
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	if (!(p = strstr(buf, "127.0.0.1:")))
		return -1;
	d->port = atoi(p + 10);
	return d->port > 0 ? 0 : -1;
}

static int accepts(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

	ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

/* <dir>/n.conf with what the flags cannot say (max_payload): 0 or -1. */
static int write_conf(const struct natsd *d, char *path, size_t n)
{
	FILE *f;

	snprintf(path, n, "%s/n.conf", d->dir);
	if (!(f = fopen(path, "w")))
		return -1;
	fprintf(f, "max_payload: %d\n", d->max_payload);
	return fclose(f);
}

int natsd_start(struct natsd *d, int port)
{
	char portarg[16], store[128], conf[128];
	double deadline = now_s() + 15;

	if (!d->dir[0]) {
		snprintf(d->dir, sizeof(d->dir), "/tmp/ts-natsd-XXXXXX");
		if (!mkdtemp(d->dir))
			return -1;
	}
	snprintf(portarg, sizeof(portarg), "%d", port ? port : -1);
	snprintf(store, sizeof(store), "%s/js", d->dir);
	d->pid = fork();
	if (d->pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (!getenv("TS_TEST_NATS_LOG"))
			dup2(null, 2), dup2(null, 1);
		char *argv[16] = { "nats-server", "-a", "127.0.0.1", "-p", portarg, "-js", "-sd",
				   store, "--ports_file_dir", d->dir };
		int argc = 10;
		if (d->token)
			argv[argc++] = "--auth", argv[argc++] = (char *)d->token;
		if (d->max_payload && write_conf(d, conf, sizeof(conf)) == 0)
			argv[argc++] = "-c", argv[argc++] = conf;
		execvp("nats-server", argv);
		fprintf(stderr, "cannot run nats-server: %s\n", strerror(errno));
		_exit(127);
	}
	d->port = port;
	while (now_s() < deadline) {
		int st;
		if (waitpid(d->pid, &st, WNOHANG) == d->pid)
			return -1;
		if ((d->port || read_port(d) == 0) && accepts(d->port)) {
			snprintf(d->url, sizeof(d->url), "nats://127.0.0.1:%d", d->port);
			return 0;
		}
		pause_ms(20);
	}
	return -1;
}

void natsd_stop(struct natsd *d, int sig)
{
	if (d->pid > 0) {
		kill(d->pid, sig);
		waitpid(d->pid, NULL, 0);
		d->pid = 0;
	}
}

void natsd_cleanup(struct natsd *d)
{
	char cmd[128];

	natsd_stop(d, SIGTERM);
	if (d->dir[0] && strncmp(d->dir, "/tmp/ts-natsd-", 14) == 0) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "natsd: could not remove %s\n", d->dir);
	}
}
