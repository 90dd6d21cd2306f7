#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Builds the real servers the Kubernetes e2e needs, once, from their Go modules, into
# ~/.cache/trainscope/bin (TRAINSCOPE_TOOLS overrides): kube-apiserver, kubectl and, for
# a real node, kube-controller-manager, kube-scheduler, kubelet and kube-proxy
# (k8s.io/kubernetes with its staging modules at their published versions), CoreDNS,
# helm, Jaeger, cert-manager, an OpenTelemetry Collector and nats-server (as
# nats-server-auth: the one with auth callout, beside Debian's 2.9 that plain tests use);
# etcd, Prometheus and promtool come from Debian. Prints the folder. Exit 0 when all are
# there. Arguments name some of them only (tools.sh otelcol jaeger; tools.sh node: what
# the node e2e needs).
set -e
K8S_VERSION=${K8S_VERSION:-1.31.4}
HELM_VERSION=${HELM_VERSION:-v3.16.4}
JAEGER_VERSION=${JAEGER_VERSION:-v1.62.0}
COREDNS_VERSION=${COREDNS_VERSION:-v1.11.4}
CERT_MANAGER_VERSION=${CERT_MANAGER_VERSION:-v1.16.2}
# auth callout needs nats-server 2.10 or later; Debian's is 2.9
NATS_VERSION=${NATS_VERSION:-v2.12.15}
OTELCOL_VERSION=${OTELCOL_VERSION:-v0.165.0}
TOOLS=${TRAINSCOPE_TOOLS:-$HOME/.cache/trainscope}
BIN="$TOOLS/bin"
mkdir -p "$BIN"
# Debian's packages through the project's installer: one apt at a time across make test
DEPS="$(cd "$(dirname "$0")/../.." && pwd)/scripts/deps.sh"
# -ldflags=-s: no symbol table and no DWARF (-s implies -w since Go 1.22); linking a
# Kubernetes binary without them takes a fraction of the time, and nothing here debugs them
export GOFLAGS="-buildvcs=false -ldflags=-s" GOTOOLCHAIN=local

# each line with the seconds since the script began: a cold cache's log says what took long
log() { echo "k8s tools: [+${SECONDS}s] $*" >&2; }
# A download from the module proxy may fail once (a reset, a timeout): three tries.
retry() {
	local i
	for i in 1 2 3; do
		"$@" && return 0
		[ "$i" = 3 ] || { log "failed (try $i of 3): $*; again in $((i * 5)) s"; sleep $((i * 5)); }
	done
	return 1
}

need_etcd() {
	command -v etcd >/dev/null && return
	log "installing etcd (Debian etcd-server)"
	"$DEPS" etcd-server >&2 || return 1
	systemctl disable --now etcd >/dev/null 2>&1 || true
}

# kube-apiserver and kubectl: a wrapper module requires k8s.io/kubernetes and maps each
# staging module (which k8s.io/kubernetes lists at v0.0.0) to its published v0 release.
KUBE_CMDS="kube-apiserver kubectl kube-controller-manager kube-scheduler kubelet kube-proxy"
kube_version() { # CMD: the version a built binary reports
	case $1 in
	kubectl) "$BIN/kubectl" version --client 2>/dev/null | awk '/Client Version/ { print $3 }' ;;
	*) "$BIN/$1" --version 2>/dev/null | awk '{ print $2 }' ;;
	esac
}
need_kube() { # [CMD...]: these only (default: all of KUBE_CMDS)
	local c missing=""
	for c in ${*:-$KUBE_CMDS}; do
		[ -x "$BIN/$c" ] && [ "$(kube_version "$c")" = "v$K8S_VERSION" ] || missing="$missing $c"
	done
	[ -z "$missing" ] && return
	local minor=${K8S_VERSION#*.} src="$TOOLS/src/kube-$K8S_VERSION"
	local staging="api apiextensions-apiserver apimachinery apiserver cli-runtime client-go
		cloud-provider cluster-bootstrap code-generator component-base component-helpers
		controller-manager cri-api cri-client csi-translation-lib dynamic-resource-allocation
		endpointslice kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler
		kubectl kubelet metrics mount-utils pod-security-admission sample-apiserver
		sample-cli-plugin sample-controller"
	mkdir -p "$src"
	{
		echo "module trainscope.dev/e2e-tools"
		echo "go 1.22"
		echo "require k8s.io/kubernetes v$K8S_VERSION"
		echo "replace ("
		for m in $staging; do echo "	k8s.io/$m => k8s.io/$m v0.$minor"; done
		echo ")"
	} >"$src/go.mod"
	{
		printf 'package tools\nimport (\n\t_ "k8s.io/kubectl/pkg/cmd"\n'
		for c in $KUBE_CMDS; do
			[ "$c" = kubectl ] || printf '\t_ "k8s.io/kubernetes/cmd/%s/app"\n' "$c"
		done
		printf ')\n'
	} >"$src/tools.go"
	log "building$missing $K8S_VERSION (about 10 minutes on 2 cores, once)"
	(cd "$src" && go mod tidy >/dev/null 2>&1 && go mod download) || return 1
	# the version the binaries report (helm checks the chart's kubeVersion against it)
	local v=k8s.io/component-base/version
	local ld="-s -X $v.gitVersion=v$K8S_VERSION -X $v.gitMajor=1 -X $v.gitMinor=${minor%%.*}"
	for c in $missing; do
		(cd "$src" && go build -ldflags "$ld" -o "$BIN/$c" "k8s.io/kubernetes/cmd/$c") || return 1
		log "built $c"
	done
}

# what an API server without nodes needs (the k8s and auth e2e)
need_kube_api() { need_kube kube-apiserver kubectl; }

need_coredns() {
	[ -x "$BIN/coredns" ] && return
	log "building coredns $COREDNS_VERSION"
	# static: its image holds nothing else
	CGO_ENABLED=0 GOBIN="$BIN" go install "github.com/coredns/coredns@$COREDNS_VERSION"
}

need_helm() {
	[ -x "$BIN/helm" ] && return
	log "building helm $HELM_VERSION"
	GOBIN="$BIN" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
}

# Jaeger's go.mod has replace directives, so `go install` refuses it: a wrapper module
# requires it and carries the same replaces.
need_jaeger() {
	[ -x "$BIN/jaeger-all-in-one" ] && return
	local src="$TOOLS/src/jaeger-$JAEGER_VERSION" gomod
	log "building jaeger all-in-one $JAEGER_VERSION"
	mkdir -p "$src"
	gomod=$(cd "$src" && GOFLAGS=-mod=mod go mod download -json \
		"github.com/jaegertracing/jaeger@$JAEGER_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
	{
		echo "module trainscope.dev/e2e-jaeger"
		grep -E '^go [0-9.]+$' "$gomod"
		echo "require github.com/jaegertracing/jaeger $JAEGER_VERSION"
		# single-line and block replace directives, as they are
		awk '/^replace \($/ { inblock = 1; print; next } inblock { print; if ($0 == ")") inblock = 0; next }
			/^replace / { print }' "$gomod"
	} >"$src/go.mod"
	(cd "$src" && retry go get "github.com/jaegertracing/jaeger/cmd/all-in-one@$JAEGER_VERSION" &&
		go build -o "$BIN/jaeger-all-in-one" github.com/jaegertracing/jaeger/cmd/all-in-one)
}

# cert-manager: the proxy serves its library module but not the modules of its binaries
# (cmd/controller, cmd/cainjector), so e2e/node/certmanager/main.go is their main; the
# CRDs come from the same module, their Helm template lines dropped.
need_certmanager() {
	local crds="$TOOLS/share/cert-manager-$CERT_MANAGER_VERSION-crds.yaml"
	local main="$(dirname "$0")/../node/certmanager/main.go"
	local stamp="$CERT_MANAGER_VERSION $(sha256sum <"$main" | cut -c1-16)"
	[ -x "$BIN/cert-manager" ] && [ -s "$crds" ] &&
		[ "$(cat "$TOOLS/share/cert-manager.stamp" 2>/dev/null)" = "$stamp" ] && return
	local src="$TOOLS/src/cert-manager-$CERT_MANAGER_VERSION" dir f
	log "building cert-manager $CERT_MANAGER_VERSION (controller and cainjector)"
	mkdir -p "$src" "$TOOLS/share"
	cp "$main" "$src/"
	printf 'module trainscope.dev/e2e-certmanager\ngo 1.23\nrequire github.com/cert-manager/cert-manager %s\n' \
		"$CERT_MANAGER_VERSION" >"$src/go.mod"
	(cd "$src" && go mod tidy >/dev/null && go build -o "$BIN/cert-manager" .) || return 1
	dir=$(cd "$src" && go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager) || return 1
	for f in "$dir"/deploy/crds/crd-*.yaml; do
		# labels whose values are templates, and the comment lines holding the rest
		grep -v -e "'{{" -e '^ *# .*{{' "$f"
		echo ---
	done >"$crds"
	echo "$CERT_MANAGER_VERSION" >"$TOOLS/share/cert-manager.version"
	echo "$stamp" >"$TOOLS/share/cert-manager.stamp"
}

need_nats() {
	[ -x "$BIN/nats-server-auth" ] && [ "$("$BIN/nats-server-auth" --version 2>/dev/null)" = "nats-server: $NATS_VERSION" ] &&
		return
	log "building nats-server $NATS_VERSION"
	retry env CGO_ENABLED=0 GOBIN="$TOOLS/src/nats-$NATS_VERSION" \
		go install "github.com/nats-io/nats-server/v2@$NATS_VERSION" || return 1
	cp "$TOOLS/src/nats-$NATS_VERSION/nats-server" "$BIN/nats-server-auth"
}

# An OpenTelemetry Collector made by its builder (ocb) with what the OTLP e2e needs: the
# OTLP receiver (TLS, bearer-token auth: headers must arrive) forwarding to Jaeger.
# (The proxy lacks some contrib modules at some versions, the file exporter's among them.)
need_otelcol() {
	local v=$OTELCOL_VERSION src="$TOOLS/src/otelcol-$OTELCOL_VERSION"
	local core=go.opentelemetry.io/collector contrib=github.com/open-telemetry/opentelemetry-collector-contrib
	[ -x "$BIN/otelcol-trainscope" ] && [ "$(cat "$src/built" 2>/dev/null)" = "$v" ] && return
	log "building the OpenTelemetry Collector $v (otlp receiver, bearer-token auth, otlphttp exporter)"
	mkdir -p "$src"
	retry env GOBIN="$src" go install "$core/cmd/builder@$v" || return 1
	cat >"$src/builder.yaml" <<-EOF
	dist:
	  name: otelcol-trainscope
	  description: trainscope e2e collector
	  output_path: $src/out
	receivers:
	  - gomod: $core/receiver/otlpreceiver $v
	exporters:
	  - gomod: $core/exporter/otlphttpexporter $v
	extensions:
	  - gomod: $contrib/extension/bearertokenauthextension $v
	EOF
	(cd "$src" && retry ./builder --config builder.yaml >builder.log 2>&1) ||
		{ tail -20 "$src/builder.log" >&2; return 1; }
	cp "$src/out/otelcol-trainscope" "$BIN/" && echo "$v" >"$src/built"
}

# Prometheus and promtool (the chart's alert rules' unit tests) from Debian's package, as
# etcd: a release built, not minutes of Go builds on a cold cache (the e2e scrapes, queries
# the HTTP API and runs promtool's rule tests, which 2.42 does as 3.x does). The service
# the package enables is stopped: the e2e starts its own on free ports.
need_prometheus() {
	[ -L "$BIN/prometheus" ] && [ -L "$BIN/promtool" ] && [ -x /usr/bin/prometheus ] && return
	if ! [ -x /usr/bin/prometheus ] || ! [ -x /usr/bin/promtool ]; then
		log "installing prometheus and promtool (Debian prometheus)"
		"$DEPS" prometheus >&2 || return 1
		systemctl disable --now prometheus >/dev/null 2>&1 || true
	fi
	ln -sfn /usr/bin/prometheus "$BIN/prometheus" && ln -sfn /usr/bin/promtool "$BIN/promtool"
}

# What the node e2e needs: make test builds it first (its cluster is the longest stage, so
# it starts as soon as the suites before it are done), and the rest (Jaeger, the
# Collector, Prometheus: the observe and k8s suites beside it) after.
need_node() {
	need_etcd && need_helm && need_kube && need_nats && need_coredns && need_certmanager
}

command -v go >/dev/null || { log "go is not installed"; exit 1; }
if [ $# -gt 0 ]; then # only these: tools.sh otelcol jaeger; tools.sh node
	for t in "$@"; do "need_$t"; done
	echo "$BIN"
	exit 0
fi
log "checking what is built under $BIN"
need_node
need_jaeger
need_otelcol
need_prometheus
log "all built"
echo "$BIN"
