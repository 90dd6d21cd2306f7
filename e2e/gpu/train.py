# SPDX-License-Identifier: Apache-2.0
"""A GPT-style transformer trained with DDP or FSDP under torchrun: the workload of the
GPU e2e runs (e2e/gpu/run.sh). It never imports trainscope: the preload and the shim
find it. Writes one JSON line per rank to --out with its step times and, when preloaded,
the library's device counters."""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                           v.transpose(1, 2), is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab, d, layers, heads, seq):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def device_counters():
    """The preload's counters, or None when the program runs without it."""
    # struct trainscope_device_counters, in order; a prefix of it is enough: the sized
    # call fills what the buffer's size holds and the fields the library lacks are 0
    names = ("launches", "api_calls", "segments", "samples", "completed", "timed_skipped",
             "capture_skips", "hangs", "sample_n", "mem_live", "alloc_failures", "gemms",
             "colls", "graphs", "graphs_uncounted", "graph_launches", "captured",
             "host_funcs", "graph_colls", "graph_colls_uncounted", "seg_waits",
             "seg_switches", "seg_untimed", "tail_unsampled")
    buf = (ctypes.c_uint64 * len(names))()
    lib = ctypes.CDLL(None)
    try:
        fn = lib.trainscope_get_device_counters_sized
    except AttributeError:
        try:  # a library from before the sized call: it writes at most these 20 fields
            lib.trainscope_get_device_counters(buf)
        except AttributeError:
            return None
        return dict(zip(names, buf))
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    fn.restype = ctypes.c_int
    if fn(buf, ctypes.sizeof(buf)) < 0:
        return None
    return dict(zip(names, buf))


def job_args(ap):
    """The options the framework runs of frameworks.sh share: a GPT of this size on random
    tokens, the neighbour's GPU and start, where each rank writes its step count."""
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--noisy-rank", type=int, default=-1)
    ap.add_argument("--noisy-from", type=int, default=60)
    ap.add_argument("--out", default="")
    return ap


class Tokens(torch.utils.data.Dataset):
    """n sequences of seq + 1 random tokens, the same for every run."""

    def __init__(self, n, seq, vocab):
        self.n, self.seq, self.vocab = n, seq, vocab

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randint(0, self.vocab, (self.seq + 1,), generator=g)


def torchrun_rank():
    """NCCL's process group as torchrun sets it up (RANK, WORLD_SIZE and LOCAL_RANK in the
    environment), this process on its local GPU: (rank, world, local)."""
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    return rank, world, local


def truth(fault, rank):
    """Notes when a fault really began (TS_TRUTH_FILE, one JSON line each): the recorded
    corpus (e2e/gpu/record.sh) labels its onset step from it."""
    path = os.environ.get("TS_TRUTH_FILE")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"fault": fault, "rank": rank, "t_ns": time.time_ns()}) + "\n")


def finish(a, rank, world, steps, noisy, **extra):
    """A hand-written loop's end: the neighbour stopped, the rank's own step count to
    --out.rank<N>.json (what the stream's steps are checked against), and said."""
    torch.cuda.synchronize()
    if noisy:
        noisy.kill()
    if a.out:
        with open("%s.rank%d.json" % (a.out, rank), "w") as f:
            json.dump(dict(rank=rank, world=world, steps=steps, counters=device_counters(),
                           **extra), f)
    print("rank %d: %d optimizer steps" % (rank, steps), flush=True)


def physical_gpu(gpu):
    """The GPU that index gpu of this process's CUDA_VISIBLE_DEVICES names."""
    vis = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    ids = [v for v in vis.split(",") if v.strip()]
    return ids[gpu] if gpu < len(ids) else str(gpu)


def start_noisy(gpu):
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "PYTHONPATH", "NCCL_PROFILER_PLUGIN")}
    env["CUDA_VISIBLE_DEVICES"] = physical_gpu(gpu)
    env["TS_TRUTH_RANK"] = str(gpu)
    return subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "noisy.py")],
                            env=env)


def out_of_time(start, limit, world):
    """Whether the run is past its limit; with several ranks, whether any is (all stop at
    the same step, or the others would wait in their next collective)."""
    late = time.monotonic() - start > limit
    if world == 1:
        return late
    flag = torch.tensor([1 if late else 0], device="cuda")
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item())


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mode", choices=("ddp", "fsdp"), default="ddp")
    ap.add_argument("--compile", choices=("none", "default", "reduce-overhead"), default="none",
                    help="torch.compile the model (reduce-overhead replays CUDA graphs); "
                         "gradients are then all-reduced by hand, DDP's hooks left out")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--dim", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--noisy-rank", type=int, default=-1, help="GPU that gets a GEMM neighbour")
    ap.add_argument("--noisy-from", type=int, default=60)
    ap.add_argument("--hang-rank", type=int, default=-1, help="rank that stops at --hang-at")
    ap.add_argument("--hang-at", type=int, default=30)
    ap.add_argument("--profile-steps", type=int, default=0,
                    help="count kernels with torch.profiler over this many steps")
    ap.add_argument("--max-seconds", type=float, default=0,
                    help="stop after this long (step times kept): a slower host than planned "
                         "would otherwise be killed by the caller's timeout with none written")
    ap.add_argument("--out", default="")
    a = ap.parse_args()

    rank, world, local = torchrun_rank()
    torch.manual_seed(0)
    model = GPT(a.vocab, a.dim, a.layers, a.heads, a.seq).cuda()
    compiled = a.compile != "none"
    if compiled:
        for p in model.parameters():  # the replicas start equal, as DDP makes them
            dist.broadcast(p.data, 0)
        model = torch.compile(model, mode=a.compile)
    elif a.mode == "ddp":
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local])
    else:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        model = FSDP(model, device_id=local, use_orig_params=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    data = torch.utils.data.TensorDataset(torch.randint(0, a.vocab, (64 * a.batch, a.seq + 1)))
    loader = torch.utils.data.DataLoader(data, batch_size=a.batch, shuffle=True, drop_last=True)
    it, noisy, times, prof_result = iter(loader), None, [], None

    total, start = a.warmup + a.steps, time.monotonic()
    for step in range(total):
        if a.max_seconds > 0 and step % 200 == 0 and out_of_time(start, a.max_seconds, world):
            print("stopping at step %d: --max-seconds %g reached" % (step, a.max_seconds), flush=True)
            break
        if a.noisy_rank >= 0 and step == a.noisy_from and local == 0:
            noisy = start_noisy(a.noisy_rank)
        if rank == a.hang_rank and step == a.hang_at:
            print("rank %d stops entering collectives at step %d" % (rank, step), flush=True)
            time.sleep(3600)
        profiling = a.profile_steps and step == a.warmup
        if profiling:
            c0 = device_counters()
            prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
            prof.__enter__()
        t0 = time.perf_counter()
        try:
            (batch,) = next(it)
        except StopIteration:
            it = iter(loader)
            (batch,) = next(it)
        batch = batch.cuda(non_blocking=True)
        if a.compile == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(batch[:, :-1])
            loss = F.cross_entropy(logits.float().view(-1, a.vocab), batch[:, 1:].reshape(-1))
        loss.backward()
        if compiled:
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            flat = torch.cat([g.reshape(-1) for g in grads])
            dist.all_reduce(flat)
            flat /= world
            for g, f in zip(grads, torch._utils._unflatten_dense_tensors(flat, grads)):
                g.copy_(f)
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()
        times.append(time.perf_counter() - t0)
        if profiling or (a.profile_steps and a.warmup < step < a.warmup + a.profile_steps):
            if step == a.warmup + a.profile_steps - 1:
                torch.cuda.synchronize()
                prof.__exit__(None, None, None)
                c1 = device_counters()
                names = {}
                for e in prof.events():
                    if e.device_type == torch.autograd.DeviceType.CUDA:
                        names[e.name] = names.get(e.name, 0) + 1
                copies = {n: c for n, c in names.items()
                          if n.startswith(("Memcpy", "Memset"))}
                kernels = sum(names.values()) - sum(copies.values())
                prof_result = {"steps": a.profile_steps, "profiler_kernels": kernels,
                               "profiler_copies": copies,
                               "kernel_names": sorted(names.items(), key=lambda x: -x[1])[:60],
                               "preload_launches": (c1["launches"] - c0["launches"]) if c1 else None}
    if noisy:
        noisy.kill()
    steady = sorted(times[a.warmup:])
    res = {"rank": rank, "world": world, "mode": a.mode, "compile": a.compile,
           "median_step_s": steady[len(steady) // 2] if steady else None,
           "mean_step_s": sum(steady) / len(steady) if steady else None,
           "steps": len(steady), "preloaded": device_counters() is not None,
           "counters": device_counters(), "profile": prof_result,
           "step_times": [round(t, 6) for t in times]}
    if a.out:
        with open("%s.rank%d.json" % (a.out, rank), "w") as f:
            json.dump(res, f)
    print(json.dumps({k: v for k, v in res.items() if k != "step_times"}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
