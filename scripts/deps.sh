#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages trainscope builds and tests with (or the packages named
# as arguments); does nothing when they are all there already.
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
# A package named NAME:ARCH of a foreign architecture (libcmocka-dev:arm64 for the aarch64
# tests) needs dpkg to know ARCH before apt-get update reads its package lists.
for p in $missing; do
	a=${p#*:}
	[ "$a" = "$p" ] || [ "$a" = "$(dpkg --print-architecture)" ] ||
		dpkg --print-foreign-architectures | grep -qx "$a" ||
		$SUDO dpkg --add-architecture "$a"
done
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing
