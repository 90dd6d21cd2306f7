#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# An Ascend NPU job on the ACL and HCCL test doubles (no NPU here), through the real
# pipeline: npudrive's 4 rank processes under the preload (`trainscope run`: the relay,
# nats-server 2.9 from Debian, the analyzer). Each rank launches kernels on its compute
# stream and all-reduces on its HCCL stream; the doubles' device runs in real time and
# an all-reduce ends only after its last member got there, so the others wait for a
# slow rank as on real hardware.
#   - one rank's kernels 1.8x slower from step 40: that rank is named, cause Compute;
#   - one rank never enters step 60's all-reduce: the others' hang watch fires inside
#     HCCL, and the report says Hang, names that rank, the op and its number.
set -e
BUILD=${BUILD:-build}
. "$(dirname "$0")/lib.sh"
DRIVE="$BUILD/test/double/npudrive"
[ -x "$DRIVE" ] || die "$DRIVE is not built (make all \$(TESTS))"

start_nats
start_analyzer --quiet

# ---- a slow NPU ----------------------------------------------------------------------
TSD_NPU_JOB=npu-slow "$BIN/trainscope" run --nats "$NATS_URL" --job npu-slow -- \
	"$DRIVE" job --ranks 4 --steps 200 --kernels 10 --kernel-us 1000 \
	--slow-rank 2 --slow-step 40 --slow-factor 1.8 2>"$WORK/npu-slow.log" ||
	die "job npu-slow failed: $(tail -5 "$WORK/npu-slow.log")"
wait_report npu-slow 199
expect "NPU job, rank 2's kernels 1.8x slower: rank 2 named, cause Compute" \
	python3 "$(dirname "$0")/check_report.py" "$WORK/npu-slow.json" 2 Compute

# ---- a rank that never enters the all-reduce -----------------------------------------
# The waiting ranks' hang watch fires after 2 s; their stream synchronize gives up after
# 8 s (the double's stand-in for HCCL_EXEC_TIMEOUT), so the job ends, abnormally.
set +e
TSD_NPU_JOB=npu-hang TSD_NPU_SYNC_TIMEOUT_MS=8000 TRAINSCOPE_HANG_TIMEOUT_MS=2000 \
	"$BIN/trainscope" run --nats "$NATS_URL" --job npu-hang -- \
	"$DRIVE" job --ranks 4 --steps 200 --hang-rank 3 --hang-step 60 2>"$WORK/npu-hang.log"
rc=$?
set -e
[ "$rc" -ne 0 ] || die "job npu-hang ended well: the hang did not happen"
hang_named() {
	"$BIN/trainscope" report --dir "$REPORTS" --job npu-hang --namespace default --json \
		>"$WORK/npu-hang.json" && python3 - "$WORK/npu-hang.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["status"]
h = s.get("hang", {})
print("      state %s, hang %s" % (s["state"], {k: v for k, v in h.items() if k != "stacks"}))
sys.exit(0 if s["state"] == "Hang" and h.get("culprits") == [3] and h.get("op") == "AllReduce"
         and h.get("seq") == 61 and h.get("waiting") == 3 else 1)
PY
}
# on a miss, the report as it stands is printed (the check's own line)
hang_reported() { wait_for 30 hang_named >/dev/null || { hang_named; return 1; }; hang_named; }
expect "NPU job, rank 3 never enters an HCCL all-reduce: Hang, rank 3 named, AllReduce seq 61" \
	hang_reported
[ "$fails" -eq 0 ] || { cp "$ANALYZER_LOG" /tmp/test-npu-analyzer.log 2>/dev/null; exit 1; }
