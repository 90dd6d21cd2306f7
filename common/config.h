// SPDX-License-Identifier: Apache-2.0
/* YAML configuration bound to a C struct through a field table, with environment
 * overrides. Keys are dotted paths of nested mappings ("space.eps"). */
#ifndef TS_CONFIG_H
#define TS_CONFIG_H

#include <stddef.h>

enum ts_cfg_type { TS_CFG_INT, TS_CFG_DOUBLE, TS_CFG_BOOL, TS_CFG_STRING };

struct ts_cfg_field {
	const char *key;
	enum ts_cfg_type type;
	size_t offset;     /* offsetof() into the bound struct */
	size_t size;       /* buffer size for TS_CFG_STRING */
	double min, max;   /* inclusive bounds for numbers; min > max: unbounded */
	const char *help;
};

struct ts_cfg_opts {
	const char *env_prefix; /* e.g. "TRAINSCOPE_ANALYZER_": KEY = key upper-cased, '.' -> '_' */
	char *err;              /* receives "file:line: key 'k': reason" */
	size_t errlen;
};

/* Applies the YAML document (file path or in-memory text; either may be NULL) and then
 * environment overrides to obj, whose fields hold the defaults. Returns 0 or -EINVAL
 * (bad key, value or syntax), -errno when the file cannot be read. */
int ts_cfg_load_file(const char *path, const struct ts_cfg_field *fields, size_t n, void *obj,
		     const struct ts_cfg_opts *opts);
int ts_cfg_load_text(const char *text, const struct ts_cfg_field *fields, size_t n, void *obj,
		     const struct ts_cfg_opts *opts);

/* Writes the current values as YAML (for --print-config). */
void ts_cfg_dump(const struct ts_cfg_field *fields, size_t n, const void *obj, void *file);
/* Writes a JSON Schema of what the loader takes (a chart's values.schema.json): each key
 * nested (space: {eps: 1}) and dotted (space.eps: 1), with its type, bounds and help;
 * unknown keys refused. Returns 0 or -ENOMEM. */
int ts_cfg_schema(const struct ts_cfg_field *fields, size_t n, void *file);

#endif
