// SPDX-License-Identifier: Apache-2.0
/* Numbers from the command line and the environment: one parser, with bounds, for every
 * option and variable of the daemons and the CLI. */
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

/* For option parsing: arg, the value of option flag ("--flush-ms"), as ts_parse_int. On
 * failure prints "<program>: --flush-ms: 'x' is not a number between A and B" on stderr
 * and exits 2, the status of bad options. <program> is the executable's name, or what
 * ts_opt_program said. */
long ts_opt_int(const char *flag, const char *arg, long min, long max);

/* The same for a number that need not be whole (ts_parse_double). */
double ts_opt_double(const char *flag, const char *arg, double min, double max);

/* The name ts_opt_int and ts_opt_double say their complaints under from now on, such as
 * "trainscope report" for a subcommand; NULL: the executable's name again. */
void ts_opt_program(const char *name);

#endif
