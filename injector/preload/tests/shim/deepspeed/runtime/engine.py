# SPDX-License-Identifier: Apache-2.0
class DeepSpeedEngine:
    def __init__(self, optimizer, accumulation=1, overflow_every=0):
        self.optimizer, self.accumulation, self.overflow_every = optimizer, accumulation, overflow_every
        self.micro, self.boundaries = 0, 0

    def step(self):
        self.micro += 1
        if self.micro % self.accumulation == 0:
            self._take_model_step(None)

    def _take_model_step(self, lr_kwargs, block_eigenvalue={}):
        self.boundaries += 1
        if self.overflow_every and self.boundaries % self.overflow_every == 0:
            return  # overflow: the optimizer's step skipped
        self.optimizer.step()
