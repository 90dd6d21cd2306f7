# SPDX-License-Identifier: Apache-2.0
"""Pipeline parallelism by hand, as a user writes it without a framework: 2 stages x 2
replicas under torchrun (4 ranks; rank r is stage r % 2 of replica r // 2). Stage 0 holds
the embedding and --layers0 blocks, stage 1 (the heavier last stage) --layers1 blocks and
the head; GPipe order over --micro microbatches (every forward, then every backward), the
activations and their gradients sent point to point over NCCL, each stage's gradients
all-reduced with its peer stage of the other replica. From --noisy-from a GEMM neighbour
joins GPU --noisy-rank. Each rank writes its step count to --out.rank<N>.json. It never
imports trainscope."""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import Block, finish, start_noisy, torchrun_rank  # noqa: E402


class Stage0(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.tok, self.pos = nn.Embedding(a.vocab, a.dim), nn.Embedding(a.seq, a.dim)
        self.blocks = nn.ModuleList(Block(a.dim, a.heads) for _ in range(a.layers0))

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return x


class Stage1(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.blocks = nn.ModuleList(Block(a.dim, a.heads) for _ in range(a.layers1))
        self.ln, self.head = nn.LayerNorm(a.dim), nn.Linear(a.dim, a.vocab, bias=False)

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--layers0", type=int, default=3)
    ap.add_argument("--layers1", type=int, default=5)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--micro", type=int, default=4)
    ap.add_argument("--mbatch", type=int, default=4)
    ap.add_argument("--noisy-rank", type=int, default=-1)
    ap.add_argument("--noisy-from", type=int, default=60)
    ap.add_argument("--out", default="")
    a = ap.parse_args()

    rank, world, local = torchrun_rank()
    assert world == 4, "2 stages x 2 replicas: 4 ranks"
    stage, replica = rank % 2, rank // 2
    peer = rank + 1 if stage == 0 else rank - 1
    # every rank makes every group, in the same order
    groups = [dist.new_group([0, 2]), dist.new_group([1, 3])]
    torch.manual_seed(stage)  # a stage's replicas start equal
    model = (Stage0(a) if stage == 0 else Stage1(a)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator(device="cuda").manual_seed(replica)
    shape = (a.mbatch, a.seq, a.dim)
    noisy, steps = None, 0
    for step in range(a.steps):
        if a.noisy_rank >= 0 and step == a.noisy_from and local == 0:
            noisy = start_noisy(a.noisy_rank)
        x = torch.randint(0, a.vocab, (a.micro, a.mbatch, a.seq + 1), device="cuda", generator=g)
        outs, ins = [], []
        for m in range(a.micro):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                if stage == 0:
                    h = model(x[m, :, :-1])
                    dist.send(h.detach().to(torch.bfloat16).contiguous(), peer)
                    outs.append(h)
                else:
                    h = torch.empty(shape, device="cuda", dtype=torch.bfloat16)
                    dist.recv(h, peer)
                    h.requires_grad_()
                    logits = model(h)
                    loss = F.cross_entropy(logits.float().flatten(0, 1),
                                           x[m, :, 1:].flatten()) / a.micro
                    ins.append(h)
                    outs.append(loss)
        for m in range(a.micro):
            if stage == 1:
                outs[m].backward()
                dist.send(ins[m].grad.contiguous(), peer)
            else:
                grad = torch.empty(shape, device="cuda", dtype=torch.bfloat16)
                dist.recv(grad, peer)
                outs[m].backward(grad.to(outs[m].dtype))
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        flat = torch.cat([t.reshape(-1) for t in grads])
        dist.all_reduce(flat, group=groups[stage])
        flat /= 2
        for t, f in zip(grads, torch._utils._unflatten_dense_tensors(flat, grads)):
            t.copy_(f)
        opt.step()
        opt.zero_grad(set_to_none=True)
        steps += 1
    finish(a, rank, world, steps, noisy, stage=stage)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
