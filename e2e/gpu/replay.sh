#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Analyses again, on the build machine, the streams a GPU run brought back: replay.sh
# JS.tgz [JOB...]. JS.tgz is a JetStream store (run.sh hostbound writes $OUT/js.tgz);
# a nats-server of its own serves it on loopback and a new analyzer (this build, a durable
# of its own, the defaults a user gets) reads every message in it. Prints each job's
# report (text) once every message is read. Analyzer options can be given in
# TRAINSCOPE_ANALYZER_* variables; KEEP_WORK=1 keeps the reports.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 JS.tgz [JOB...]" >&2; exit 2; }
BUILD=${BUILD:-build}
export TRAINSCOPE_ANALYZER_CHANGE_MIN_EXCESS=${TRAINSCOPE_ANALYZER_CHANGE_MIN_EXCESS:-0} \
	TRAINSCOPE_ANALYZER_CHANGE_THRESHOLD=${TRAINSCOPE_ANALYZER_CHANGE_THRESHOLD:-13} \
	TRAINSCOPE_ANALYZER_NETWORK_DRIFT=${TRAINSCOPE_ANALYZER_NETWORK_DRIFT:-0.05}
. e2e/lib.sh
store=$1; shift
mkdir -p "$WORK/nats"
tar -C "$WORK/nats" -xzf "$store"
start_nats
start_analyzer --quiet --durable "replay-$$" --snapshot-s 0
# read it all: the count of messages taken stops growing
msgs() { curl -sf -m 2 "$ANALYZER_METRICS" | awk '$1 == "trainscope_analyzer_messages_total" { print $2 }'; }
last=-1
for _ in $(seq 600); do
	now=$(msgs)
	[ "$now" = "$last" ] && [ "$now" != 0 ] && break
	last=$now
	sleep 1 # a poll's period, with a deadline of 600 of them
done
echo "replayed $last messages"
jobs=("$@")
[ ${#jobs[@]} -gt 0 ] || mapfile -t jobs < <(ls "$REPORTS" | sed -n 's/^default_\(.*\)\.json$/\1/p')
for job in "${jobs[@]}"; do
	echo "== $job"
	"$BIN/trainscope" report --dir "$REPORTS" --job "$job" || true
done
# TIMELINES=DIR: each job's timeline (trainscope timeline) written there too
if [ -n "${TIMELINES:-}" ]; then
	mkdir -p "$TIMELINES"
	for job in "${jobs[@]}"; do
		"$BIN/trainscope" timeline --nats "$NATS_URL" --job "$job" --out "$TIMELINES/$job.json" 2>&1 | tail -1
	done
fi
