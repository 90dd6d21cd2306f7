# SPDX-License-Identifier: Apache-2.0
# Sourced by the API-only e2e tests (after lib.sh, with the Kubernetes tools on PATH):
# a CA and serving certificates (serving_cert NAME: IP 127.0.0.1 and localhost), etcd
# and kube-apiserver on free loopback ports with RBAC, static tokens for the users admin
# (system:masters), trainscope-analyzer, trainscope-natsauth and trainscope-webhook, ServiceAccount tokens
# signed by sa.key; kubeconfig USER TOKEN FILE; KUBECONFIG set to the admin's.

# ---- certificates: one CA for the API server, the webhook and their clients ----------
pki="$WORK/pki"
mkdir -p "$pki"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -out "$pki/ca.crt" -days 1 \
	-subj /CN=trainscope-e2e-ca 2>/dev/null
serving_cert() { # NAME
	openssl req -newkey rsa:2048 -nodes -keyout "$pki/$1.key" -out "$pki/$1.csr" -subj "/CN=$1" 2>/dev/null
	openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
		-days 1 -out "$pki/$1.crt" -extfile <(printf "subjectAltName=IP:127.0.0.1,DNS:localhost") 2>/dev/null
}
serving_cert apiserver
openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
printf 'admin-token,admin,1,"system:masters"\nanalyzer-token,trainscope-analyzer,2,\nnatsauth-token,trainscope-natsauth,3,\nwebhook-token,trainscope-webhook,4,\n' \
	>"$pki/tokens.csv"

# ---- etcd and kube-apiserver ------------------------------------------------------------
etcd_port=$(free_port); peer_port=$(free_port); api_port=$(free_port)
etcd --data-dir "$WORK/etcd" --listen-client-urls "http://127.0.0.1:$etcd_port" \
	--advertise-client-urls "http://127.0.0.1:$etcd_port" \
	--listen-peer-urls "http://127.0.0.1:$peer_port" >"$WORK/etcd.log" 2>&1 &
PIDS="$PIDS $!"
kube-apiserver --etcd-servers "http://127.0.0.1:$etcd_port" --bind-address 127.0.0.1 \
	--advertise-address 127.0.0.1 --secure-port "$api_port" \
	--tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
	--client-ca-file "$pki/ca.crt" --token-auth-file "$pki/tokens.csv" \
	--authorization-mode RBAC --service-account-issuer https://kubernetes.default.svc \
	--service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
	--service-cluster-ip-range 10.96.0.0/16 --disable-admission-plugins ServiceAccount \
	--allow-privileged=true >"$WORK/apiserver.log" 2>&1 &
PIDS="$PIDS $!"
kubeconfig() { # USER TOKEN FILE
	write_kubeconfig "https://127.0.0.1:$api_port" "$pki/ca.crt" "$@"
}
kubeconfig admin admin-token "$WORK/admin.kubeconfig"
kubeconfig trainscope-analyzer analyzer-token "$WORK/analyzer.kubeconfig"
export KUBECONFIG="$WORK/admin.kubeconfig"
wait_for 90 sh -c 'kubectl get --raw /readyz >/dev/null' || die "kube-apiserver not ready: $(tail -5 "$WORK/apiserver.log")"
echo "k8s e2e: kube-apiserver ready on 127.0.0.1:$api_port"

