#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Builds the node e2e's container images without a Docker engine or a registry, as OCI
# archives: images.sh BUILD OUT. The trainscope image follows the Dockerfile's runtime
# stage: its base is Debian bookworm (debootstrap minbase, the same release as
# debian:bookworm-slim) with the packages of the Dockerfile's RUNTIME_PACKAGES, then
# `make image-root`'s tree, USER and ENTRYPOINT as the Dockerfile says. The other images:
# the pod sandbox (pause.c), CoreDNS (its Go module, built by tools.sh), NATS (nats-server
# 2.10+ from its Go module, built by tools.sh, on the same base), a trainer that runs the
# synthetic workload as root beside a musl program, and Debian bullseye (glibc 2.31) where the mirror still has it. Writes OUT/images.tar
# (one OCI layout, each image named by io.containerd.image.name) and prints the names.
# The base root filesystems are cached in ~/.cache/trainscope/rootfs (TRAINSCOPE_TOOLS);
# images.sh --rootfs BUILD makes only them (make test, in the background, before the node
# e2e: from an empty cache they are two minutes of debootstrap).
set -e
ROOTFS_ONLY=
[ "$1" = --rootfs ] && { ROOTFS_ONLY=1; shift; }
BUILD=$1 OUT=$2
[ -n "$BUILD" ] && [ -n "$OUT$ROOTFS_ONLY" ] ||
	{ echo "usage: images.sh BUILD OUT | images.sh --rootfs BUILD" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
CACHE=${TRAINSCOPE_TOOLS:-$HOME/.cache/trainscope}
TAG=e2e
log() { echo "node images: $*" >&2; }

# What the Dockerfile says of its runtime stage.
dockerfile_arg() { sed -n "s/^ARG $1=\"\(.*\)\"$/\1/p" "$root/Dockerfile"; }
PACKAGES=$(dockerfile_arg RUNTIME_PACKAGES)
USER_ID=$(awk '$1 == "USER" { u = $2 } END { print u }' "$root/Dockerfile")
ENTRY=$(sed -n 's/^ENTRYPOINT \["\([^"]*\)"\]$/\1/p' "$root/Dockerfile")
[ -n "$PACKAGES" ] && [ -n "$USER_ID" ] && [ -n "$ENTRY" ] ||
	{ log "cannot read RUNTIME_PACKAGES, USER and ENTRYPOINT from the Dockerfile"; exit 1; }
# a sanitized build (make SAN=1) needs the sanitizers' runtimes in the image too; read
# from the build's programs, which the image copies (make image-root), because --rootfs
# runs before that copy exists and must key the same root filesystem the suite uses
# (by the file's real path: its soname alone matches the arm64 cross packages too)
SAN_PACKAGES=$(ldd "$BUILD"/bin/* 2>/dev/null | awk '/lib(asan|ubsan)/ { print $3 }' |
	sort -u | xargs -r readlink -f | xargs -r -n1 dpkg -S 2>/dev/null | cut -d: -f1 |
	sort -u | tr '\n' ' ')
PACKAGES="$PACKAGES${SAN_PACKAGES:+ $SAN_PACKAGES}"
PACKAGES=${PACKAGES% }

# Debian's mirror as apt has it configured here (the only package source reachable).
mirror() {
	local m
	m=$(sed -n 's/^URIs: *\(.*debian\)\/*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
	[ -n "$m" ] || m=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
	echo "${m:-http://deb.debian.org/debian}"
}

# bookworm minbase + PACKAGES, docs and apt lists dropped (as the slim image does).
base_rootfs() {
	local key dir tar try
	key=$(echo "bookworm $PACKAGES" | sha256sum | cut -c1-12)
	tar="$CACHE/rootfs/bookworm-$key.tar"
	if [ ! -s "$tar" ]; then
		dir=$(mktemp -d "$CACHE/rootfs/tmp-XXXXXX")
		log "debootstrap bookworm minbase with $PACKAGES (about a minute, once)"
		# the mirror can fail a fetch now and then: a second and third try
		for try in 1 2 3; do
			rm -rf "$dir/root"
			debootstrap --variant=minbase --include="${PACKAGES// /,}" bookworm "$dir/root" \
				"$(mirror)" >"$dir/log" 2>&1 && break
			log "debootstrap failed (try $try of 3): $(grep -m1 '^E:' "$dir/log")"
			[ "$try" -lt 3 ] || { tail -20 "$dir/log" >&2; rm -rf "$dir"; return 1; }
		done
		rm -rf "$dir"/root/var/cache/apt/* "$dir"/root/var/lib/apt/lists/* \
			"$dir"/root/usr/share/doc "$dir"/root/usr/share/man "$dir"/root/usr/share/locale
		tar -C "$dir/root" --numeric-owner -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
		rm -rf "$dir"
	fi
	echo "$tar"
}

# Debian bullseye (glibc 2.31, older than the 2.34 this library is built against):
# the library must still load there. Empty when the mirror no longer has it.
old_glibc_rootfs() {
	local tar="$CACHE/rootfs/bullseye-minbase.tar" dir
	if [ ! -s "$tar" ]; then
		dir=$(mktemp -d "$CACHE/rootfs/tmp-XXXXXX")
		log "debootstrap bullseye minbase (glibc 2.31; about a minute, once)"
		if debootstrap --variant=minbase bullseye "$dir/root" "$(mirror)" >"$dir/log" 2>&1; then
			rm -rf "$dir"/root/var/cache/apt/* "$dir"/root/var/lib/apt/lists/* "$dir"/root/usr/share/doc
			tar -C "$dir/root" --numeric-owner -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
		else
			log "no bullseye image: $(grep -m1 '^E:' "$dir/log")"
		fi
		rm -rf "$dir"
	fi
	[ -s "$tar" ] && echo "$tar"
}

need() { command -v "$1" >/dev/null || { log "$1 is missing (Debian package $2)"; exit 1; }; }
need debootstrap debootstrap
mkdir -p "$CACHE/rootfs"
if [ -n "$ROOTFS_ONLY" ]; then
	base_rootfs >/dev/null || { log "no base root filesystem"; exit 1; }
	old_glibc_rootfs >/dev/null || true # said inside; its image is optional
	exit 0
fi
need umoci umoci
need musl-gcc musl-tools
mkdir -p "$OUT"
stage="$OUT/stage"
rm -rf "$stage" "$OUT/layout"
mkdir -p "$stage/base" "$stage/pause" "$stage/coredns" "$stage/trainer/usr/local/bin" \
	"$stage/trainer/usr/lib" "$stage/nats/usr/local/bin"
base=$(base_rootfs) || { log "no base root filesystem"; exit 1; }
tar -C "$stage/base" -xf "$base"

# the sandbox and the musl program, from this folder's sources
cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -static -o "$stage/pause/pause" "$here/pause.c"
musl-gcc -O2 -Wall -Wextra -Werror -o "$stage/trainer/usr/local/bin/musl-probe" "$here/musl_probe.c"
# /lib is a link to usr/lib in bookworm: a /lib folder in the layer would hide glibc
cp -L /lib/ld-musl-x86_64.so.1 "$stage/trainer/usr/lib/"
cp "$BUILD/bin/workload" "$stage/trainer/usr/local/bin/"
cp "$CACHE/bin/coredns" "$stage/coredns/coredns"
# the one with auth callout (2.10+), built by tools.sh: the chart's NATS authenticates
cp "$CACHE/bin/nats-server-auth" "$stage/nats/usr/local/bin/nats-server"

L="$OUT/layout"
umoci init --layout "$L"
image() { # REF DIR... : a new image of these folders, one layer each
	local ref=$1 d; shift
	umoci new --image "$L:$ref"
	for d in "$@"; do umoci insert --image "$L:$ref" "$d" / >/dev/null; done
}
image trainscope "$stage/base" "$BUILD/image"
umoci config --image "$L:trainscope" --config.user "$USER_ID" --config.entrypoint "$ENTRY" \
	--config.workingdir / >/dev/null
image trainer "$stage/base" "$stage/trainer"
umoci config --image "$L:trainer" --config.user 0 --config.cmd /usr/local/bin/workload >/dev/null
if old=$(old_glibc_rootfs); then
	mkdir -p "$stage/bullseye" && tar -C "$stage/bullseye" -xf "$old"
	image bullseye "$stage/bullseye"
	umoci config --image "$L:bullseye" --config.cmd /bin/sh >/dev/null
fi
image pause "$stage/pause"
umoci config --image "$L:pause" --config.entrypoint /pause >/dev/null
image nats "$stage/base" "$stage/nats"
umoci config --image "$L:nats" --config.user 65532 --config.entrypoint /usr/local/bin/nats-server >/dev/null
image coredns "$stage/coredns"
umoci config --image "$L:coredns" --config.entrypoint /coredns >/dev/null
umoci gc --layout "$L"

# containerd names an imported image by this annotation
python3 - "$L/index.json" "$TAG" <<'PY'
import json, sys
path, tag = sys.argv[1], sys.argv[2]
names = {"trainscope": "trainscope", "trainer": "trainscope-trainer",
         "pause": "trainscope-pause", "coredns": "trainscope-coredns", "nats": "trainscope-nats",
         "bullseye": "trainscope-bullseye"}
idx = json.load(open(path))
for m in idx["manifests"]:
    ref = m["annotations"]["org.opencontainers.image.ref.name"]
    m["annotations"]["io.containerd.image.name"] = "docker.io/library/%s:%s" % (names[ref], tag)
    print(m["annotations"]["io.containerd.image.name"])
json.dump(idx, open(path, "w"))
PY
tar -C "$L" -cf "$OUT/images.tar" .
rm -rf "$stage" "$L"
