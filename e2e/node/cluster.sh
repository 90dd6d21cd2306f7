# SPDX-License-Identifier: Apache-2.0
# A one-node Kubernetes cluster from real parts, sourced by test-node.sh inside its own
# network and mount namespaces: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, containerd + runc + CNI bridge, kubelet, kube-proxy (iptables) and
# CoreDNS as a pod. The node's address lives on that network namespace's loopback and
# pod addresses on its bridge: nothing routes off this machine.
# Needs WORK, PIDS, wait_for and die from e2e/lib.sh, and TOOLS (the built servers).

NODE_NAME=tsnode
NODE_IP=10.200.0.1
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/16
API_IP=10.96.0.1
DNS_IP=10.96.0.10
CTRD="$WORK/containerd"
# the kubelet's cgroups live under a parent of this run's own (it removes pod cgroups it
# does not know, so two runs on one machine must not share /kubepods)
CGROUP_ROOT="/trainscope-node-${WORK##*-}"
PKI="$WORK/pki"
node_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

node_log() { echo "node e2e: $*"; }

# The namespace's own loopback and node address; netfilter sees bridged pod traffic.
node_network() {
	ip link set lo up
	ip addr add "$NODE_IP/32" dev lo
	# a route for service addresses, so that connecting to one gets as far as
	# kube-proxy's DNAT (the namespace has no default route)
	ip route add "$SERVICE_CIDR" dev lo src "$NODE_IP"
	sysctl -qw net.ipv4.ip_forward=1
	sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null ||
		die "net.bridge.bridge-nf-call-iptables is missing: the kernel needs br_netfilter"
}

node_cert() { # NAME SUBJECT [SAN]
	openssl req -newkey rsa:2048 -nodes -keyout "$PKI/$1.key" -out "$PKI/$1.csr" -subj "$2" 2>/dev/null
	openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
		-days 1 -out "$PKI/$1.crt" ${3:+-extfile <(printf 'subjectAltName=%s' "$3")} 2>/dev/null
}

node_pki() {
	mkdir -p "$PKI"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$PKI/ca.key" -out "$PKI/ca.crt" -days 1 \
		-subj /CN=trainscope-node-ca 2>/dev/null
	node_cert apiserver /CN=kube-apiserver "IP:$API_IP,IP:$NODE_IP,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost"
	node_cert kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
	openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
	openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
	printf '%s\n' 'admin-token,admin,1,"system:masters"' \
		"kubelet-token,system:node:$NODE_NAME,2,system:nodes" >"$PKI/tokens.csv"
}

node_kubeconfig() { # USER TOKEN FILE
	write_kubeconfig "https://$NODE_IP:6443" "$PKI/ca.crt" "$@"
}

node_bg() { # LOG CMD...: a server of the cluster, stopped by lib.sh's cleanup
	local log=$1; shift
	"$@" >"$WORK/$log.log" 2>&1 &
	PIDS="$! $PIDS"
}

node_control_plane() {
	node_bg etcd etcd --data-dir "$WORK/etcd" --listen-client-urls http://127.0.0.1:2379 \
		--advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380
	node_bg apiserver kube-apiserver --etcd-servers http://127.0.0.1:2379 \
		--advertise-address "$NODE_IP" --secure-port 6443 \
		--tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
		--client-ca-file "$PKI/ca.crt" --token-auth-file "$PKI/tokens.csv" \
		--authorization-mode Node,RBAC --service-account-issuer https://kubernetes.default.svc \
		--service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
		--service-cluster-ip-range "$SERVICE_CIDR" --allow-privileged=true \
		--kubelet-preferred-address-types InternalIP \
		--kubelet-client-certificate "$PKI/kubelet-client.crt" \
		--kubelet-client-key "$PKI/kubelet-client.key"
	node_kubeconfig admin admin-token "$WORK/admin.kubeconfig"
	node_kubeconfig "system:node:$NODE_NAME" kubelet-token "$WORK/kubelet.kubeconfig"
	export KUBECONFIG="$WORK/admin.kubeconfig"
	wait_for 120 sh -c 'kubectl get --raw /readyz >/dev/null' ||
		die "kube-apiserver not ready: $(tail -5 "$WORK/apiserver.log")"
	node_bg controller-manager kube-controller-manager --kubeconfig "$KUBECONFIG" \
		--authentication-kubeconfig "$KUBECONFIG" --authorization-kubeconfig "$KUBECONFIG" \
		--service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
		--use-service-account-credentials --leader-elect=false --bind-address 127.0.0.1 \
		--cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key"
	node_bg scheduler kube-scheduler --kubeconfig "$KUBECONFIG" \
		--authentication-kubeconfig "$KUBECONFIG" --authorization-kubeconfig "$KUBECONFIG" \
		--leader-elect=false --bind-address 127.0.0.1
	node_log "control plane up: kube-apiserver on $NODE_IP:6443"
}

node_containerd() {
	local RESTRICT_OOM=false
	(echo -1 >/proc/self/oom_score_adj) 2>/dev/null || RESTRICT_OOM=true
	mkdir -p "$CTRD/cni"
	cat >"$CTRD/config.toml" <<TOML
version = 2
root = "$CTRD/root"
state = "$CTRD/state"
[grpc]
  address = "$CTRD/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # some machines refuse a negative oom_score_adj (the kubelet asks -998 for sandboxes
  # and -997 for Guaranteed pods): keep containers at containerd's own value
  restrict_oom_score_adj = $RESTRICT_OOM
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    Root = "$CTRD/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$CTRD/cni"
TOML
	cat >"$CTRD/cni/10-trainscope.conflist" <<CNI
{"cniVersion": "0.4.0", "name": "trainscope-node", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]],
            "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$CTRD/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
CNI
	node_bg containerd containerd --config "$CTRD/config.toml"
	wait_for 30 ctr -a "$CTRD/containerd.sock" version >/dev/null ||
		die "containerd did not start: $(tail -5 "$WORK/containerd.log")"
}

# IMAGE_TAR...: OCI archives made by images.sh, into the namespace the CRI reads.
node_import() {
	local t
	for t in "$@"; do
		ctr -a "$CTRD/containerd.sock" -n k8s.io images import "$t" >/dev/null ||
			die "could not import $t into containerd"
	done
}

node_kubelet() {
	local h
	mkdir -p "$WORK/kubelet" "$WORK/pod-logs"
	for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
		[ -e "$h/cgroup.procs" ] && mkdir -p "$h$CGROUP_ROOT"
	done
	# a new v1 cpuset starts with no CPUs: give it its parent's
	if [ -e /sys/fs/cgroup/cpuset/cpuset.cpus ]; then
		cat /sys/fs/cgroup/cpuset/cpuset.cpus >"/sys/fs/cgroup/cpuset$CGROUP_ROOT/cpuset.cpus"
		cat /sys/fs/cgroup/cpuset/cpuset.mems >"/sys/fs/cgroup/cpuset$CGROUP_ROOT/cpuset.mems"
	fi
	: >"$WORK/resolv.conf" # no upstream: CoreDNS answers for the cluster only
	cat >"$WORK/kubelet.yaml" <<KL
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
failSwapOn: false
authentication: {anonymous: {enabled: false}, webhook: {enabled: true}, x509: {clientCAFile: "$PKI/ca.crt"}}
authorization: {mode: Webhook}
clusterDNS: [$DNS_IP]
clusterDomain: cluster.local
resolvConf: "$WORK/resolv.conf"
podLogsDir: "$WORK/pod-logs"
evictionHard: {memory.available: 100Mi, nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
syncFrequency: 10s
serializeImagePulls: false
readOnlyPort: 0
KL
	node_bg kubelet kubelet --config "$WORK/kubelet.yaml" --kubeconfig "$WORK/kubelet.kubeconfig" \
		--container-runtime-endpoint "unix://$CTRD/containerd.sock" --root-dir "$WORK/kubelet" \
		--node-ip "$NODE_IP" --hostname-override "$NODE_NAME" --cert-dir "$WORK/kubelet/pki"
	wait_for 120 sh -c "kubectl get node $NODE_NAME -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -q True" ||
		die "the node did not become Ready: $(grep -E '^E|error' "$WORK/kubelet.log" | tail -5)"
	node_log "kubelet up: node $NODE_NAME Ready ($(kubectl get node $NODE_NAME -o jsonpath='{.status.nodeInfo.containerRuntimeVersion}'))"
}

node_proxy() {
	cat >"$WORK/kube-proxy.yaml" <<KP
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$WORK/admin.kubeconfig"}
mode: iptables
clusterCIDR: $POD_CIDR
hostnameOverride: $NODE_NAME
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
KP
	node_bg kube-proxy kube-proxy --config "$WORK/kube-proxy.yaml"
	wait_for 60 sh -c "iptables -t nat -S KUBE-SERVICES 2>/dev/null | grep -q $API_IP" ||
		die "kube-proxy wrote no service rules: $(tail -5 "$WORK/kube-proxy.log")"
}

node_dns() {
	sed "s|@IMAGE@|$COREDNS_IMAGE|; s|@DNS_IP@|$DNS_IP|" "$node_here/coredns.yaml" | kubectl apply -f - >/dev/null
	kubectl -n kube-system rollout status deploy/coredns --timeout 120s >/dev/null ||
		die "CoreDNS not ready: $(kubectl -n kube-system describe pods -l k8s-app=kube-dns | tail -15)"
	node_log "CoreDNS up on $DNS_IP"
}

# Pods deleted at once (their API objects; the kubelet still stops what it can), their
# shims killed; node_cgroups_clean then kills what is left in the kubelet's cgroups and
# removes them.
node_down() {
	# at once: their containers are killed below, and a graceful stop only waits
	kubectl delete pods --all -A --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
	wait_for 60 sh -c '[ -z "$(kubectl get pods -A -o name 2>/dev/null)" ]' || true
	local p
	for p in $(pgrep -f "containerd-shim-runc-v2 -namespace k8s.io .*-address $CTRD/containerd.sock"); do
		kill -9 "$p" 2>/dev/null || true
	done
}

# Whatever still runs in this run's cgroups (a sandbox whose shim was killed) is killed,
# then the cgroups the kubelet made (cgroupfs driver) are removed.
node_cgroups_clean() {
	local h pids="find /sys/fs/cgroup/*$CGROUP_ROOT -name cgroup.procs -exec cat {} +"
	sh -c "$pids" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
	wait_for 10 sh -c "[ -z \"\$($pids 2>/dev/null)\" ]" || true
	for h in /sys/fs/cgroup/*"$CGROUP_ROOT" /sys/fs/cgroup"$CGROUP_ROOT"; do
		[ -d "$h" ] || continue
		find "$h" -depth -type d -exec rmdir {} + 2>/dev/null || true
	done
}

node_up() {
	node_network
	node_pki
	node_control_plane
	node_containerd
	node_import "$@"
	node_proxy
	node_kubelet
	node_dns
}
