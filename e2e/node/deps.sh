#!/bin/sh
# The node e2e's Debian packages: a container runtime and CNI plugins, iptables for
# kube-proxy, and what builds images without a Docker engine. Quiet when all are there.
set -e
PKGS="containerd runc containernetworking-plugins iptables umoci debootstrap musl-tools"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "node e2e: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
