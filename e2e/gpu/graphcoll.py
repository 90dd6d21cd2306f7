# SPDX-License-Identifier: Apache-2.0
"""graphcoll.py: collectives captured into a CUDA graph count with every replay.

Under torchrun (any number of GPUs, one works): captures, with torch.cuda.graph, a step
of two GEMMs, three all-reduces (two of 4 MiB, one of 64 KiB) and an all-gather, replays
it --replays times, and compares the preload's counters over the replays with what the
graph holds: collectives = replays x 4, none uncounted, and kernel launches = the
kernels torch.profiler saw in the same replays. Exit status 1 when a count differs."""
import argparse
import json
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(__file__))
from train import device_counters  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--replays", type=int, default=50)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    x = torch.randn(1024, 1024, device="cuda")
    big = torch.ones(1 << 20, device="cuda")       # 4 MiB of float32
    small = torch.ones(1 << 14, device="cuda")     # 64 KiB
    part = torch.ones(1 << 12, device="cuda")
    gathered = torch.empty(world * part.numel(), device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm up cuBLAS and NCCL outside the capture, as torch asks
        for _ in range(3):
            y = x @ x
            dist.all_reduce(big)
            dist.all_gather_into_tensor(gathered, part)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    c_cap0 = device_counters()
    with torch.cuda.graph(g):
        y = x @ x
        y = y @ x
        dist.all_reduce(big)
        dist.all_reduce(big)
        dist.all_reduce(small)
        dist.all_gather_into_tensor(gathered, part)
    torch.cuda.synchronize()
    c0 = device_counters()
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
    with prof:
        for _ in range(a.replays):
            g.replay()
        torch.cuda.synchronize()
    c1 = device_counters()
    names = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            names[e.name] = names.get(e.name, 0) + 1
    # copies aside, as the preload counts them: a graph's device-to-device copy node
    # runs as the driver's memcpy32_post kernel
    kernels = sum(c for n, c in names.items() if not n.lower().startswith(("memcpy", "memset")))
    d = {k: c1[k] - c0[k] for k in ("launches", "colls", "graph_colls", "graph_launches")}
    res = {"rank": rank, "world": world, "replays": a.replays, "delta": d,
           "captured_into_graph_colls": c0["colls"] - c_cap0["colls"],
           "graph_colls_uncounted": c1["graph_colls_uncounted"],
           "profiler_kernels": kernels, "profiler_names": names}
    ok = (d["graph_colls"] == 4 * a.replays and d["colls"] == 4 * a.replays and
          c1["graph_colls_uncounted"] == 0 and d["launches"] == kernels)
    res["ok"] = ok
    print(json.dumps(res), flush=True)
    if a.out:
        with open("%s.rank%d.json" % (a.out, rank), "w") as f:
            json.dump(res, f)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
