# SPDX-License-Identifier: Apache-2.0
"""A training loop over the test double of torch (injector/preload/tests/shim): a data
pass before the process group (a first record, as a CUDA call would be, before any rank
is known), init_process_group the way the launcher's users write it, then --steps
optimizer steps of --step-ms each (--slow-rank sleeps --slow-ms more in its data loader
from the middle on; --teardown-ms after the last, as a process group's teardown takes).
Imported by launch.py's spawning launchers; run alone by the
others."""
import argparse
import os
import time


def parse(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--step-ms", type=float, default=20)
    ap.add_argument("--slow-rank", type=int, default=-1)
    ap.add_argument("--slow-ms", type=float, default=0)
    ap.add_argument("--teardown-ms", type=float, default=0,
                    help="time the process takes to exit after its last step")
    ap.add_argument("--init", choices=["none", "env", "args"], default="none",
                    help="init_process_group: not called, env:// (RANK and WORLD_SIZE from "
                         "the environment), or with rank= and world_size=")
    return ap.parse_args(argv)


def train(rank, world, args):
    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader
    for _ in DataLoader(1):  # the first record: the ring is made before the rank is known
        pass
    if args.init == "env":
        dist.init_process_group("gloo")
    elif args.init == "args":
        dist.init_process_group("gloo", rank=rank, world_size=world)
    opt = torch.optim.Optimizer()
    loader = iter(DataLoader(args.steps))
    for i in range(args.steps):
        t0 = time.monotonic()
        next(loader)
        if rank == args.slow_rank and i >= args.steps // 2:
            time.sleep(args.slow_ms / 1e3)
        left = args.step_ms / 1e3 - (time.monotonic() - t0)
        if left > 0:
            time.sleep(left)
        opt.step()
    print("rank %d of %d: %d steps" % (rank, world, args.steps), flush=True)
    time.sleep(args.teardown_ms / 1e3)


def spawned(index, world, argv):
    """mp.spawn's entry: the rank is the index it passes."""
    train(index, world, parse(argv))


def own_rank():
    """The rank and world as the program works them out: what its launcher told it
    (TRAIN_RANK/TRAIN_WORLD here), or Lightning's way, node_rank * processes per node +
    local_rank, from the variables its launcher sets."""
    if "TRAIN_RANK" in os.environ:
        return int(os.environ["TRAIN_RANK"]), int(os.environ["TRAIN_WORLD"])
    world = int(os.environ["WORLD_SIZE"])
    return int(os.environ.get("NODE_RANK", 0)) * world + int(os.environ["LOCAL_RANK"]), world


if __name__ == "__main__":
    train(*own_rank(), parse())
