#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# spdx-check.sh: every source file of the tree starts with its licence, an SPDX line on
# its first line (the second after a #! line): "// SPDX-License-Identifier: ID" in C,
# headers, C++, CUDA, protos and Go, "# SPDX-License-Identifier: ID" in shell, Python,
# Makefiles and the Dockerfile. ID is GPL-2.0-only for the eBPF programs (bpf/*.bpf.c,
# which declare "GPL" to the kernel), "Apache-2.0 OR GPL-2.0-only" for bpf/hostprobe.h,
# which they share with the agent, and Apache-2.0 for everything else (LICENSE).
# Prints each file that lacks it, or has another, and exits 1.
cd "$(dirname "$0")/.." || exit 2
bad=0
n=0
for f in $(git ls-files '*.c' '*.h' '*.cc' '*.cu' '*.proto' '*.go' '*.sh' '*.py' '*.mk' \
	Makefile Dockerfile .ci/run); do
	case "$f" in
	bpf/*.bpf.c) id="GPL-2.0-only" ;;
	bpf/hostprobe.h) id="Apache-2.0 OR GPL-2.0-only" ;;
	*) id="Apache-2.0" ;;
	esac
	case "$f" in
	*.c|*.h|*.cc|*.cu|*.proto|*.go) want="// SPDX-License-Identifier: $id" ;;
	*) want="# SPDX-License-Identifier: $id" ;;
	esac
	first=$(sed -n 1p "$f")
	case "$first" in
	'#!'*) line=$(sed -n 2p "$f") ;;
	*) line=$first ;;
	esac
	if [ "$line" != "$want" ]; then
		echo "docs-check: $f: its first line (after a #! line) must be: $want" >&2
		bad=$((bad + 1))
	fi
	n=$((n + 1))
done
if [ "$bad" -gt 0 ]; then
	echo "docs-check: $bad of $n source files lack their SPDX line (LICENSE says which licence)" >&2
	exit 1
fi
echo "docs-check: every one of $n source files has its SPDX line"
