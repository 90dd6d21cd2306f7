#!/bin/bash
# Renders deploy/trainscope.yaml from the chart (cert-manager certificates, so that the
# output is the same every time). --check: fail when deploy/ is out of date.
set -e
cd "$(dirname "$0")/../.."
HELM=${HELM:-helm}
out=$("$HELM" template trainscope helm/trainscope --namespace trainscope \
	--set webhook.certManager.enabled=true)
if [ "$1" = --check ]; then
	if diff -u deploy/trainscope.yaml <(echo "$out") >/dev/null; then
		echo "ok    deploy/trainscope.yaml matches the chart"
	else
		echo "FAIL  deploy/trainscope.yaml is out of date: run e2e/k8s/render.sh"
		exit 1
	fi
else
	echo "$out" >deploy/trainscope.yaml
	echo "wrote deploy/trainscope.yaml"
fi
