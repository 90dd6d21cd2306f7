#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make lint: extra compiler diagnostics over every C source (no build output), and
# shell syntax of the scripts.
set -e
BUILD=${BUILD:-build}
FLAGS="-std=c11 -D_GNU_SOURCE -fsyntax-only -Wall -Wextra -Werror -Wshadow -Wpointer-arith
-Wstrict-prototypes -Wmissing-prototypes -Wno-missing-field-initializers -Wformat=2
-Wno-format-nonliteral -I$BUILD/gen -I. -Icommon -Iinjector/preload/include -Iinjector/preload
$(pkg-config --cflags libnats libprotobuf-c yaml-0.1 jansson libmicrohttpd)"
[ -f "$BUILD/gen/proto/trainscope.pb-c.h" ] || make --no-print-directory "$BUILD/gen/proto/trainscope.pb-c.h"
n=0
for f in $(git ls-files '*.c' | grep -v '\.bpf\.c$'); do
	# tests, and the hooks that stand in for vendor functions (no header of ours declares
	# cublasGemmEx or ncclAllReduce), define functions without a prototype of ours
	case "$f" in
	*/tests/*|bench/*|injector/preload/cuda.c|injector/preload/cublas.c|injector/preload/nccl.c|\
	injector/preload/acl.c)
		extra="-Wno-missing-prototypes" ;;
	*) extra="" ;;
	esac
	# the ACL hooks are built against the Ascend headers make fetched (NPU_INC), a
	# vendor's: their warnings are not ours
	[ "$f" != injector/preload/acl.c ] || extra="$extra -isystem ${NPU_INC:?run make lint}"
	cc $FLAGS $extra "$f"
	n=$((n + 1))
done
for s in $(git ls-files '*.sh') .ci/run; do
	sh -n "$s" 2>/dev/null || bash -n "$s"
done
echo "lint: $n C files clean"
python3 scripts/parts-check.py
