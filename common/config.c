// SPDX-License-Identifier: Apache-2.0
#include "config.h"

#include <jansson.h>
#include "numparse.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_DEPTH 8
#define KEY_MAX 256

struct cfg_ctx {
	const struct ts_cfg_field *fields;
	size_t n;
	void *obj;
	const char *source;
	const struct ts_cfg_opts *opts;
};

static int cfg_fail(const struct cfg_ctx *c, size_t line, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int cfg_fail(const struct cfg_ctx *c, size_t line, const char *key, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (c->opts && c->opts->err) {
		if (key)
			snprintf(c->opts->err, c->opts->errlen, "%s:%zu: key '%s': %s", c->source, line,
				 key, why);
		else
			snprintf(c->opts->err, c->opts->errlen, "%s:%zu: %s", c->source, line, why);
	}
	return -EINVAL;
}

static const struct ts_cfg_field *cfg_find(const struct cfg_ctx *c, const char *key)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->fields[i].key, key) == 0)
			return &c->fields[i];
	return NULL;
}

static int parse_bool(const char *v, bool *out)
{
	static const char *yes[] = { "true", "yes", "on", "1" }, *no[] = { "false", "no", "off", "0" };

	for (int i = 0; i < 4; i++) {
		if (strcasecmp(v, yes[i]) == 0)
			return *out = true, 0;
		if (strcasecmp(v, no[i]) == 0)
			return *out = false, 0;
	}
	return -EINVAL;
}

/* Stores a textual value into the field; the message says why it was refused. */
static int cfg_set(const struct ts_cfg_field *f, void *obj, const char *v, char *why, size_t wl)
{
	char *dst = (char *)obj + f->offset;
	bool bounded = f->min <= f->max;
	double d;
	long l;
	bool b;

	switch (f->type) {
	case TS_CFG_INT:
		if (ts_parse_int(v, LONG_MIN, LONG_MAX, &l)) {
			snprintf(why, wl, "'%s' is not an integer", v);
			return -EINVAL;
		}
		if (bounded && (l < f->min || l > f->max)) {
			snprintf(why, wl, "%ld is outside [%g, %g]", l, f->min, f->max);
			return -EINVAL;
		}
		*(int *)dst = (int)l;
		return 0;
	case TS_CFG_DOUBLE:
		if (ts_parse_double(v, -HUGE_VAL, HUGE_VAL, &d)) {
			snprintf(why, wl, "'%s' is not a number", v);
			return -EINVAL;
		}
		if (bounded && (d < f->min || d > f->max)) {
			snprintf(why, wl, "%g is outside [%g, %g]", d, f->min, f->max);
			return -EINVAL;
		}
		*(double *)dst = d;
		return 0;
	case TS_CFG_BOOL:
		if (parse_bool(v, &b)) {
			snprintf(why, wl, "'%s' is not a boolean (true/false)", v);
			return -EINVAL;
		}
		*(bool *)dst = b;
		return 0;
	case TS_CFG_STRING:
		if (strlen(v) >= f->size) {
			snprintf(why, wl, "value longer than %zu characters", f->size - 1);
			return -EINVAL;
		}
		strcpy(dst, v);
		return 0;
	}
	snprintf(why, wl, "internal: bad field type");
	return -EINVAL;
}

static int cfg_apply(const struct cfg_ctx *c, size_t line, const char *key, const char *val)
{
	const struct ts_cfg_field *f = cfg_find(c, key);
	char why[160];

	if (!f)
		return cfg_fail(c, line, key, "unknown key");
	if (cfg_set(f, c->obj, val, why, sizeof(why)))
		return cfg_fail(c, line, key, "%s", why);
	return 0;
}

/* "a.b.leaf" into out[KEY_MAX], cut short when longer (then it names no field). */
static void key_join(char *out, char stack[][KEY_MAX], int depth, const char *leaf)
{
	size_t n = 0;

	out[0] = 0;
	for (int i = 0; i <= depth && n < KEY_MAX - 1; i++)
		n += (size_t)snprintf(out + n, KEY_MAX - n, "%s%s", i ? "." : "",
				      i < depth ? stack[i] : leaf);
}

/* Walks the event stream: mappings nest keys, scalars under a key are values. */
static int cfg_walk(struct cfg_ctx *c, yaml_parser_t *p)
{
	char stack[MAX_DEPTH][KEY_MAX], key[KEY_MAX], full[KEY_MAX];
	bool have_key[MAX_DEPTH + 1] = { false };
	int depth = -1, err = 0;
	yaml_event_t ev;

	for (;;) {
		if (!yaml_parser_parse(p, &ev))
			return cfg_fail(c, p->problem_mark.line + 1, NULL, "YAML syntax: %s",
					p->problem ? p->problem : "error");
		size_t line = ev.start_mark.line + 1;
		switch (ev.type) {
		case YAML_MAPPING_START_EVENT:
			if (depth >= 0 && !have_key[depth]) {
				err = cfg_fail(c, line, NULL, "a mapping cannot be a key");
			} else if (depth + 1 >= MAX_DEPTH) {
				err = cfg_fail(c, line, NULL, "nesting deeper than %d", MAX_DEPTH);
			} else {
				if (depth >= 0) {
					strcpy(stack[depth], key);
					have_key[depth] = false;
				}
				depth++;
				have_key[depth] = false;
			}
			break;
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_SEQUENCE_START_EVENT:
			if (depth < 0) {
				err = cfg_fail(c, line, NULL, "expected a mapping at top level");
				break;
			}
			key_join(full, stack, depth, have_key[depth] ? key : "?");
			err = cfg_fail(c, line, full, "lists are not supported here");
			break;
		case YAML_ALIAS_EVENT:
			err = cfg_fail(c, line, NULL, "aliases are not supported");
			break;
		case YAML_SCALAR_EVENT:
			if (depth < 0) {
				/* an empty document or a bare scalar */
				if (ev.data.scalar.length)
					err = cfg_fail(c, line, NULL, "expected a mapping at top level");
			} else if (!have_key[depth]) {
				snprintf(key, sizeof(key), "%s", (char *)ev.data.scalar.value);
				have_key[depth] = true;
			} else {
				key_join(full, stack, depth, key);
				err = cfg_apply(c, line, full, (char *)ev.data.scalar.value);
				have_key[depth] = false;
			}
			break;
		default:
			break;
		}
		bool done = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
		if (err || done)
			return err;
	}
}

static int cfg_env(struct cfg_ctx *c)
{
	const char *prefix = c->opts ? c->opts->env_prefix : NULL;
	char name[KEY_MAX + 64];

	if (!prefix)
		return 0;
	for (size_t i = 0; i < c->n; i++) {
		size_t k = (size_t)snprintf(name, sizeof(name), "%s", prefix);
		for (const char *s = c->fields[i].key; *s && k < sizeof(name) - 1; s++)
			name[k++] = *s == '.' ? '_' : (char)toupper((unsigned char)*s);
		name[k] = 0;
		const char *v = getenv(name);
		char why[160];
		if (v && cfg_set(&c->fields[i], c->obj, v, why, sizeof(why))) {
			if (c->opts->err)
				snprintf(c->opts->err, c->opts->errlen, "environment %s: %s", name, why);
			return -EINVAL;
		}
	}
	return 0;
}

static int cfg_run(struct cfg_ctx *c, yaml_parser_t *p)
{
	int err = cfg_walk(c, p);

	yaml_parser_delete(p);
	return err ? err : cfg_env(c);
}

int ts_cfg_load_text(const char *text, const struct ts_cfg_field *fields, size_t n, void *obj,
		     const struct ts_cfg_opts *opts)
{
	struct cfg_ctx c = { fields, n, obj, "<config>", opts };
	yaml_parser_t p;

	if (!text)
		return cfg_env(&c);
	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, (const unsigned char *)text, strlen(text));
	return cfg_run(&c, &p);
}

int ts_cfg_load_file(const char *path, const struct ts_cfg_field *fields, size_t n, void *obj,
		     const struct ts_cfg_opts *opts)
{
	struct cfg_ctx c = { fields, n, obj, path, opts };
	yaml_parser_t p;
	FILE *f;
	int err;

	if (!path)
		return cfg_env(&c);
	f = fopen(path, "r");
	if (!f) {
		err = -errno;
		if (opts && opts->err)
			snprintf(opts->err, opts->errlen, "%s: %s", path, strerror(errno));
		return err;
	}
	yaml_parser_initialize(&p);
	yaml_parser_set_input_file(&p, f);
	err = cfg_run(&c, &p);
	fclose(f);
	return err;
}

void ts_cfg_dump(const struct ts_cfg_field *fields, size_t n, const void *obj, void *file)
{
	FILE *out = file;

	for (size_t i = 0; i < n; i++) {
		const char *p = (const char *)obj + fields[i].offset;
		fprintf(out, "%s: ", fields[i].key);
		switch (fields[i].type) {
		case TS_CFG_INT: fprintf(out, "%d", *(const int *)p); break;
		case TS_CFG_DOUBLE: fprintf(out, "%g", *(const double *)p); break;
		case TS_CFG_BOOL: fprintf(out, "%s", *(const bool *)p ? "true" : "false"); break;
		case TS_CFG_STRING: fprintf(out, "\"%s\"", p); break;
		}
		if (fields[i].help)
			fprintf(out, "   # %s", fields[i].help);
		fputc('\n', out);
	}
}

/* The schema of one field's value. */
static json_t *field_schema(const struct ts_cfg_field *f)
{
	static const char *const types[] = { "integer", "number", "boolean", "string" };
	json_t *o = json_pack("{s:s}", "type", types[f->type]);

	if (o && f->help)
		json_object_set_new(o, "description", json_string(f->help));
	if (o && f->min <= f->max && (f->type == TS_CFG_INT || f->type == TS_CFG_DOUBLE)) {
		bool i = f->type == TS_CFG_INT;
		json_object_set_new(o, "minimum", i ? json_integer((json_int_t)f->min) : json_real(f->min));
		json_object_set_new(o, "maximum", i ? json_integer((json_int_t)f->max) : json_real(f->max));
	}
	return o;
}

/* An object schema refusing unknown keys. */
static json_t *object_schema(void)
{
	return json_pack("{s:s, s:b, s:{}}", "type", "object", "additionalProperties", 0,
			 "properties");
}

/* Puts value at the dotted path key inside schema obj (nested objects made as needed). */
static int put_nested(json_t *obj, const char *key, json_t *value)
{
	const char *dot = strchr(key, '.');
	json_t *props = json_object_get(obj, "properties");

	if (!dot)
		return json_object_set(props, key, value);
	char part[128];
	snprintf(part, sizeof(part), "%.*s", (int)(dot - key), key);
	json_t *sub = json_object_get(props, part);
	if (!sub && json_object_set_new(props, part, sub = object_schema()))
		return -1;
	return put_nested(sub, dot + 1, value);
}

int ts_cfg_schema(const struct ts_cfg_field *fields, size_t n, void *file)
{
	json_t *root = object_schema();
	int err = !root;

	for (size_t i = 0; i < n && !err; i++) {
		json_t *v = field_schema(&fields[i]);
		err = !v || put_nested(root, fields[i].key, v) ||
		      (strchr(fields[i].key, '.') &&
		       json_object_set(json_object_get(root, "properties"), fields[i].key, v));
		json_decref(v);
	}
	if (!err)
		err = json_dumpf(root, file, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(12));
	json_decref(root);
	return err ? -ENOMEM : 0;
}
