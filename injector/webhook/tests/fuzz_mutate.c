// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: any bytes as an AdmissionReview. The webhook must answer, never crash,
 * and always produce a JSON AdmissionReview. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "injector/webhook/mutate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct ts_inject_opts o[2] = {
		{ .image = "img", .nats_url = "nats://n:4222" },
		{ .image = "img", .nats_url = "nats://n:4222", .nats_audience = "nats",
		  .namespace_opt_in = true },
	};
	json_error_t err;
	char *out = NULL;

	for (int i = 0; i < 2; i++) {
		int status = ts_mutate((const char *)data, size, &o[i], &out);
		json_t *r = out ? json_loads(out, 0, &err) : NULL;
		if ((status != 200 && status != 400) || !json_is_object(json_object_get(r, "response")))
			abort();
		json_decref(r);
		free(out);
	}
	return 0;
}
