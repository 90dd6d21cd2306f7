# SPDX-License-Identifier: Apache-2.0
"""HuggingFace's BERT (transformers' BertForMaskedLM, base size, from its config, no
weights) trained by a hand-written loop in Accelerate's own idiom (Accelerator.prepare,
accelerator.accumulate, accelerator.backward, AdamW and a linear schedule), started by
`accelerate launch`: masked-token batches of random tokens, 15 % masked, built in 2
DataLoader workers. From --noisy-from a GEMM neighbour joins GPU --noisy-rank. Each
rank writes its own optimizer step count to --out.rank<N>.json. It never imports
trainscope."""
import argparse
import os
import sys

import torch
from accelerate import Accelerator
from transformers import BertConfig, BertForMaskedLM, get_linear_schedule_with_warmup

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import Tokens, finish, start_noisy  # noqa: E402


class Masked(Tokens):
    """n sequences of seq random tokens with 15 % of them masked, as a masked-LM collator
    hands them on: input_ids with [MASK] (103), labels -100 where not masked."""

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(1000, self.vocab, (self.seq,), generator=g)
        mask = torch.rand(self.seq, generator=g) < 0.15
        labels = torch.where(mask, ids, torch.full_like(ids, -100))
        return {"input_ids": torch.where(mask, torch.full_like(ids, 103), ids),
                "attention_mask": torch.ones_like(ids), "labels": labels}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=200, help="optimizer steps")
    ap.add_argument("--batch", type=int, default=32, help="sequences per rank and micro-step")
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--accum", type=int, default=1, help="gradient accumulation steps")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--noisy-rank", type=int, default=-1)
    ap.add_argument("--noisy-from", type=int, default=60)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    acc = Accelerator(mixed_precision="bf16", gradient_accumulation_steps=a.accum)
    torch.manual_seed(0)
    cfg = BertConfig()  # bert-base-uncased's shape: 12 layers, 768 wide, 30522 tokens
    model = BertForMaskedLM(cfg)
    data = Masked(a.steps * a.accum * a.batch * acc.num_processes, a.seq, cfg.vocab_size)
    loader = torch.utils.data.DataLoader(data, batch_size=a.batch, shuffle=True,
                                         num_workers=a.workers, drop_last=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    sched = get_linear_schedule_with_warmup(opt, 20, a.steps)
    model, opt, loader, sched = acc.prepare(model, opt, loader, sched)
    model.train()
    noisy, steps = None, 0
    for batch in loader:
        if a.noisy_rank >= 0 and steps == a.noisy_from and acc.local_process_index == 0 \
                and noisy is None:
            noisy = start_noisy(a.noisy_rank)
        with acc.accumulate(model):
            loss = model(**batch).loss
            acc.backward(loss)
            opt.step()
            sched.step()
            opt.zero_grad()
        if acc.sync_gradients:
            steps += 1
            if steps >= a.steps:
                break
    finish(a, acc.process_index, acc.num_processes, steps, noisy)
    acc.end_training()


if __name__ == "__main__":
    main()
