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
