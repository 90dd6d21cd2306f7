// SPDX-License-Identifier: Apache-2.0
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

/* Process-wide by nature: stderr is one per process. */
static struct {
	const char *component;
	enum ts_log_level level;
} logger = { "trainscope", TS_LOG_INFO };

static const char *level_names[] = { "debug", "info", "warn", "error" };

void ts_log_init(const char *component)
{
	const char *env = getenv("TRAINSCOPE_LOG");

	logger.component = component;
	if (!env)
		return;
	for (int i = 0; i < 4; i++)
		if (strcmp(env, level_names[i]) == 0)
			logger.level = (enum ts_log_level)i;
}

void ts_log_set_level(enum ts_log_level level)
{
	logger.level = level;
}

void ts_log(enum ts_log_level level, const char *fmt, ...)
{
	char line[1024], stamp[32];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n;

	if (level < logger.level)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
	n = snprintf(line, sizeof(line), "%s.%03ld %s %-5s ", stamp, ts.tv_nsec / 1000000,
		     logger.component, level_names[level]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", line);
}
