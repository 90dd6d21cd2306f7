# SPDX-License-Identifier: Apache-2.0
_post_hooks = []


def register_optimizer_step_post_hook(hook):
    _post_hooks.append(hook)


class Optimizer:
    def step(self):
        for hook in list(_post_hooks):
            hook(self, (), {})
