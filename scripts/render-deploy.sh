#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Renders deploy/trainscope.yaml from the chart: the trainscope Namespace (PodSecurity
# "privileged", for the agent), the CRD, then the chart with webhook.certs.job=true: no
# key is rendered (every user would share it); the webhook pod's init container makes the
# webhook's CA and certificate in the cluster and gives the CA to the
# MutatingWebhookConfiguration. So the output is the same every time and applies to an
# empty cluster, nothing else needed. --check: fail when deploy/ is out of date.
set -e
cd "$(dirname "$0")/.."
HELM=${HELM:-helm}
# --kube-version: the oldest the chart supports (a helm built without its release
# ldflags assumes 1.20 and would refuse the chart's kubeVersion)
chart=$("$HELM" template trainscope helm/trainscope --namespace trainscope --include-crds \
	--kube-version 1.29.0 --set webhook.certs.job=true)
out=$(
	cat <<'NS'
# Rendered by scripts/render-deploy.sh from helm/trainscope: do not edit.
#   kubectl apply -f deploy/trainscope.yaml
# The webhook pod's init container makes the webhook's CA and certificate in the cluster
# (no key is in this file) and keeps them in the Secret trainscope-webhook-certs across
# restarts and re-applies.
#   kubectl delete -f deploy/trainscope.yaml      # removes all of it
---
apiVersion: v1
kind: Namespace
metadata:
  name: trainscope
  labels:
    # the agent: hostPID, root with BPF capabilities, seccomp Unconfined
    pod-security.kubernetes.io/enforce: privileged
NS
	echo "$chart"
)
if [ "$1" = --check ]; then
	if diff -u deploy/trainscope.yaml <(echo "$out") >/dev/null; then
		echo "ok    deploy/trainscope.yaml matches the chart"
	else
		echo "FAIL  deploy/trainscope.yaml is out of date: run scripts/render-deploy.sh"
		exit 1
	fi
else
	echo "$out" >deploy/trainscope.yaml
	echo "wrote deploy/trainscope.yaml"
fi
