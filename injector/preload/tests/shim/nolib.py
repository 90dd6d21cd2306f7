# SPDX-License-Identifier: Apache-2.0
"""The shim on PYTHONPATH without libtrainscope.so in the process (a musl Python skips
the glibc preload): the explicit API and a torch loop do nothing and say nothing."""
import sys

import torch
import trainscope

trainscope.step()
with trainscope.region(trainscope.COMPUTE):
    pass
opt = torch.optim.Optimizer()
opt.step()
print("shim loaded=%s hooks=%d" % ("trainscope._shim" in sys.modules,
                                   len(torch.optim.optimizer._post_hooks)))
