// SPDX-License-Identifier: Apache-2.0
/* One number parser with bounds, for options and environment variables (numparse.h). */
#include "numparse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* What strtol and strtod would skip or take that an option's value should not hold:
 * leading blanks, and (for strtod) a hexadecimal form. */
static int unfit(const char *s)
{
	const char *p = s;

	if (!s || !*s || isspace((unsigned char)*s))
		return 1;
	if (*p == '+' || *p == '-')
		p++;
	return *p == '0' && (p[1] == 'x' || p[1] == 'X');
}

int ts_parse_int(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (unfit(s))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int ts_parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	if (unfit(s))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || isnan(v) || (isinf(v) && errno != ERANGE)) /* nan, inf */
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

static const char *program; /* ts_opt_program's; NULL: the executable's name */

void ts_opt_program(const char *name)
{
	program = name;
}

/* The name complaints go under. */
static const char *prog(void)
{
	return program ? program : program_invocation_short_name;
}

long ts_opt_int(const char *flag, const char *arg, long min, long max)
{
	long v;

	if (ts_parse_int(arg, min, max, &v)) {
		fprintf(stderr, "%s: %s: '%s' is not a number between %ld and %ld\n", prog(),
			flag, arg ? arg : "", min, max);
		exit(2);
	}
	return v;
}

double ts_opt_double(const char *flag, const char *arg, double min, double max)
{
	double v;

	if (ts_parse_double(arg, min, max, &v)) {
		fprintf(stderr, "%s: %s: '%s' is not a number between %.15g and %.15g\n",
			prog(), flag, arg ? arg : "", min, max);
		exit(2);
	}
	return v;
}
