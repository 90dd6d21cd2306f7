// SPDX-License-Identifier: Apache-2.0
/* Options from their tables (opts.h): the variables first, then getopt_long over a
 * struct option array made from the tables, each value checked by its kind. */
#include "opts.h"
#include "numparse.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HELP_COL 27
#define HELP_WIDTH 80
#define LONG_ONLY 0x1000 /* getopt_long's code of option i of group k: LONG_ONLY + k * 256 + i */
#define PRINT_OPTIONS (LONG_ONLY - 1)

static bool takes_arg(const struct ts_opt *o)
{
	return o->kind != TS_OPT_TRUE && o->kind != TS_OPT_FALSE && o->kind != TS_OPT_PRINT &&
	       o->arg;
}

/* A variable's value for a flag: 1/true/yes sets it, 0/false/no the opposite. */
static int flag_value(const char *v, bool *on)
{
	static const char *const yes[] = { "1", "true", "yes" }, *const no[] = { "0", "false", "no" };

	for (int i = 0; i < 3; i++) {
		if (!strcmp(v, yes[i]))
			return *on = true, 0;
		if (!strcmp(v, no[i]))
			return *on = false, 0;
	}
	return -EINVAL;
}

/* Says v is not a number of o's kind and bounds; returns rc. */
static int not_a_number(const struct ts_opt *o, const char *v, char *err, size_t n, int rc)
{
	if (o->kind == TS_OPT_DOUBLE)
		snprintf(err, n, "'%s' is not a number from %g to %g", v, o->min, o->max);
	else
		snprintf(err, n, "'%s' is not a whole number from %.0f to %.0f", v, o->min, o->max);
	return rc;
}

/* Option o of settings s given v (NULL for a flag from the command line). */
static int apply(const struct ts_opt *o, void *s, const char *v, char *err, size_t n)
{
	char *p = (char *)s + o->off;
	long l;
	double d;
	bool on = true;
	int rc = 0;

	switch (o->kind) {
	case TS_OPT_STR: *(const char **)p = v; return 0;
	case TS_OPT_INT:
	case TS_OPT_SIZE:
	case TS_OPT_I64:
		if ((rc = ts_parse_int(v, (long)o->min, (long)o->max, &l)))
			break;
		if (o->kind == TS_OPT_INT)
			*(int *)p = (int)l;
		else if (o->kind == TS_OPT_SIZE)
			*(size_t *)p = (size_t)l;
		else
			*(int64_t *)p = (int64_t)l;
		return 0;
	case TS_OPT_DOUBLE:
		if ((rc = ts_parse_double(v, o->min, o->max, &d)))
			break;
		*(double *)p = d;
		return 0;
	case TS_OPT_TRUE:
	case TS_OPT_FALSE:
		if (v && flag_value(v, &on)) {
			snprintf(err, n, "'%s' is not 1, true, yes, 0, false or no", v);
			return -EINVAL;
		}
		*(bool *)p = o->kind == TS_OPT_TRUE ? on : !on;
		return 0;
	case TS_OPT_CALL:
	case TS_OPT_PRINT: return o->call(s, v, err, n);
	case TS_OPT_NOTE: return 0;
	}
	return not_a_number(o, v, err, n, rc);
}

/* The groups' variables into their settings: 0, or -EINVAL with err saying which variable
 * is wrong and why (the variables after it still taken). */
static int from_env(const struct ts_opt_group *g, size_t ng, char *err, size_t n)
{
	char why[256];
	int rc = 0;

	for (size_t k = 0; k < ng; k++)
		for (size_t i = 0; i < g[k].n; i++) {
			const struct ts_opt *o = &g[k].opts[i];
			const char *v = o->env ? getenv(o->env) : NULL;
			if (!v || !*v || !apply(o, g[k].settings, v, why, sizeof(why)) || rc)
				continue;
			snprintf(err, n, "%s: %s", o->env, why);
			rc = -EINVAL;
		}
	return rc;
}

/* The struct option array and short options string of the tables; NULL without memory. */
static struct option *getopt_table(const struct ts_opt_group *g, size_t ng, char *shorts,
				   size_t cap)
{
	size_t total = 3, at = 0, s = 0;

	for (size_t k = 0; k < ng; k++)
		total += g[k].n;
	struct option *lo = calloc(total, sizeof(*lo));
	if (!lo)
		return NULL;
	for (size_t k = 0; k < ng; k++)
		for (size_t i = 0; i < g[k].n; i++) {
			const struct ts_opt *o = &g[k].opts[i];
			if (o->kind == TS_OPT_NOTE)
				continue;
			int code = o->letter ? o->letter : LONG_ONLY + (int)(k * 256 + i);
			lo[at++] = (struct option){ o->name, takes_arg(o) ? required_argument
									  : no_argument, NULL, code };
			if (o->letter && s + 3 < cap) {
				shorts[s++] = o->letter;
				if (takes_arg(o))
					shorts[s++] = ':';
			}
		}
	lo[at++] = (struct option){ "print-options", no_argument, NULL, PRINT_OPTIONS };
	lo[at] = (struct option){ "help", no_argument, NULL, 'h' };
	shorts[s++] = 'h';
	shorts[s] = 0;
	return lo;
}

/* The entry getopt's code stands for; NULL for none. */
static const struct ts_opt *entry(const struct ts_opt_group *g, size_t ng, int code, size_t *k)
{
	if (code >= LONG_ONLY) {
		*k = (size_t)(code - LONG_ONLY) / 256;
		size_t i = (size_t)(code - LONG_ONLY) % 256;
		return *k < ng && i < g[*k].n ? &g[*k].opts[i] : NULL;
	}
	for (*k = 0; *k < ng; (*k)++)
		for (size_t i = 0; i < g[*k].n; i++)
			if (g[*k].opts[i].letter == code && g[*k].opts[i].kind != TS_OPT_NOTE)
				return &g[*k].opts[i];
	return NULL;
}

/* getopt_long's answer ch: 1 after --help, --print-options or a TS_OPT_PRINT, 0 for an option
 * taken, -EINVAL after saying what was wrong. */
static int take(const struct ts_opt_group *g, size_t ng, const char *program, const char *head,
		int ch, size_t *k)
{
	const struct ts_opt *o = ch == 'h' || ch == PRINT_OPTIONS ? NULL : entry(g, ng, ch, k);
	char err[256];

	if (ch == 'h' || ch == PRINT_OPTIONS) {
		if (ch == 'h')
			ts_opts_help(stdout, head, g, ng);
		else
			ts_opts_json(stdout, g, ng);
		return 1;
	}
	if (!o) {
		fprintf(stderr, "Try '%s --help'.\n", program);
		return -EINVAL;
	}
	if (apply(o, g[*k].settings, takes_arg(o) ? optarg : NULL, err, sizeof(err))) {
		fprintf(stderr, "%s: --%s: %s\n", program, o->name, err);
		return -EINVAL;
	}
	return o->kind == TS_OPT_PRINT;
}

int ts_opts_parse(const struct ts_opt_group *g, size_t ng, const char *program,
		  const char *head, unsigned flags, int argc, char **argv)
{
	char shorts[128], env_err[320];
	/* a bad variable is said after the command line: --help still answers */
	int env_rc = from_env(g, ng, env_err, sizeof(env_err)), ch, rc = 0;
	struct option *lo;
	size_t k;

	shorts[0] = '+';
	if (!(lo = getopt_table(g, ng, shorts + !!(flags & TS_OPTS_STOP), sizeof(shorts) - 1))) {
		fprintf(stderr, "%s: out of memory\n", program);
		return -ENOMEM;
	}
	optind = 0; /* GNU getopt: 0 starts it afresh (a program may parse twice) */
	while (!rc && (ch = getopt_long(argc, argv, shorts, lo, NULL)) != -1)
		rc = take(g, ng, program, head, ch, &k);
	free(lo);
	if (!rc && env_rc) {
		fprintf(stderr, "%s: %s\n", program, env_err);
		rc = env_rc;
	}
	return rc ? (rc > 0 ? 0 : rc) : optind;
}

/* text from column col to HELP_WIDTH, broken at spaces and at its own newlines; the
 * first line goes where the cursor is (at column col). */
static void wrap(FILE *f, const char *text, int col)
{
	int at = col;

	while (*text) {
		size_t word = strcspn(text, " \n");
		if (at > col && at + 1 + (int)word > HELP_WIDTH)
			fprintf(f, "\n%*s", col, ""), at = col;
		else if (at > col)
			fputc(' ', f), at++;
		fprintf(f, "%.*s", (int)word, text);
		at += (int)word;
		text += word;
		if (*text == '\n')
			fprintf(f, "\n%*s", col, ""), at = col;
		if (*text)
			text++;
	}
	fputc('\n', f);
}

static void help_line(FILE *f, const struct ts_opt *o)
{
	char lead[96], env[160] = "";
	int len;

	if (o->kind == TS_OPT_NOTE) {
		const char *h = o->help;
		for (; *h == '\n'; h++) /* a paragraph apart */
			fputc('\n', f);
		fputs("  ", f);
		wrap(f, h, 2);
		return;
	}
	len = snprintf(lead, sizeof(lead), "  %c%c%c --%s%s%s", o->letter ? '-' : ' ',
		       o->letter ? o->letter : ' ', o->letter ? ',' : ' ', o->name,
		       takes_arg(o) ? " " : "", takes_arg(o) ? o->arg : "");
	if (o->env)
		snprintf(env, sizeof(env), " (%s)", o->env);
	fputs(lead, f);
	if (len + 2 > HELP_COL)
		fprintf(f, "\n%*s", HELP_COL, "");
	else
		fprintf(f, "%*s", HELP_COL - len, "");
	char *text = malloc(strlen(o->help) + sizeof(env));
	if (!text) {
		wrap(f, o->help, HELP_COL);
		return;
	}
	strcat(strcpy(text, o->help), env);
	wrap(f, text, HELP_COL);
	free(text);
}

void ts_opts_help(FILE *f, const char *head, const struct ts_opt_group *g, size_t ng)
{
	fputs(head, f);
	for (size_t k = 0; k < ng; k++)
		for (size_t i = 0; i < g[k].n; i++)
			help_line(f, &g[k].opts[i]);
	fputs("      --print-options      these options as JSON (the generated reference's)\n"
	      "  -h, --help               this text\n", f);
}

void ts_opts_json(FILE *f, const struct ts_opt_group *g, size_t ng)
{
	json_t *all = json_array();

	for (size_t k = 0; k < ng && all; k++)
		for (size_t i = 0; i < g[k].n; i++) {
			const struct ts_opt *o = &g[k].opts[i];
			char letter[2] = { o->letter, 0 };
			if (o->kind == TS_OPT_NOTE)
				continue;
			json_array_append_new(all, json_pack("{s:s, s:s?, s:s?, s:s?, s:s}", "name",
							     o->name, "letter", o->letter ? letter : NULL,
							     "arg", takes_arg(o) ? o->arg : NULL, "env",
							     o->env, "help", o->help));
		}
	if (all)
		json_dumpf(all, f, JSON_INDENT(1));
	fputc('\n', f);
	json_decref(all);
}

bool ts_opt_list_has(const char *list, const char *name)
{
	size_t n = strlen(name);

	if (!n)
		return false;
	for (const char *p = list; p && *p; p += strcspn(p, ","), p += *p == ',') {
		p += strspn(p, " \t");
		if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == ' ' || p[n] == '\t' || !p[n]))
			return true;
	}
	return false;
}
