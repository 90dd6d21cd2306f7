# SPDX-License-Identifier: Apache-2.0
"""DDP as PyTorch's own tutorial starts it: torch.multiprocessing.spawn, the rank passed
to init_process_group, nothing in the environment but MASTER_ADDR/PORT: the GPT of
train.py on random tokens. From --noisy-from a GEMM neighbour joins GPU --noisy-rank.
Each rank writes its own step count to --out.rank<N>.json. It never imports trainscope."""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import GPT, finish, job_args, start_noisy, truth  # noqa: E402


def worker(rank, world, a):
    dist.init_process_group("nccl", rank=rank, world_size=world)
    torch.cuda.set_device(rank)
    model = DDP(GPT(a.vocab, a.dim, a.layers, a.heads, a.seq).cuda(), device_ids=[rank])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator(device="cuda").manual_seed(rank)
    noisy, steps = None, 0
    for step in range(a.steps):
        if a.noisy_rank >= 0 and step == a.noisy_from and rank == 0:
            noisy = start_noisy(a.noisy_rank)
        if rank == a.sleep_rank and step >= a.sleep_from:
            # a host-side delay in the step (a slow logger, a blocking call in Python)
            if step == a.sleep_from:
                truth("sleep", rank)
            time.sleep(a.sleep_ms / 1000)
        x = torch.randint(0, a.vocab, (a.batch, a.seq + 1), device="cuda", generator=g)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        steps += 1
    finish(a, rank, world, steps, noisy)
    dist.destroy_process_group()


def main():
    ap = job_args(argparse.ArgumentParser(description=__doc__))
    ap.add_argument("--world", type=int, default=torch.cuda.device_count())
    ap.add_argument("--sleep-rank", type=int, default=-1,
                    help="rank that sleeps --sleep-ms in each step from --sleep-from")
    ap.add_argument("--sleep-ms", type=float, default=20)
    ap.add_argument("--sleep-from", type=int, default=100)
    a = ap.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    mp.spawn(worker, args=(a.world, a), nprocs=a.world, join=True)


if __name__ == "__main__":
    main()
