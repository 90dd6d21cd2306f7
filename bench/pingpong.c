// SPDX-License-Identifier: Apache-2.0
/* Load generator for the agent benchmark: two processes bounce a byte over pipes, each
 * bounce two context switches. The parent is a traced rank (it marks steps), so the
 * agent's programs take their full path on its switches. */
#define TRAINSCOPE_WEAK
#include "trainscope.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10, end;
	int up[2], down[2];
	uint64_t rounds = 0;
	char c = 0;
	pid_t child;

	if (pipe(up) || pipe(down))
		return 1;
	child = fork();
	if (child == 0) {
		while (read(down[0], &c, 1) == 1 && c != 'q')
			if (write(up[1], &c, 1) != 1)
				break;
		_exit(0);
	}
	end = now_s() + seconds;
	while (now_s() < end) {
		if (trainscope_step_begin && rounds % 1000 == 0)
			trainscope_step_begin(rounds / 1000);
		c = 'p';
		if (write(down[1], &c, 1) != 1 || read(up[0], &c, 1) != 1)
			break;
		if (trainscope_step_end && rounds % 1000 == 999)
			trainscope_step_end(rounds / 1000);
		rounds++;
	}
	c = 'q';
	if (write(down[1], &c, 1) != 1)
		perror("pingpong");
	waitpid(child, NULL, 0);
	printf("%.0f\n", rounds / seconds);
	return 0;
}
