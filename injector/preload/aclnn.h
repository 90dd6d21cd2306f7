// SPDX-License-Identifier: Apache-2.0
/* aclnn operators (libopapi, Ascend): torch_npu runs most operators through them, and
 * finds each by name with dlsym. Every operator has two entry points: aclnnXxx-
 * GetWorkspaceSize, whose arguments are the operator's own, and aclnnXxx, which runs it
 * and has one shape for all: (workspace, workspace size, executor, stream). The second
 * is wrapped as a launch on that stream, so the NPU's compute streams get their device
 * time even where no aclrtLaunchKernel is called. */
#ifndef TS_ACLNN_H
#define TS_ACLNN_H

#include <stdbool.h>
#include "lib.h"

/* True for an aclnn operator's run entry point (cheap prefix test first). */
TS_HIDDEN bool ts_aclnn_wants(const char *name);
/* The wrapper for real, the operator dlsym found; real when the wrappers are all taken. */
TS_HIDDEN void *ts_aclnn_wrap(void *real);

#endif
