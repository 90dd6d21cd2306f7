# SPDX-License-Identifier: Apache-2.0
"""trainscope from Python: step boundaries and regions for programs that want to say
them explicitly. Every function is a no-op when libtrainscope.so is not preloaded."""
from trainscope._shim import step, region, DATALOADER, COMPUTE, CHECKPOINT  # noqa: F401
