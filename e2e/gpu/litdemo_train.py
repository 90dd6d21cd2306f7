# SPDX-License-Identifier: Apache-2.0
"""Lightning's own demo model, LightningTransformer (lightning.pytorch.demos: an
nn.Transformer encoder-decoder with its training_step and SGD), trained with DDP by
Lightning's launcher. Its WikiText2 download is replaced by random token pairs (no
network on the GPU machines); the model, step and optimizer are Lightning's code. Small
and launch-bound. From --noisy-from a GEMM neighbour joins GPU --noisy-rank. Each rank
writes trainer.global_step to --out.rank<N>.json. It never imports trainscope."""
import argparse
import json
import os
import sys

import torch

try:
    import lightning as L
    from lightning.pytorch.demos.transformer import LightningTransformer
except ImportError:  # the older package name
    import pytorch_lightning as L
    from pytorch_lightning.demos.transformer import LightningTransformer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import device_counters, job_args, start_noisy  # noqa: E402


class Pairs(torch.utils.data.Dataset):
    """WikiText2's shape: (inputs, targets shifted by one) of --seq tokens."""

    def __init__(self, n, seq, vocab):
        self.n, self.seq, self.vocab = n, seq, vocab

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        t = torch.randint(0, self.vocab, (self.seq + 1,), generator=torch.Generator().manual_seed(i))
        return t[:-1], t[1:]


class Offline(LightningTransformer):
    def prepare_data(self):  # the demo downloads WikiText2 here
        pass


class Neighbour(L.Callback):
    def __init__(self, a):
        self.a, self.noisy = a, None

    def on_train_batch_start(self, trainer, module, batch, i):
        if self.a.noisy_rank >= 0 and trainer.global_step == self.a.noisy_from and \
                trainer.local_rank == 0 and self.noisy is None:
            self.noisy = start_noisy(self.a.noisy_rank)

    def on_train_end(self, trainer, module):
        if self.noisy:
            self.noisy.kill()


def main():
    ap = job_args(argparse.ArgumentParser(description=__doc__))
    ap.add_argument("--devices", type=int, default=torch.cuda.device_count())
    a = ap.parse_args()
    vocab = 33278  # the demo's WikiText2 vocabulary
    data = torch.utils.data.DataLoader(Pairs(a.steps * a.batch * a.devices, 35, vocab),
                                       batch_size=a.batch, num_workers=1)
    trainer = L.Trainer(accelerator="gpu", devices=a.devices, strategy="ddp",
                        max_steps=a.steps, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False,
                        callbacks=[Neighbour(a)])
    trainer.fit(Offline(vocab_size=vocab), data)
    if a.out:
        with open("%s.rank%d.json" % (a.out, trainer.global_rank), "w") as f:
            json.dump({"rank": trainer.global_rank, "world": trainer.world_size,
                       "steps": trainer.global_step, "counters": device_counters()}, f)
    print("rank %d: %d optimizer steps" % (trainer.global_rank, trainer.global_step), flush=True)


if __name__ == "__main__":
    main()
