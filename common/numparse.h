// SPDX-License-Identifier: Apache-2.0
/* Numbers from the command line and the environment: one parser, with bounds, for every
 * option and variable of the daemons and the CLI (common/opts.c takes options by it). */
#ifndef TS_NUMPARSE_H
#define TS_NUMPARSE_H

/* s as a whole decimal integer (an optional sign, digits, nothing before or after) in
 * min..max. Returns 0 with *out set; -EINVAL when s is NULL, empty or not such a number;
 * -ERANGE when it is one outside min..max (or outside a long). *out is left as it was on
 * failure. */
int ts_parse_int(const char *s, long min, long max, long *out);

/* s as a whole finite decimal number ("2", "0.5", "1e3"; no inf, nan or hex) in min..max.
 * Returns 0 with *out set, -EINVAL or -ERANGE as ts_parse_int; *out left on failure. */
int ts_parse_double(const char *s, double min, double max, double *out);

#endif
