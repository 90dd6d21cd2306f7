// SPDX-License-Identifier: Apache-2.0
/* Command-line options declared once: a table per program, and per group of options
 * that programs share (NATS's), from which the parsing, the variables that set them,
 * --help and the generated reference all come. */
#ifndef TS_OPTS_H
#define TS_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum ts_opt_kind {
	TS_OPT_STR,    /* const char *: the argument itself */
	TS_OPT_INT,    /* int in min..max (common/numparse.c) */
	TS_OPT_SIZE,   /* size_t in min..max */
	TS_OPT_I64,    /* int64_t in min..max */
	TS_OPT_DOUBLE, /* double in min..max */
	TS_OPT_TRUE,   /* bool set true; no argument */
	TS_OPT_FALSE,  /* bool set false; no argument */
	TS_OPT_CALL,   /* call(settings, argument or NULL): the option's own handling */
	TS_OPT_NOTE,   /* no option: help's paragraph among the options */
	TS_OPT_PRINT,  /* call(settings, NULL) prints on stdout; the program then ends, as
			* after --help (--print-metrics) */
};

struct ts_opt {
	const char *name;       /* long name, without "--" */
	char letter;            /* short name; 0: none */
	enum ts_opt_kind kind;
	size_t off;             /* the field in the group's settings (offsetof) */
	double min, max;        /* TS_OPT_INT, _SIZE, _DOUBLE */
	const char *arg;        /* the argument's name in --help; NULL: the option takes none */
	const char *env;        /* a variable that sets it too (the command line wins); NULL */
	const char *help;       /* one paragraph: --help wraps it */
	/* TS_OPT_CALL, _PRINT: 0, or a negative errno with err filled ("not one of ...") */
	int (*call)(void *settings, const char *arg, char *err, size_t n);
};

/* One table and the settings it fills. */
struct ts_opt_group {
	const struct ts_opt *opts;
	size_t n;
	void *settings;
};

#define TS_OPTS_GROUP(table, settings) { (table), sizeof(table) / sizeof((table)[0]), (settings) }

/* ts_opts_parse's flags. */
enum {
	TS_OPTS_STOP = 1, /* options end at the first operand (a command and its own options
			   * follow: trainscope run); else operands may come anywhere */
};

/* Takes the groups' variables, then argv's options (--help, -h and --print-options
 * added): each value checked as its kind and bounds say. Returns the index of argv's
 * first operand (argc when none), 0 after --help, --print-options or a TS_OPT_PRINT
 * printed on stdout, or -EINVAL after saying what was wrong on stderr as
 * "<program>: --name: ..." or "<program>: VARIABLE: ...". */
int ts_opts_parse(const struct ts_opt_group *g, size_t ng, const char *program,
		  const char *head, unsigned flags, int argc, char **argv);

/* --help: head (the program's usage and purpose, as given), then each option's line,
 * its variable, and its help wrapped at 80 columns. */
void ts_opts_help(FILE *f, const char *head, const struct ts_opt_group *g, size_t ng);

/* Whether name is an entry of the comma-separated list (the value of an option such
 * as --exclude-namespaces or --node-taint-causes), blanks around entries ignored. A NULL
 * or empty list, or an empty name, has none. */
bool ts_opt_list_has(const char *list, const char *name);

/* The tables as JSON for the generated reference: [{"name", "letter", "arg", "env",
 * "help"}...]. */
void ts_opts_json(FILE *f, const struct ts_opt_group *g, size_t ng);

#endif
