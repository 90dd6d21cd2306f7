# SPDX-License-Identifier: Apache-2.0
"""Steps from TRAINSCOPE_STEP_FUNC=workmod@@train_step while the loop also steps an
optimizer through AMP's GradScaler: only the function's calls are steps."""
import torch
import workmod

opt = torch.optim.Optimizer()
scaler = torch.amp.GradScaler(skip_every=2)
for _ in range(3):
    workmod.train_step()
    scaler.step(opt)
    scaler.step(opt)
print(workmod.calls)
