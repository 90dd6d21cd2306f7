"""HuggingFace transformers.Trainer: GPT-2 from its config (no download) on random
tokens, gradient accumulation, data-loader workers; started by torchrun or accelerate
launch. From --noisy-from a GEMM neighbour joins GPU --noisy-rank. Each rank writes the
Trainer's own optimizer step count (state.global_step) to --out.rank<N>.json. It never
imports trainscope."""
import argparse
import json
import os
import sys
import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, \
    TrainingArguments

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import Tokens, device_counters, start_noisy  # noqa: E402


class LMTokens(Tokens):
    """train.py's random tokens as a causal LM's inputs and labels."""

    def __getitem__(self, i):
        ids = super().__getitem__(i)[:-1]
        return {"input_ids": ids, "labels": ids.clone()}


class Neighbour(TrainerCallback):
    def __init__(self, gpu, at):
        self.gpu, self.at, self.proc = gpu, at, None

    def on_step_begin(self, args, state, control, **kw):
        if self.gpu >= 0 and state.global_step == self.at and args.local_rank <= 0 and \
                self.proc is None:
            self.proc = start_noisy(self.gpu)

    def on_train_end(self, args, state, control, **kw):
        if self.proc:
            self.proc.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--accum", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--noisy-rank", type=int, default=-1)
    ap.add_argument("--noisy-from", type=int, default=60)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    cfg = GPT2Config(n_layer=a.layers, n_positions=a.seq)
    model = GPT2LMHeadModel(cfg)
    args = TrainingArguments(output_dir=tempfile.mkdtemp(), max_steps=a.steps,
                             per_device_train_batch_size=a.batch,
                             gradient_accumulation_steps=a.accum, bf16=True,
                             dataloader_num_workers=a.workers, report_to=[],
                             save_strategy="no", logging_steps=10 ** 6,
                             disable_tqdm=True)
    data = LMTokens(a.steps * a.batch * a.accum * 8, a.seq, cfg.vocab_size)
    tr = Trainer(model=model, args=args, train_dataset=data,
                 callbacks=[Neighbour(a.noisy_rank, a.noisy_from)])
    tr.train()
    rank = args.process_index
    if a.out:
        with open("%s.rank%d.json" % (a.out, rank), "w") as f:
            json.dump({"rank": rank, "world": args.world_size,
                       "steps": tr.state.global_step,
                       "counters": device_counters()}, f)
    print("rank %d: %d optimizer steps" % (rank, tr.state.global_step), flush=True)


if __name__ == "__main__":
    main()
