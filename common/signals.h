// SPDX-License-Identifier: Apache-2.0
/* Orderly stop for the daemons: SIGTERM/SIGINT set a flag the main loop polls
 * (process-wide by nature: a signal handler can only reach globals). */
#ifndef TS_SIGNALS_H
#define TS_SIGNALS_H

#include <stdbool.h>

/* Installs the handlers and ignores SIGPIPE (a peer that went away is an error code). */
void ts_signals_init(void);
bool ts_stop_requested(void);

#endif
