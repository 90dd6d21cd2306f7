// SPDX-License-Identifier: Apache-2.0
/* A user's program with its normal output, built against glibc and, where musl-gcc is
 * installed, against musl: prints a greeting and whether libtrainscope.so is mapped
 * into it. test_preload runs it under LD_PRELOAD=.../lib/$PLATFORM/libtrainscope.so. */
#include <stdio.h>
#include <string.h>

int main(void)
{
	char line[4096];
	int seen = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f))
		seen |= strstr(line, "libtrainscope.so") != NULL;
	if (f)
		fclose(f);
	printf("hello preloaded=%s\n", seen ? "yes" : "no");
	return 0;
}
