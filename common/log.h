// SPDX-License-Identifier: Apache-2.0
/* Logging for trainscope daemons: one line per event on stderr, level from TRAINSCOPE_LOG. */
#ifndef TS_LOG_H
#define TS_LOG_H

enum ts_log_level { TS_LOG_DEBUG, TS_LOG_INFO, TS_LOG_WARN, TS_LOG_ERROR };

/* Sets the component name printed on each line and reads TRAINSCOPE_LOG
 * (debug|info|warn|error). */
void ts_log_init(const char *component);
void ts_log_set_level(enum ts_log_level level);
void ts_log(enum ts_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define ts_debug(...) ts_log(TS_LOG_DEBUG, __VA_ARGS__)
#define ts_info(...)  ts_log(TS_LOG_INFO, __VA_ARGS__)
#define ts_warn(...)  ts_log(TS_LOG_WARN, __VA_ARGS__)
#define ts_error(...) ts_log(TS_LOG_ERROR, __VA_ARGS__)

#endif
