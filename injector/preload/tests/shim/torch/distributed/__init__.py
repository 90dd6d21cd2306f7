_world = None


class Backend:
    NCCL = "nccl"


def is_available():
    return True


def init_process_group(backend=None, world_size=1, rank=0):
    global _world
    _world = world_size


def get_world_size():
    return _world


def new_group(ranks=None, backend=None):
    return object()
