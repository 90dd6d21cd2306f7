# SPDX-License-Identifier: Apache-2.0
"""TEST DOUBLE of torch.amp.GradScaler: step() skips the optimizer's step when the
gradients overflowed (here: when told to), as AMP does."""


class GradScaler:
    def __init__(self, skip_every=0):
        self.skip_every, self.calls = skip_every, 0

    def step(self, optimizer, *args, **kwargs):
        self.calls += 1
        if self.skip_every and self.calls % self.skip_every == 0:
            return None  # inf/nan found: optimizer.step() not called
        return optimizer.step(*args, **kwargs)
