# SPDX-License-Identifier: Apache-2.0
"""TEST DOUBLE of torch.distributed: the default group's rank and size as
init_process_group sets them (env:// when not given, as torch reads RANK/WORLD_SIZE)."""
import os

_world = None
_rank = None


class Backend:
    NCCL = "nccl"
    GLOO = "gloo"


def is_available():
    return True


def is_initialized():
    return _world is not None


def init_process_group(backend=None, init_method=None, world_size=-1, rank=-1, **kw):
    global _world, _rank
    _world = world_size if world_size >= 1 else int(os.environ["WORLD_SIZE"])
    _rank = rank if rank >= 0 else int(os.environ["RANK"])


def get_world_size():
    return _world


def get_rank():
    return _rank


def new_group(ranks=None, backend=None):
    return object()
