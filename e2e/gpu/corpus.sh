#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cuts what one run of e2e/gpu/run.sh record brought back into the corpus of bench/data:
#   e2e/gpu/corpus.sh DEVICE_OUT SUBDIR
# DEVICE_OUT holds js.tgz (the JetStream store) and meta.tgz (each job's command, times and
# fault marks); a nats-server of its own serves the store on loopback, and trainscope
# record writes each job's messages, with the time each reached the stream, to
# bench/data/SUBDIR/<job>.tsrec.gz. Each job's label (healthy, or the faulty rank, its
# cause and when its fault really began) replaces its entry in bench/data/labels.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 2 ] || { echo "usage: $0 DEVICE_OUT SUBDIR" >&2; exit 2; }
BUILD=${BUILD:-build}
src=$(cd "$1" && pwd) sub=$2
. e2e/lib.sh
mkdir -p "$WORK/nats" "$WORK/meta" "bench/data/$sub"
tar -C "$WORK/nats" -xzf "$src/js.tgz"
tar -C "$WORK" -xzf "$src/meta.tgz" meta
start_nats
for m in "$WORK"/meta/*.json; do
	job=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["job"])' "$m" 2>/dev/null) ||
		continue
	"$BIN/trainscope" record --nats "$NATS_URL" --job "$job" --out "bench/data/$sub/$job.tsrec.gz"
done
python3 - "$WORK/meta" "$sub" bench/data/labels.json <<'PY'
import glob, json, os, sys
meta, sub, path = sys.argv[1:]
# the cause each injected fault is: a second tenant's GEMMs on the GPU, slow dataset
# reads, busy loops on the rank's cores, a sleep in the rank's own loop
causes = {"gemm": "Compute", "slow0": "Compute", "data1": "Storage", "data2": "Storage",
          "hogs": "HostCPU", "sleep": "HostCPU"}
labels = json.load(open(path)) if os.path.exists(path) else []
for m in sorted(glob.glob(meta + "/*.json")):
    try:
        j = json.load(open(m))
    except ValueError:
        continue
    if "job" not in j or j["exit"] != 0:
        print("skipped %s: exit %s" % (m, j.get("exit")), file=sys.stderr)
        continue
    file = "%s/%s.tsrec.gz" % (sub, j["job"])
    if not os.path.exists("bench/data/" + file):
        continue
    prog, fault = j["job"].split("-")[0], j["job"].split("-")[1]
    world = len(j["gpus"].split(","))
    e = {"file": file, "job": j["job"], "program": prog, "world": world,
         "command": j["command"], "healthy": fault == "ok"}
    if fault not in ("ok", "slow0") and not j["faults"]:
        # the injector never began (a neighbour still starting when the job ended)
        e["healthy"] = True
        e["note"] = "its %s fault never began before the job ended" % fault
    elif fault != "ok":
        marks = sorted(j["faults"], key=lambda f: f["t_ns"])
        e["cause"] = causes[fault]
        e["rank"] = marks[0]["rank"] if marks else world - 1
        # slow0: the neighbour ran before the job's first step
        e["fault_ns"] = 0 if fault == "slow0" else marks[0]["t_ns"]
    labels = [l for l in labels if l["file"] != file] + [e]
labels.sort(key=lambda l: l["file"])
with open(path, "w") as f:
    json.dump(labels, f, indent=1)
    f.write("\n")
print("%d labels in %s" % (len(labels), path))
PY
