// SPDX-License-Identifier: Apache-2.0
/* Test helper: a real nats-server with JetStream on a random loopback port. */
#ifndef TS_TEST_NATSD_H
#define TS_TEST_NATSD_H

#include <sys/types.h>

struct natsd {
	pid_t pid;
	int port;
	char dir[64];   /* store and ports file */
	char url[64];
	const char *token; /* set: clients must show it (--auth) */
	int max_payload;   /* set: the server's max_payload in bytes (a configuration file) */
};

/* Starts nats-server (port 0: random, else that port) and waits until it accepts
 * connections. Returns 0 or -1. */
int natsd_start(struct natsd *d, int port);
/* sig: SIGTERM for a clean stop, SIGKILL for a crash. */
void natsd_stop(struct natsd *d, int sig);
void natsd_cleanup(struct natsd *d);

#endif
