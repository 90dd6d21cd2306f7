# SPDX-License-Identifier: Apache-2.0
"""torchvision's ViT-B/16 (its own model code, no weights) trained by Lightning Fabric
(`Fabric(strategy="ddp", precision="bf16-mixed")`, which starts the other ranks itself
when run as a plain script) with fabric.setup, fabric.backward and AdamW: random
224x224 images that 4 DataLoader workers make, label-smoothed cross entropy. From
--noisy-from a GEMM neighbour joins GPU --noisy-rank. Each rank writes its own step
count to --out.rank<N>.json. It never imports trainscope."""
import argparse
import os
import sys

import torch
import torch.nn.functional as F
import torchvision

try:
    import lightning as L
except ImportError:  # the older package name
    import lightning_fabric as L

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import finish, start_noisy  # noqa: E402
from vision_train import Images  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--devices", type=int, default=torch.cuda.device_count())
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--images", type=int, default=64, help="images per rank and step")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--noisy-rank", type=int, default=-1)
    ap.add_argument("--noisy-from", type=int, default=60)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    fabric = L.Fabric(accelerator="cuda", devices=a.devices, strategy="ddp",
                      precision="bf16-mixed")
    fabric.launch()
    fabric.seed_everything(0)
    model = torchvision.models.vit_b_16()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.05)
    model, opt = fabric.setup(model, opt)
    data = Images(a.steps * a.images * fabric.world_size)
    loader = fabric.setup_dataloaders(torch.utils.data.DataLoader(
        data, batch_size=a.images, num_workers=a.workers, drop_last=True,
        persistent_workers=True))
    model.train()
    noisy, steps = None, 0
    for x, y in loader:
        if a.noisy_rank >= 0 and steps == a.noisy_from and fabric.local_rank == 0:
            noisy = start_noisy(a.noisy_rank)
        loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        fabric.backward(loss)
        opt.step()
        steps += 1
        if steps >= a.steps:
            break
    finish(a, fabric.global_rank, fabric.world_size, steps, noisy)


if __name__ == "__main__":
    main()
