// SPDX-License-Identifier: Apache-2.0
#include "signals.h"

#include <signal.h>

static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
	(void)sig;
	stop_flag = 1;
}

void ts_signals_init(void)
{
	struct sigaction sa = { .sa_handler = on_stop };

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

bool ts_stop_requested(void)
{
	return stop_flag != 0;
}
