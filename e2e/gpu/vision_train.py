# SPDX-License-Identifier: Apache-2.0
"""torchvision's ResNet-50 (its own model code, no weights) under DDP, started by
torchrun: channels-last bf16 convolutions, the kind of job cuDNN runs rather than cuBLAS,
on random 224x224 images that DataLoader workers decode and normalise on the CPU, as an
image pipeline does. From --noisy-from a GEMM neighbour joins GPU --noisy-rank. Each
rank writes its own step count to --out.rank<N>.json. It never imports trainscope."""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
import torchvision
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import finish, job_args, start_noisy, torchrun_rank  # noqa: E402


class Images(torch.utils.data.Dataset):
    """n random uint8 images and labels, the same for every run, made float and
    normalised in the worker (what a decode and transform pipeline hands on)."""

    def __init__(self, n, size=224):
        self.n, self.size = n, size
        self.mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
        self.std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = torch.randint(0, 256, (3, self.size, self.size), dtype=torch.uint8, generator=g)
        return (img.float() / 255 - self.mean) / self.std, i % 1000


def main():
    ap = job_args(argparse.ArgumentParser(description=__doc__))
    ap.add_argument("--images", type=int, default=64, help="images per rank and step")
    ap.add_argument("--workers", type=int, default=4)
    a = ap.parse_args()
    rank, world, local = torchrun_rank()
    torch.manual_seed(0)
    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    model = DDP(model, device_ids=[local])
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    data = Images(a.steps * a.images * world)
    sampler = torch.utils.data.distributed.DistributedSampler(data, shuffle=False)
    loader = torch.utils.data.DataLoader(data, batch_size=a.images, sampler=sampler,
                                         num_workers=a.workers, pin_memory=True,
                                         drop_last=True, persistent_workers=True)
    noisy, steps = None, 0
    for x, y in loader:
        if a.noisy_rank >= 0 and steps == a.noisy_from and local == 0:
            noisy = start_noisy(a.noisy_rank)
        x = x.cuda(non_blocking=True).to(memory_format=torch.channels_last)
        y = y.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        steps += 1
        if steps >= a.steps:
            break
    finish(a, rank, world, steps, noisy)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
