#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The GEMMs a recording's steps carry (bench/data, common/recording.h), and the corpus as
if the preload had timed fewer of them: a what-if for the analyzer, replayed by
bench/real_bench (make real-bench) without a GPU.

  rec_gemms.py show FILE...          per rank: the steps' GEMM buckets (log2 flops, count),
                                     the commonest first, and the spread of ns per flop
  rec_gemms.py keep-one [--smallest] [--pairs] SRC DST
                                     copies the corpus folder SRC (labels.json and all) to
                                     DST, each step keeping one GEMM bucket, its largest
                                     (or smallest); a kept bucket of n GEMMs becomes one
                                     GEMM of 1/n of the time. --pairs: only steps that
                                     carry two single GEMMs (the preload's two a step;
                                     older recordings carry more). Every other byte is kept.
  rec_gemms.py every-k [--k K] [--phase P | --offset N] [--gemms-only] SRC DST
                                     the corpus as if the preload had run with
                                     TRAINSCOPE_DEVICE_EVERY=K (default 2): the steps it
                                     leaves untimed (one timed in each block of K, its
                                     place hashed from the block, as gpu.c picks it; with
                                     --offset N as for a job whose steps count from N, one
                                     resumed; with --phase P the steps with step % K != P)
                                     lose their GEMMs and their compute_ns (Step 5) and
                                     say device_untimed (Step 21), as the relay sends such
                                     a step; a recording made so already is copied as it
                                     is. --gemms-only: the GEMMs alone left out, compute
                                     kept and no mark.

The wire is decoded by hand (protobuf's wire format, proto/trainscope.proto: Bundle 1
batches, Batch 1 id / 4 records, Identity 6 rank, Record 2 step, Step 5 compute_ns / 12
gemms / 21 device_untimed, GemmStat
1 size_bucket / 2 count / 3 time_ns / 4 tflops), so no protobuf package is needed."""
import collections
import gzip
import os
import statistics
import struct
import sys

MAGIC = b"trainscope-recording 1\n"


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def enc_varint(v):
    out = bytearray()
    while True:
        c, v = v & 0x7F, v >> 7
        out.append(c | 0x80 if v else c)
        if not v:
            return bytes(out)


def fields(b):
    """Each field of message b: (number, wire type, value, the field's own bytes)."""
    i = 0
    while i < len(b):
        start = i
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        yield num, wt, v, b[start:i]


def delimited(num, payload):
    return enc_varint(num << 3 | 2) + enc_varint(len(payload)) + payload


def frames(path):
    """The recording's (time, subject, payload) frames."""
    b = gzip.open(path).read()
    if not b.startswith(MAGIC):
        sys.exit("%s: not a trainscope recording" % path)
    i = len(MAGIC)
    while i < len(b):
        t, sl, dl = struct.unpack_from("<QII", b, i)
        i += 16
        yield t, b[i:i + sl], b[i + sl:i + sl + dl]
        i += sl + dl


def kind_of(subject):
    """ts.v1.<ns>.<job>.<kind>.<leaf>...: b"pod", b"rank", b"ctl"..."""
    return subject.split(b".")[4] if subject.count(b".") >= 5 else b""


def batches(subject, data):
    """The encoded batches of one message: a pod's bundle holds several, a rank's is one."""
    kind = kind_of(subject)
    if kind == b"pod":
        return [v for num, _, v, _ in fields(data) if num == 1]
    return [data] if kind == b"rank" else []


def gemm_stat(v):
    d = {num: (struct.unpack("<d", x)[0] if wt == 1 else x) for num, wt, x, _ in fields(v)}
    return d.get(1, 0), d.get(2, 0), d.get(3, 0), d.get(4, 0.0)


def show(paths):
    for path in paths:
        ranks = collections.defaultdict(dict)
        for _, subject, data in frames(path):
            for b in batches(subject, data):
                rank, steps = None, []
                for num, _, v, _ in fields(b):
                    if num == 1:  # an identity without a rank field is rank 0
                        rank = next((x for n, _, x, _ in fields(v) if n == 6), 0)
                    elif num == 4:
                        steps += [x for n, _, x, _ in fields(v) if n == 2]
                for s in steps:
                    fs = list(fields(s))
                    step = next((x for n, _, x, _ in fs if n == 1), 0)
                    ranks[rank][step] = [gemm_stat(x) for n, _, x, _ in fs if n == 12]
        for rank in sorted(r for r in ranks if r is not None):
            shapes, per = collections.Counter(), []
            for gemms in ranks[rank].values():
                shapes[tuple((g[0], g[1]) for g in gemms)] += 1
                ns = sum(g[2] for g in gemms)
                flops = sum(g[3] * g[2] * 1e3 for g in gemms)
                if ns and flops:
                    per.append(ns / flops)
            print("%s rank %d: %d steps; GEMM buckets (log2 flops, count): %s" %
                  (os.path.basename(path), rank, len(ranks[rank]), shapes.most_common(3)))
            if len(per) > 20:
                med = statistics.median(per)
                mad = statistics.median(abs(x - med) for x in per)
                print("  ns per flop: median %.3g, median absolute deviation %.1f %% of it" %
                      (med, 100 * mad / med))


def keep_one(step, smallest, pairs, tally):
    """Step message with one GEMM bucket left (the first field 12's place); with pairs,
    only a step of two single GEMMs (what the preload times a step since session 31)."""
    gemms = [(gemm_stat(v), raw) for num, _, v, raw in fields(step) if num == 12]
    if not gemms or (len(gemms) == 1 and gemms[0][0][1] <= 1):
        return step
    if pairs and (len(gemms) != 2 or any(g[0][1] != 1 for g in gemms)):
        tally["left"] += 1
        return step
    (bucket, count, time_ns, tflops), kept = (min if smallest else max)(
        gemms, key=lambda g: g[0][0])
    tally["steps"] += 1
    if count > 1:
        tally["split"] += 1
        kept = delimited(12, enc_varint(1 << 3) + enc_varint(bucket) + enc_varint(2 << 3) +
                         enc_varint(1) + enc_varint(3 << 3) + enc_varint(time_ns // count) +
                         enc_varint(4 << 3 | 1) + struct.pack("<d", tflops))
    out, placed = bytearray(), False
    for num, _, _, raw in fields(step):
        if num != 12:
            out += raw
        elif not placed:
            out += kept
            placed = True
    return bytes(out)


def rewrite(b, path, fn):
    """Message b with the fields that path (field numbers, outermost first) reaches
    replaced by fn of their payload."""
    if not path:
        return fn(b)
    return b"".join(delimited(num, rewrite(v, path[1:], fn)) if num == path[0] else raw
                    for num, _, v, raw in fields(b))


def timed_step(n, k):
    """Whether the preload times the device in step n at TRAINSCOPE_DEVICE_EVERY=k: one
    step of each block of k, its place hashed from the block (gpu.c's step_untimed)."""
    place = ((n // k) * 0xBF58476D1CE4E5B9 & (1 << 64) - 1) >> 56
    return n % k == place % k


def untime(step, k, phase, gemms_only, tally, offset=0):
    """Step message as the preload would send it had it timed no device work in the step
    unless timed_step(step + offset, k) (phase >= 0: unless step % k == phase): no GEMM
    bucket, no compute_ns, device_untimed set (with gemms_only, compute_ns as it was and
    no mark: only the GEMM pairs thinned)."""
    fs = list(fields(step))
    n = next((v for num, _, v, _ in fs if num == 1), 0)
    tally["steps"] += 1
    if (timed_step(n + offset, k) if phase < 0 else n % k == phase):
        return step
    tally["untimed"] += 1
    out = bytearray()
    for num, _, _, raw in fs:
        if num == 12:
            tally["gemm_fields"] += 1
        elif num not in (5, 21) or gemms_only:
            out += raw
    if not gemms_only:  # device_untimed = true: no compute_ns, no fallback
        out += enc_varint(21 << 3) + enc_varint(1)
    return bytes(out)


def rewrite_file(p, step):
    """The recording p's bytes, each recorded Step message through step."""
    out = bytearray(MAGIC)
    for t, subject, data in frames(p):
        kind = kind_of(subject)
        if kind == b"pod":
            data = rewrite(data, [1, 4, 2], step)
        elif kind == b"rank":
            data = rewrite(data, [4, 2], step)
        out += struct.pack("<QII", t, len(subject), len(data)) + subject + data
    return bytes(out)


def rewrite_corpus(src, dst, step, keep=None):
    """Copies the corpus folder src to dst, each recorded Step message through step; a
    recording for which keep(path) holds is copied as it is."""
    for root, _, files in os.walk(src):
        for name in files:
            p = os.path.join(root, name)
            q = os.path.join(dst, os.path.relpath(p, src))
            os.makedirs(os.path.dirname(q), exist_ok=True)
            if not name.endswith(".tsrec.gz") or (keep and keep(p)):
                with open(p, "rb") as f, open(q, "wb") as g:
                    g.write(f.read())
                continue
            with gzip.open(q, "wb") as g:
                g.write(rewrite_file(p, step))


def recorded_untimed(p):
    """Whether recording p was made with the device untimed on some steps (a Step says
    device_untimed): thinning it again would time fewer steps than K asks."""
    seen = []

    def look(step):
        seen.extend(num for num, _, _, _ in fields(step) if num == 21)
        return step
    rewrite_file(p, look)
    return bool(seen)


def keep_one_corpus(src, dst, smallest, pairs):
    tally = collections.Counter()
    rewrite_corpus(src, dst, lambda s: keep_one(s, smallest, pairs, tally))
    print("%d steps cut to one GEMM bucket; in %d of them the bucket held several GEMMs, "
          "split evenly; %d steps left as they were" % (tally["steps"], tally["split"],
                                                        tally["left"]))


def main(argv):
    if len(argv) >= 2 and argv[0] == "show":
        show(argv[1:])
    elif argv and argv[0] == "keep-one":
        rest = [a for a in argv[1:] if a not in ("--smallest", "--pairs")]
        if len(rest) != 2:
            sys.exit(__doc__)
        keep_one_corpus(rest[0], rest[1], "--smallest" in argv, "--pairs" in argv)
    elif argv and argv[0] == "every-k":
        every_k(argv[1:])
    else:
        sys.exit(__doc__)


def every_k(argv):
    k, phase, offset, rest = 2, -1, 0, []
    gemms_only = "--gemms-only" in argv
    argv = [a for a in argv if a != "--gemms-only"]
    while argv:
        if argv[0] in ("--k", "--phase", "--offset") and len(argv) > 1:
            v = int(argv[1])
            k, phase, offset = {"--k": (v, phase, offset), "--phase": (k, v, offset),
                                "--offset": (k, phase, v)}[argv[0]]
            argv = argv[2:]
        else:
            rest, argv = rest + argv[:1], argv[1:]
    if len(rest) != 2 or k < 1 or not -1 <= phase < k:
        sys.exit(__doc__)
    if phase >= 0 and offset:
        sys.exit("rec_gemms.py every-k: --phase and --offset place the timed steps two ways; "
                 "give one")
    tally = collections.Counter()
    rewrite_corpus(rest[0], rest[1], lambda s: untime(s, k, phase, gemms_only, tally, offset),
                   recorded_untimed)
    print("K=%d, %s: %d steps, %d left untimed (%d GEMM buckets dropped); recordings made "
          "with the device untimed already are copied as they are" %
          (k, "phase %d" % phase if phase >= 0 else "hashed, offset %d" % offset,
           tally["steps"], tally["untimed"], tally["gemm_fields"]))


if __name__ == "__main__":
    main(sys.argv[1:])
