#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes docs/reference.md from the programs themselves, or with --check says what in
it is missing or stale. Run from anywhere; BIN (default build/bin, or --bin DIR) holds
the built programs (make docs-ref and make docs-check pass $(BUILD)/bin).

  programs      each trainscope* program's --help (the CLI's commands too), verbatim,
                and its flags and their variables from its option table (--print-options,
                common/opts.c; the CLI's dispatcher, which has none: the flags its help names)
  variables     every TRAINSCOPE_* name the sources read or set (a quoted literal in
                the C and Python sources outside tests and e2e), plus the other
                variables they read; descriptions are kept below in ENV and OTHER
  metrics       every Prometheus family each daemon declares (--print-metrics,
                common/metric.h); no source but common/metric.c may write HELP or TYPE
  configuration trainscope-analyzer --print-config, with the variable of each key
  helm values   helm/trainscope/values.yaml, with the comment above each key
  CRD           the SlowNodeReport's printer columns and status fields

It also writes (or, with --check, compares) the chart's values.schema.json
analyzer.config from trainscope-analyzer --config-schema, so that every key the analyzer
takes is accepted by helm and no other.

--check also fails when README.md, CONTRIBUTING.md or docs/*.md name a trainscope_*
metric that no program emits. Exit status: 0 up to date, 1 stale (what, and the command
to regenerate, on stderr), 2 a program could not be run or a source not read."""
import argparse
import json
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = "docs/reference.md"
SCHEMA = "helm/trainscope/values.schema.json"
REGEN = "make docs-ref (that is: scripts/docs-ref.py --bin <build>/bin)"

# What each TRAINSCOPE_* variable does. A variable the sources use and this table lacks,
# or one this table has and the sources no longer use, fails --check.
ENV = {
    "TRAINSCOPE_ANALYZER_PARTITION": "The partition an analyzer reads (`--partition`): 0 to N-1, or `auto` (the ordinal ending the pod's name).",
    "TRAINSCOPE_ANALYZER_PARTITIONS": "How many analyzers share the jobs (`--partitions`).",
    "TRAINSCOPE_CONTAINER": "The rank's container, in its identity (set by the webhook).",
    "TRAINSCOPE_DCMI_LIB": "The agent's DCMI library for Ascend NPU health (default `libdcmi.so`, then the Ascend driver's).",
    "TRAINSCOPE_DEBUG_NAMES": "`1`: the preload logs the kernel names it resolves (debugging).",
    "TRAINSCOPE_DEVICE_INDEX": "The rank's device index, overriding the visible-device lists.",
    "TRAINSCOPE_DEVICE_UUID": "The rank's device UUID, overriding the visible-device lists.",
    "TRAINSCOPE_DUMP_SIGNAL": "The signal on which the shim's faulthandler dumps every thread's Python stack (default SIGRTMIN+5).",
    "TRAINSCOPE_GROUPS": "The job's parallel layout, `tp2-pp4-dp8` or `megatron:tp=2,pp=4,dp=8`: who are peers (docs/instrumenting.md).",
    "TRAINSCOPE_HANG_TIMEOUT_MS": "The hang watch's timeout in ms (tests); wins over `TRAINSCOPE_HANG_TIMEOUT_S`.",
    "TRAINSCOPE_HANG_TIMEOUT_S": "An op pending this long is reported as a hang (default 300).",
    "TRAINSCOPE_HOST_CGROUP": "The host's `/sys/fs/cgroup` as mounted in the agent's container (`--host-cgroup`).",
    "TRAINSCOPE_IMAGE": "The image the webhook injects (`--image`).",
    "TRAINSCOPE_JOB": "The job's name (`trainscope run --job`; set by the webhook).",
    "TRAINSCOPE_LIB": "The preload library `trainscope run` injects (`--lib`).",
    "TRAINSCOPE_LOCAL_RANK": "The process's local rank, with `TRAINSCOPE_RANK`.",
    "TRAINSCOPE_LOG": "Log level of every program and the library: `debug`, `info`, `warn` or `error`.",
    "TRAINSCOPE_NAMESPACE": "The job's namespace (`trainscope run --namespace`; set by the webhook from the downward API).",
    "TRAINSCOPE_NATS_CA": "CA bundle file: connect to NATS with TLS (`--nats-ca`).",
    "TRAINSCOPE_NATS_CA_PEM": "The CA bundle's PEM text itself (the webhook gives it to relays).",
    "TRAINSCOPE_NATS_CREDS": "NATS credentials file, JWT and nkey seed (`--nats-creds`).",
    "TRAINSCOPE_NATS_PASSWORD": "The password of `--nats-user` (and of trainscope-natsauth's own NATS user).",
    "TRAINSCOPE_NATS_TLS_NAME": "The name NATS's certificate must carry, when it is not the URL's host.",
    "TRAINSCOPE_NATS_TOKEN": "NATS token (`--nats-token`).",
    "TRAINSCOPE_NATS_TOKEN_FILE": "NATS token read at each connect, such as a projected ServiceAccount token (`--nats-token-file`).",
    "TRAINSCOPE_NATS_URL": "NATS server (`--nats`; default `nats://127.0.0.1:4222`, the webhook's relays `nats://trainscope-nats:4222`).",
    "TRAINSCOPE_NATS_USER": "NATS user (`--nats-user`).",
    "TRAINSCOPE_NCCL_PROFILER_CHAIN": "A user's NCCL profiler plugin, chained behind the library (docs/instrumenting.md).",
    "TRAINSCOPE_NODE": "The node's name, in the identity and the agent's subjects (set from the downward API).",
    "TRAINSCOPE_NPU_HOT_C": "The NPU temperature (°C) the agent takes as thermal throttling (default 90).",
    "TRAINSCOPE_NVML_LIB": "The agent's NVML library (default `libnvidia-ml.so.1`).",
    "TRAINSCOPE_POD": "The rank's pod (set from the downward API).",
    "TRAINSCOPE_POD_UID": "The relay's pod UID (downward API): the agent traces an announced process only inside that pod.",
    "TRAINSCOPE_POLL_MS": "How often the library's poller thread reads device events back (default 5).",
    "TRAINSCOPE_RANK": "The process's rank, overriding every launcher's variables.",
    "TRAINSCOPE_RING_DIR": "The ring folder: the library records only when it is set; the relay drains it (`--ring-dir`).",
    "TRAINSCOPE_AB_STEPS": "The in-run A/B, for measuring trainscope's own cost: recording pauses in every other block of this many steps (1, 3, 5, ...), the hooks staying in place; unset or 0: off. Not for production: a paused block's steps carry no device time (`e2e/gpu/ab_inrun.py`).",
    "TRAINSCOPE_RING_SLOTS": "Slots of each process's ring, a power of two from 64 (default 16384).",
    "TRAINSCOPE_SAMPLE_BUDGET": "The host time sampling may take, as a share of the step (default 0.0005).",
    "TRAINSCOPE_DEVICE_EVERY": "Device work (segments, kernel samples, GEMMs; not collectives) is timed on one step of each K only, the same steps on every rank; the other steps say so, and the analyzer reads their compute as unknown (default 2, which halves the timing events' cost; 1 times every step; at most 4). On the recorded corpus rewritten as if timed so, K = 2 passes every case, K = 4 does not: the change points want 8 timed steps in 20 (bench/results/gpu.md, sessions 37 and 38).",
    "TRAINSCOPE_GEMMS_PER_STEP": "The process's first N GEMMs of every step are timed (an event pair each), whatever the sampling: each step's GEMM throughput, which a shared or slowed GPU lowers (default 2; 0 leaves GEMMs to 1-in-N sampling).",
    "TRAINSCOPE_SEGMENT_HEAD": "A step's first N busy segments on a stream (each ended by the stream's wait on another's work) are timed with an event pair each, unless the step before opened TRAINSCOPE_SEGMENT_EVERY segments or more on it (default 1).",
    "TRAINSCOPE_SEGMENT_EVERY": "Past the head, a segment that follows one of 1 or 2 kernels of its own kind (NCCL's or not) is timed one time in N; the others count their kernels, and their busy time is the samples' ns per kernel, over the last 2N steps or so, times those (default 64; 0 or 1 times them all).",
    "TRAINSCOPE_SAMPLE_N": "Kernels and GEMMs are timed 1 in N to start with (default 64; adapted to the budget).",
    "TRAINSCOPE_SHIM": "The Python shim's folder `trainscope run` puts on `PYTHONPATH` (`--shim`).",
    "TRAINSCOPE_STEP_FUNC": "`module@object@function`: each call of it is a step, for loops with no optimizer step.",
    "TRAINSCOPE_STREAM_DISCARD": "The stream when full: `old` drops the oldest (default), `new` refuses.",
    "TRAINSCOPE_STREAM_MAX_AGE": "The stream's messages are dropped past this age (default `24h`).",
    "TRAINSCOPE_STREAM_MAX_BYTES": "The stream's bound on each server (default `1G`).",
    "TRAINSCOPE_STREAM_REPLICAS": "Copies of the stream on different servers (default 1).",
    "TRAINSCOPE_WIRE": "How the relay publishes its ranks' batches (`--wire`): `pod` (default), one `Bundle` a round per pod and job on `ts.v1.<ns>.<job>.pod.<pod>`; `rank`, each on its rank's subject.",
    "TRAINSCOPE_WORLD_SIZE": "The job's world size, with `TRAINSCOPE_RANK`.",
}

# Other variables the programs read. Each must still appear, quoted, in the sources;
# every getenv("X") and os.environ.get("X") of the sources must be here or in ENV.
OTHER = {
    "RANK": "torchrun's rank (with `WORLD_SIZE`, `LOCAL_RANK`); the rank sources in order: docs/instrumenting.md.",
    "WORLD_SIZE": "torchrun's world size.",
    "LOCAL_RANK": "torchrun's local rank; also the entry of the visible-device lists that is the rank's device.",
    "OMPI_COMM_WORLD_RANK": "Open MPI's rank (`OMPI_COMM_WORLD_SIZE`, `OMPI_COMM_WORLD_LOCAL_RANK`).",
    "PMIX_RANK": "PMIx's rank (`PMIX_SIZE`, `PMIX_LOCAL_RANK`).",
    "PMI_RANK": "MPICH's and Intel MPI's rank (`PMI_SIZE`, `MPI_LOCALRANKID`).",
    "MV2_COMM_WORLD_RANK": "MVAPICH's rank (`MV2_COMM_WORLD_SIZE`, `MV2_COMM_WORLD_LOCAL_RANK`).",
    "SLURM_PROCID": "srun's rank (`SLURM_NTASKS`, `SLURM_LOCALID`).",
    "CUDA_VISIBLE_DEVICES": "The GPUs a rank sees, selecting from `NVIDIA_VISIBLE_DEVICES`.",
    "NVIDIA_VISIBLE_DEVICES": "The container's GPUs (the NVIDIA runtime's).",
    "ASCEND_VISIBLE_DEVICES": "The container's NPUs (Ascend's device plugin).",
    "ASCEND_RT_VISIBLE_DEVICES": "The NPUs a rank sees, selecting from `ASCEND_VISIBLE_DEVICES`.",
    "ASCEND_RUNTIME_OPTIONS": "Ascend's runtime options: with `VIRTUAL` (vNPUs) the visible list names no chip, and the rank's device is not taken from it.",
    "NCCL_PROFILER_PLUGIN": "NCCL's profiler plugin: `trainscope run` and the webhook set it to the library, chaining a user's.",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "The analyzer's OTLP/HTTP endpoint (`/v1/traces` added); `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as is.",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "The analyzer's OTLP traces URL, used as given.",
    "OTEL_TRACES_EXPORTER": "`none` turns the analyzer's traces off.",
    "OTEL_SDK_DISABLED": "`true` turns the analyzer's traces off.",
    "OTEL_SERVICE_NAME": "`service.name` of the analyzer's spans (default: the training job's name).",
    "OTEL_RESOURCE_ATTRIBUTES": "More resource attributes of the analyzer's spans.",
    "KUBECONFIG": "The kubeconfig of `trainscope report --kube`.",
    "KUBERNETES_SERVICE_HOST": "In a pod: the in-cluster API server; the agent then traces only inside pods (`--pods-only`).",
    "KUBERNETES_SERVICE_PORT": "In a pod: the in-cluster API server's port.",
    "POD_NAME": "The analyzer's pod, whose ordinal is its partition with `--partition auto` (else `HOSTNAME`); with `POD_NAMESPACE` and `POD_UID`, named in its lease on the durable.",
    "POD_NAMESPACE": "The namespace of `trainscope-webhook --bootstrap-certs` and `trainscope-natsauth --init --secret`; the analyzer's, named in its lease.",
    "POD_UID": "The analyzer pod's uid (the downward API), named in its lease: a successor takes the lease at once when the API server shows that pod gone or made anew.",
    "HOME": "`trainscope report --kube` finds `~/.kube/config` there.",
    "PATH": "`trainscope run --local` finds nats-server there.",
    "TMPDIR": "`trainscope run --local` keeps NATS's store under it.",
}

# The programs that serve /metrics, each with its own table (--print-metrics).
DAEMONS = ("trainscope-agent", "trainscope-analyzer", "trainscope-natsauth", "trainscope-relay",
           "trainscope-webhook")
HIST_SUFFIXES = ("_bucket", "_sum", "_count")


class Fail(Exception):
    pass


def git_files(*patterns):
    out = subprocess.run(["git", "ls-files", "--"] + list(patterns), cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return [f for f in out.split("\n") if f]


def product_sources(patterns=("*.c", "*.h", "*.py")):
    """The sources of what ships: no tests, no e2e, no benchmarks but the load generator."""
    keep = []
    for f in git_files(*patterns):
        if "/tests/" in f or f.startswith("e2e/") or f.startswith("scripts/"):
            continue
        if f.startswith("bench/") and f != "bench/loadgen.c":
            continue
        keep.append(f)
    return keep


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
        return fh.read()


# ---- programs -------------------------------------------------------------------

CLEAN_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C", "LC_ALL": "C"}


def run_help(argv):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, env=CLEAN_ENV, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Fail("cannot run %s: %s" % (" ".join(argv), e))
    text = p.stdout + p.stderr
    if p.returncode != 0 or not text.strip():
        raise Fail("%s exited %d" % (" ".join(argv), p.returncode))
    return text.rstrip("\n")


def options_of(argv):
    """The program's option table (--print-options, common/opts.c), or None for a program
    without one (the CLI's own dispatcher)."""
    try:
        p = subprocess.run(argv + ["--print-options"], capture_output=True, text=True,
                           env=CLEAN_ENV, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Fail("cannot run %s: %s" % (" ".join(argv), e))
    if p.returncode != 0:
        return None
    try:
        return json.loads(p.stdout)
    except ValueError:
        raise Fail("%s --print-options printed no JSON" % " ".join(argv))


def programs(bindir):
    if not os.path.isdir(bindir):
        raise Fail("%s: no such folder (build first: make all)" % bindir)
    names = sorted(n for n in os.listdir(bindir) if n.startswith("trainscope"))
    if "trainscope" not in names:
        raise Fail("%s has no trainscope program (build first: make all)" % bindir)
    progs = []
    for n in names:
        path = os.path.join(bindir, n)
        text = run_help([path, "--help"])
        progs.append((n, text, options_of([path])))
        if n == "trainscope":  # the CLI: one more page per command
            cmds = []
            for line in text.split("\n"):
                m = re.match(r"^  ([a-z][a-z-]*) ", line)
                if m and m.group(1) not in ("help",) and m.group(1) not in cmds:
                    cmds.append(m.group(1))
            if not cmds:
                raise Fail("trainscope --help lists no command")
            for c in cmds:
                progs.append(("trainscope " + c, run_help([path, c, "--help"]),
                              options_of([path, c])))
    return progs


def flags_of(text):
    """The flags a help text lists: those that begin a line (after a short option)."""
    seen = []
    for line in text.split("\n"):
        m = re.match(r"^\s*(?:-\w,\s+)?(--[a-z][a-z0-9-]*)", line)
        if m and m.group(1) not in seen:
            seen.append(m.group(1))
    return seen


# ---- variables ------------------------------------------------------------------

def variables():
    where = {}
    for f in product_sources():
        for name in re.findall(r'"(TRAINSCOPE_[A-Z0-9_]*[A-Z0-9])(?=["=\n\\])', read(f)):
            where.setdefault(name, set()).add(f)
    problems = []
    for name in sorted(set(where) - set(ENV)):
        problems.append("variable %s (%s) has no description in scripts/docs-ref.py ENV"
                        % (name, ", ".join(sorted(where[name]))))
    for name in sorted(set(ENV) - set(where)):
        problems.append("variable %s is described in scripts/docs-ref.py ENV but no source "
                        "uses it any more" % name)
    other_where = {}
    direct = set()
    for f in product_sources():
        text = read(f)
        direct.update(re.findall(r'getenv\("([A-Z][A-Z0-9_]*)"\)', text))
        direct.update(re.findall(r'os\.environ\.get\("([A-Z][A-Z0-9_]*)"', text))
        for name in OTHER:
            if '"%s"' % name in text:
                other_where.setdefault(name, set()).add(f)
    for name in sorted(direct - set(ENV) - set(OTHER)):
        problems.append("variable %s is read (getenv) but has no description in "
                        "scripts/docs-ref.py OTHER" % name)
    for name in sorted(set(OTHER) - set(other_where)):
        problems.append("variable %s is described in scripts/docs-ref.py OTHER but no "
                        "source names it any more" % name)
    if problems:
        raise Fail("\n".join(problems))
    return where, other_where


# ---- metrics --------------------------------------------------------------------

def metrics(bindir):
    """name -> (served by, type, help, labels), from each daemon's --print-metrics
    (common/metric.h): the families are declared in tables, never written by hand."""
    fams, problems = {}, []
    for d in DAEMONS:
        argv = [os.path.join(bindir, d), "--print-metrics"]
        try:
            p = subprocess.run(argv, capture_output=True, text=True, env=CLEAN_ENV, timeout=20)
            table = json.loads(p.stdout)
        except (OSError, subprocess.TimeoutExpired, ValueError) as e:
            raise Fail("%s: %s" % (" ".join(argv), e))
        seen = set()
        for m in table:
            name, typ = m["name"], m["type"]
            if name in seen:
                problems.append("%s declares metric %s twice" % (d, name))
            seen.add(name)
            if not re.match(r"^trainscope_[a-z0-9_]*[a-z0-9]$", name):
                problems.append("%s: metric %s: not trainscope_[a-z0-9_]" % (d, name))
            if (typ == "counter") != name.endswith("_total"):
                problems.append("%s: metric %s: a counter's name ends _total, and only a "
                                "counter's" % (d, name))
            if not m["help"].strip():
                problems.append("%s: metric %s has no help" % (d, name))
            old = fams.get(name)
            if old and (old[1], old[2], old[3]) != (typ, m["help"], m.get("labels")):
                problems.append("metric %s: %s and %s declare it differently"
                                % (name, d, ", ".join(old[0])))
            fams.setdefault(name, ([], typ, m["help"], m.get("labels")))[0].append(d)
    # HELP and TYPE lines come from common/metric.c alone: a family written by hand would
    # be served and never documented.
    for f in product_sources(("*.c", "*.h")):
        if f != "common/metric.c" and re.search(r"# (HELP|TYPE) ", read(f)):
            problems.append("%s writes a # HELP or # TYPE line: declare the family in a "
                            "struct ts_metric_family table (common/metric.h)" % f)
    if not fams:
        problems.append("no program declares a metric")
    if problems:
        raise Fail("\n".join(problems))
    return {n: ("every daemon" if len(v[0]) == len(DAEMONS) else ", ".join(v[0]),) + v[1:]
            for n, v in fams.items()}


def metric_mentions(fams):
    """trainscope_* metric names the docs mention that no program emits."""
    known = set(fams)
    for n, (_, typ, _, _) in fams.items():
        if typ == "histogram":
            known.update(n + s for s in HIST_SUFFIXES)
    bad = []
    docs = ["README.md", "CONTRIBUTING.md"] + sorted(
        os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    prefixes = "|".join(["agent", "analyzer", "relay", "webhook", "natsauth", "job", "rank",
                         "node", "slow_rank", "build"])
    for d in docs:
        if d == OUT or not os.path.exists(os.path.join(ROOT, d)):
            continue
        for i, line in enumerate(read(d).split("\n"), 1):
            for name in re.findall(r"\b(trainscope_(?:%s)_[a-z0-9_]*[a-z0-9])\b" % prefixes, line):
                if name not in known:
                    bad.append("%s:%d names metric %s, which no program emits" % (d, i, name))
    return bad


# ---- configuration, chart values, CRD ---------------------------------------------

def analyzer_config(bindir):
    text = run_help([os.path.join(bindir, "trainscope-analyzer"), "--print-config"])
    rows = []
    for line in text.split("\n"):
        m = re.match(r"^([a-z_][a-z0-9_.]*): (.*?)(?:\s+#\s?(.*))?$", line)
        if not m:
            raise Fail("trainscope-analyzer --print-config: a line that is not 'key: value # what': %r" % line)
        key, value, what = m.group(1), m.group(2).strip(), (m.group(3) or "").strip()
        env = "TRAINSCOPE_ANALYZER_" + key.replace(".", "_").upper()
        rows.append((key, value, env, what))
    if not rows:
        raise Fail("trainscope-analyzer --print-config printed nothing")
    return rows


def chart_schema(bindir):
    """values.schema.json with analyzer.config as the analyzer says it is."""
    text = run_help([os.path.join(bindir, "trainscope-analyzer"), "--config-schema"])
    try:
        cfg = json.loads(text)
        doc = json.loads(read(SCHEMA))
    except ValueError as e:
        raise Fail("%s or trainscope-analyzer --config-schema: not JSON: %s" % (SCHEMA, e))
    cfg["description"] = ("detection parameters, nested (failslow: {k_sigma: 3}) or dotted as "
                          "--print-config writes them (failslow.k_sigma: 3); generated from "
                          "trainscope-analyzer --config-schema by make docs-ref")
    doc["properties"]["analyzer"]["properties"]["config"] = cfg
    return json.dumps(doc, indent=2) + "\n"


def helm_values():
    path = "helm/trainscope/values.yaml"
    lines = read(path).split("\n")
    doc = yaml.safe_load("\n".join(lines))
    comments = {}
    stack, pending = [], []
    for line in lines:
        s = line.strip()
        if s.startswith("#"):
            pending.append(s.lstrip("#").strip())
            continue
        if not s:
            pending = []
            continue
        m = re.match(r"^( *)([A-Za-z][\w-]*):", line)
        if not m:
            pending = []
            continue
        depth = len(m.group(1)) // 2
        stack = stack[:depth] + [m.group(2)]
        comments[".".join(stack)] = " ".join(pending)
        pending = []
    rows = []

    def walk(node, path):
        if isinstance(node, dict) and node:
            key = ".".join(path)
            if path and comments.get(key):  # a section with its own comment
                rows.append((key, "", comments[key]))
            for k, v in node.items():
                walk(v, path + [str(k)])
            return
        key = ".".join(path)
        if isinstance(node, (dict, list)):
            value = yaml.safe_dump(node, default_flow_style=True, width=1000).strip()
        elif isinstance(node, bool):
            value = "true" if node else "false"
        elif node is None:
            value = "null"
        elif isinstance(node, str):
            value = '""' if node == "" else node
        else:
            value = str(node)
        what = comments.get(key, "")
        if not what:  # a leaf of a flow map: its parent's comment
            for i in range(len(path) - 1, 0, -1):
                if comments.get(".".join(path[:i])):
                    what = "(see `%s`)" % ".".join(path[:i])
                    break
        rows.append((key, value, what))

    walk(doc, [])
    return rows


def crd(path="crds/slownodereports.trainscope.dev.yaml"):
    doc = yaml.safe_load(read(path))
    ver = doc["spec"]["versions"][0]
    cols = [(c["name"], c.get("jsonPath", ""), c.get("description", ""), c.get("priority", 0))
            for c in ver.get("additionalPrinterColumns", [])]
    fields = []

    def walk(node, path):
        typ = node.get("type", "")
        if typ == "array" and "items" in node:
            typ = "[]" + node["items"].get("type", "")
        fields.append((path, typ, " ".join(node.get("description", "").split())))
        props = node.get("properties") or (node.get("items") or {}).get("properties") or {}
        for k, v in props.items():
            walk(v, path + ("[]" if node.get("type") == "array" else "") + "." + k)

    status = ver["schema"]["openAPIV3Schema"]["properties"]["status"]
    walk(status, "status")
    return cols, fields


# ---- the page -------------------------------------------------------------------

def cell(s):
    return s.replace("|", "\\|").replace("\n", " ")


def crd_section(o, title, intro, cols, fields):
    """A CRD's printer columns and status fields, as crd() read them, onto o."""
    o.append("\n## %s\n" % title)
    o.append(intro)
    o.append("| column | JSON path | priority | what |")
    o.append("| --- | --- | --- | --- |")
    for name, path, what, prio in cols:
        o.append("| `%s` | `%s` | %d | %s |" % (name, path, prio, cell(what)))
    o.append("\nStatus fields:\n")
    o.append("| field | type | what |")
    o.append("| --- | --- | --- |")
    for path, typ, what in fields:
        o.append("| `%s` | %s | %s |" % (path, typ, cell(what)))


def render(bindir):
    progs = programs(bindir)
    env_where, other_where = variables()
    fams = metrics(bindir)
    config = analyzer_config(bindir)
    values = helm_values()
    cols, fields = crd()
    ncols, nfields = crd("crds/slownodes.trainscope.dev.yaml")
    o = []
    o.append("# Reference\n")
    o.append("<!-- Generated by scripts/docs-ref.py from the programs' --help, the sources, "
             "trainscope-analyzer --print-config, the chart's values.yaml and the CRD. Do not "
             "edit: make docs-ref. make docs-check fails when it is stale. -->\n")
    o.append("Every flag, environment variable, metric, analyzer parameter, chart value and "
             "SlowNodeReport field, as the programs and files of this tree have them. "
             "[Programs](#programs) · [environment variables](#environment-variables) · "
             "[metrics](#metrics) · [analyzer configuration](#analyzer-configuration) · "
             "[Helm values](#helm-values) · [SlowNodeReport fields](#slownodereport-fields) · "
             "[SlowNode fields](#slownode-fields)\n")
    o.append("## Programs\n")
    o.append("Each program's `--help`. `kubectl-trainscope` is `trainscope` under the name "
             "kubectl looks for (a link): `kubectl trainscope report` is `trainscope report --kube`.\n")
    for name, text, table in progs:
        o.append("### %s\n" % name)
        o.append("```\n%s\n```\n" % text)
        # from the program's option table where it has one, else from its --help
        fl = (["--" + t["name"] for t in table] + ["--print-options", "--help"]
              if table is not None else flags_of(text))
        o.append("Flags: %s\n" % (", ".join("`%s`" % f for f in fl) if fl else "none"))
        env = [(t["env"], t["name"]) for t in table or [] if t.get("env")]
        if env:
            o.append("Set by variables too (the flag wins): %s\n" % ", ".join(
                "`%s` (`--%s`)" % e for e in env))
    o.append("## Environment variables\n")
    o.append("`TRAINSCOPE_*` variables, and where the sources use them. A flag named beside a "
             "variable wins over it. The analyzer also takes each of its parameters as "
             "`TRAINSCOPE_ANALYZER_<KEY>` ([analyzer configuration](#analyzer-configuration)).\n")
    o.append("| variable | what | used in |")
    o.append("| --- | --- | --- |")
    for name in sorted(env_where):
        o.append("| `%s` | %s | %s |" % (name, cell(ENV[name]),
                                          ", ".join("`%s`" % f for f in sorted(env_where[name]))))
    o.append("\nOther variables the programs read:\n")
    o.append("| variable | what | used in |")
    o.append("| --- | --- | --- |")
    for name in sorted(other_where):
        o.append("| `%s` | %s | %s |" % (name, cell(OTHER[name]),
                                          ", ".join("`%s`" % f for f in sorted(other_where[name]))))
    o.append("\nThe analyzer's OTLP exporter also takes the standard "
             "`OTEL_EXPORTER_OTLP_[TRACES_]{HEADERS,CERTIFICATE,CLIENT_CERTIFICATE,CLIENT_KEY,"
             "TIMEOUT,COMPRESSION,PROTOCOL}` (`analysis/sinks/otlp_env.c`).\n")
    o.append("## Metrics\n")
    o.append("Every family a program serves on `/metrics`, from its table "
             "(`--print-metrics`, `common/metric.h`). A histogram's series are `_bucket` "
             "(labelled `le` too), `_sum` and `_count`.\n")
    o.append("| metric | type | labels | served by | help |")
    o.append("| --- | --- | --- | --- | --- |")
    for name in sorted(fams):
        prog, typ, help_, labels = fams[name]
        o.append("| `%s` | %s | %s | %s | %s |" % (name, typ, ", ".join(
            "`%s`" % l for l in labels.split(",")) if labels else "", prog, cell(help_)))
    o.append("\n## Analyzer configuration\n")
    o.append("`trainscope-analyzer --print-config`: each key, its default, the variable that "
             "overrides it, and what it does. A YAML file (`--config`) sets keys nested "
             "(`failslow: {k_sigma: 3}`); the chart's `analyzer.config` is that file. How the "
             "detectors use them: [design.md](design.md#the-analyzer-detection).\n")
    o.append("| key | default | variable | what |")
    o.append("| --- | --- | --- | --- |")
    for key, value, env, what in config:
        o.append("| `%s` | `%s` | `%s` | %s |" % (key, value, env, cell(what)))
    o.append("\n## Helm values\n")
    o.append("`helm/trainscope/values.yaml`: each value, its default, and the comment above "
             "it. `values.schema.json` refuses unknown keys.\n")
    o.append("| value | default | what |")
    o.append("| --- | --- | --- |")
    for key, value, what in values:
        o.append("| `%s` | %s | %s |" % (key, "`%s`" % cell(value) if value else "",
                                         cell(what)))
    crd_section(o, "SlowNodeReport fields", "From `crds/slownodereports.trainscope.dev.yaml`. "
                "Printer columns (`kubectl get snr`; priority 1 only with `-o wide`):\n",
                cols, fields)
    crd_section(o, "SlowNode fields", "From `crds/slownodes.trainscope.dev.yaml` (cluster-scoped, "
                "one per node jobs' verdicts named). Printer columns (`kubectl get slownodes`; "
                "priority 1 only with `-o wide`):\n", ncols, nfields)
    return "\n".join(o) + "\n"


def items(text):
    """What a reference names, by section: program flags, and table keys."""
    got, section, prog = set(), "", ""
    for line in text.split("\n"):
        if line.startswith("## "):
            section, prog = line[3:], ""
        elif line.startswith("### "):
            prog = line[4:]
        elif line.startswith("Flags: "):
            for f in re.findall(r"`(--[^`]+)`", line):
                got.add("flag %s of %s" % (f, prog))
        elif prog == "" or section != "Programs":
            m = re.match(r"^\| `([^`]+)` \|", line)
            if m and section:
                got.add("%s: %s" % (section.lower(), m.group(1)))
    return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--check", action="store_true", help="fail when docs/reference.md is stale")
    a = ap.parse_args()
    try:
        new = render(os.path.abspath(a.bin))
        fams = metrics(os.path.abspath(a.bin))
        schema = chart_schema(os.path.abspath(a.bin))
    except Fail as e:
        for line in str(e).split("\n"):
            print("docs-ref: %s" % line, file=sys.stderr)
        return 2
    path = os.path.join(ROOT, OUT)
    if not a.check:
        for rel, text in ((OUT, new), (SCHEMA, schema)):
            with open(os.path.join(ROOT, rel), "w", encoding="utf-8") as fh:
                fh.write(text)
            print("docs-ref: wrote %s" % rel)
        return 0
    bad = metric_mentions(fams)
    if read(SCHEMA) != schema:
        bad.append("%s: analyzer.config is not what trainscope-analyzer --config-schema says; "
                   "regenerate it: %s" % (SCHEMA, REGEN))
    old = read(OUT) if os.path.exists(path) else ""
    if old != new:
        was, now = items(old), items(new)
        for i in sorted(now - was):
            bad.append("%s: missing %s" % (OUT, i))
        for i in sorted(was - now):
            bad.append("%s: stale %s (the programs no longer have it)" % (OUT, i))
        if not (now - was) and not (was - now):
            oldl, newl = old.split("\n"), new.split("\n")
            n = next((i for i, (x, y) in enumerate(zip(oldl, newl)) if x != y),
                     min(len(oldl), len(newl)))
            bad.append("%s:%d differs from what the programs say now: %r (now %r)"
                       % (OUT, n + 1, oldl[n] if n < len(oldl) else "",
                          newl[n] if n < len(newl) else ""))
        bad.append("regenerate it: %s" % REGEN)
    for b in bad:
        print("docs-check: %s" % b, file=sys.stderr)
    if bad:
        return 1
    print("docs-check: %s matches the programs (%d metrics, %d parameters)"
          % (OUT, len(fams), len(analyzer_config(os.path.abspath(a.bin)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
