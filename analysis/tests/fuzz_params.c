// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: any bytes as the analyzer's YAML configuration (ts_params_load over
 * common/config.c), as NUL-terminated text. It must load or refuse with a message, never
 * crash; what loads must hold a valid detect type and print (--print-config). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/detect/params.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	struct ts_params p;
	char err[256], *text = malloc(size + 1);
	int rc;

	if (!text)
		abort();
	if (!devnull && !(devnull = fopen("/dev/null", "w")))
		abort();
	memcpy(text, data, size);
	text[size] = 0;
	memset(err, 0x55, sizeof(err)); /* not a string: a refusal must write one */
	ts_params_defaults(&p);
	rc = ts_params_load(&p, NULL, text, err, sizeof(err));
	if (rc) {
		if (rc >= 0 || !memchr(err, 0, sizeof(err)) || !err[0])
			abort();
	} else {
		if (p.time.detect != TS_BOUND_UPPER && p.time.detect != TS_BOUND_LOWER &&
		    p.time.detect != TS_BOUND_BOTH)
			abort();
		if (p.time.min_update_window_size > p.time.training_window_size)
			abort();
		ts_params_print(&p, devnull);
	}
	free(text);
	return 0;
}
