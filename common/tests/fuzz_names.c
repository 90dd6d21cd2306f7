// SPDX-License-Identifier: Apache-2.0
/* make fuzz, target names: any bytes as a name from the wire. Its object name must pass
 * Kubernetes' own rules (DNS-1123 subdomain, label value), its report path must stay in
 * its folder, and its metric label value must hold no raw quote or newline. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_rules.h"
#include "names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[512], out[64], path[1024], label[2048];
	size_t n = size < sizeof(name) - 1 ? size : sizeof(name) - 1;

	memcpy(name, data, n);
	name[n] = 0;
	ts_name_object(out, sizeof(out), name);
	if (!k8s_subdomain(out) || !k8s_label_value(out))
		abort();
	if (!ts_name_report_path(path, sizeof(path), "/r", name, name)) {
		const char *file = path + 3;
		if (strncmp(path, "/r/", 3) || strchr(file, '/') || file[0] == '.')
			abort();
	}
	ts_name_label(label, sizeof(label), name);
	for (const char *c = label; *c; c++)
		if (*c == '\n' || (*c == '"' && (c == label || c[-1] != '\\')))
			abort();
	return 0;
}
