// SPDX-License-Identifier: Apache-2.0
#include "signals.h"

#include <signal.h>
#include <stdatomic.h>

/* An atomic, not a volatile sig_atomic_t: the handler runs on whichever thread the
 * signal reaches (libnats' too), and the main loop reads it on its own; a lock-free
 * atomic is both async-signal-safe and race-free (ThreadSanitizer reported the volatile). */
static atomic_int stop_flag;

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the handler needs a lock-free flag");

static void on_stop(int sig)
{
	(void)sig;
	atomic_store_explicit(&stop_flag, 1, memory_order_relaxed);
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
	return atomic_load_explicit(&stop_flag, memory_order_relaxed) != 0;
}
