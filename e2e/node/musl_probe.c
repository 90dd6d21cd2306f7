// SPDX-License-Identifier: Apache-2.0
/* A program from another libc (musl) in a training pod: the node e2e checks that
 * injection never breaks it. It prints what it sees and exits 0. */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	const char *pre = getenv("LD_PRELOAD");

	printf("musl probe: ran, LD_PRELOAD=%s\n", pre ? pre : "(unset)");
	return 0;
}
