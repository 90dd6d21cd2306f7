// SPDX-License-Identifier: Apache-2.0
/* TEST DOUBLE of libopapi.so (Ascend's aclnn operators): see npu_double.h. One operator,
 * aclnnMatmul, in its two entry points; running it launches one kernel on the stream
 * through aclrtLaunchKernel, as the real operators reach the runtime. */
#include <stddef.h>
#include <stdint.h>

int aclrtLaunchKernel(void *fn, uint32_t blocks, const void *args, size_t size, void *stream);

int aclnnMatmulGetWorkspaceSize(const void *a, const void *b, void *out, int8_t math,
				uint64_t *size, void **executor)
{
	(void)a, (void)b, (void)out, (void)math;
	*size = 0;
	*executor = (void *)0x1;
	return 0;
}

int aclnnMatmul(void *workspace, uint64_t size, void *executor, void *stream)
{
	(void)workspace, (void)size, (void)executor;
	return aclrtLaunchKernel(NULL, 1, NULL, 0, stream);
}

/* Where the double's own entry points are: the pointers dlsym handed out are compared. */
void *tsd_opapi_ws_addr(void)
{
	return (void *)aclnnMatmulGetWorkspaceSize;
}

void *tsd_opapi_run_addr(void)
{
	return (void *)aclnnMatmul;
}
