// SPDX-License-Identifier: Apache-2.0
/* The pod sandbox's process for the node e2e (no registry holds registry.k8s.io/pause
 * here): it keeps the pod's namespaces alive, reaps what it inherits, and exits on
 * SIGINT or SIGTERM. Built static, so the image is this file alone. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig)
{
	(void)sig;
	_exit(0);
}

static void on_child(int sig)
{
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(void)
{
	struct sigaction stop = { .sa_handler = on_stop }, child = { .sa_handler = on_child,
								    .sa_flags = SA_NOCLDSTOP };

	sigaction(SIGINT, &stop, NULL);
	sigaction(SIGTERM, &stop, NULL);
	sigaction(SIGCHLD, &child, NULL);
	for (;;)
		pause();
}
