#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages trainscope builds and tests with (or the packages named
# as arguments); does nothing when they are all there already. make test installs from
# more than one process at once (its background jobs, its stages): one apt at a time, the
# others waiting for it (flock), as for an apt run by someone else (DPkg::Lock::Timeout).
set -e
PKGS="$*"
[ -n "$PKGS" ] || PKGS="build-essential pkg-config libnats-dev nats-server libprotobuf-c-dev protobuf-c-compiler
libyaml-dev libjansson-dev libmicrohttpd-dev libcmocka-dev libcurl4-openssl-dev libssl-dev curl
clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev python3 python3-yaml bc openssl musl-tools"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
if command -v flock >/dev/null; then
	exec 9>"${TMPDIR:-/tmp}/trainscope-apt.lock"
	flock -w 900 9 || { echo "deps: another install held the lock 15 minutes" >&2; exit 1; }
fi
# A package named NAME:ARCH of a foreign architecture (libcmocka-dev:arm64 for the aarch64
# tests) needs dpkg to know ARCH before apt-get update reads its package lists.
for p in $missing; do
	a=${p#*:}
	[ "$a" = "$p" ] || [ "$a" = "$(dpkg --print-architecture)" ] ||
		dpkg --print-foreign-architectures | grep -qx "$a" ||
		$SUDO dpkg --add-architecture "$a"
done
$SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends $missing
