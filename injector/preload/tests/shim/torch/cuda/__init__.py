# SPDX-License-Identifier: Apache-2.0
"""TEST DOUBLE of torch.cuda: never initialized (no device here)."""


def is_initialized():
    return False


def current_device():
    raise RuntimeError("no CUDA in the test double")
