#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Puts nats-server and the shared libraries the daemons need (beyond glibc) into
# build/carry, for e2e/gpu/run.sh detect on a machine that has none of them.
set -euo pipefail
cd "$(dirname "$0")/../.."
rm -rf build/carry && mkdir -p build/carry/bin build/carry/lib
cp "$(command -v nats-server)" build/carry/bin/
# tc (iproute2), for the per-peer run's loopback delay where the machine allows one
tc=$(command -v tc || true)
[ -n "$tc" ] && cp "$tc" build/carry/bin/
for b in build/bin/trainscope build/bin/trainscope-relay build/bin/trainscope-analyzer \
	build/bin/trainscope-agent $tc; do
	ldd "$b" | awk '/=> \//{print $3}'
done | sort -u | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
	xargs -r -I{} cp -L {} build/carry/lib/
du -sh build/carry
