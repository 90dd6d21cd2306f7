{{- define "trainscope.name" -}}{{ .Release.Name }}{{- end -}}
{{- define "trainscope.image" -}}{{ .Values.image.repository }}:{{ .Values.image.tag }}{{- end -}}
{{- define "trainscope.labels" -}}
app.kubernetes.io/name: trainscope
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}
{{- define "trainscope.natsUrl" -}}
{{- if .Values.nats.external.url -}}{{ .Values.nats.external.url }}
{{- else -}}{{ if .Values.nats.tls.enabled }}tls{{ else }}nats{{ end }}://{{ .Release.Name }}-nats.{{ .Release.Namespace }}.svc:4222{{- end -}}
{{- end -}}

{{- /* The Secret whose ca.crt NATS's clients trust: the bundled NATS pod makes it */}}
{{- define "trainscope.natsCaSecret" -}}
{{- .Values.nats.tls.caSecret | default (printf "%s-nats-tls" .Release.Name) -}}
{{- end -}}

{{- /* A NATS client's identity (container level, indented by 10): its pod's token for
       the NATS audience (renewed by the kubelet), the CA, its pod's UID (its inbox) */}}
{{- define "trainscope.natsClientEnv" -}}
{{- if .Values.nats.auth.enabled }}
- {name: TRAINSCOPE_NATS_TOKEN_FILE, value: /var/run/secrets/trainscope.dev/nats/token}
{{- end }}
{{- if .Values.nats.tls.enabled }}
- {name: TRAINSCOPE_NATS_CA, value: /etc/trainscope/nats-ca/ca.crt}
{{- end }}
- name: TRAINSCOPE_POD_UID
  valueFrom: {fieldRef: {fieldPath: metadata.uid}}
{{- end -}}
{{- define "trainscope.natsClientMounts" -}}
{{- if .Values.nats.auth.enabled }}
- {name: nats-token, mountPath: /var/run/secrets/trainscope.dev/nats, readOnly: true}
{{- end }}
{{- if .Values.nats.tls.enabled }}
- {name: nats-ca, mountPath: /etc/trainscope/nats-ca, readOnly: true}
{{- end }}
{{- end -}}
{{- /* pod level, indented by 8 */}}
{{- define "trainscope.natsClientVolumes" -}}
{{- if .Values.nats.auth.enabled }}
- name: nats-token
  projected:
    sources:
      - serviceAccountToken: {path: token, audience: {{ .Values.nats.auth.audience }}, expirationSeconds: 3600}
{{- end }}
{{- if .Values.nats.tls.enabled }}
# until NATS's pod has made it, the kubelet waits for this Secret
- name: nats-ca
  secret: {secretName: {{ include "trainscope.natsCaSecret" . }}, items: [{key: ca.crt, path: ca.crt}]}
{{- end }}
{{- end -}}

{{- /* An API token for one container only (automountServiceAccountToken is false) */}}
{{- define "trainscope.apiTokenVolume" -}}
- name: api-token
  projected:
    sources:
      - serviceAccountToken: {path: token, expirationSeconds: 3600}
      - configMap: {name: kube-root-ca.crt, items: [{key: ca.crt, path: ca.crt}]}
      - downwardAPI: {items: [{path: namespace, fieldRef: {fieldPath: metadata.namespace}}]}
{{- end -}}

{{- /* The webhook's Secret. webhook.certs.job fills one of another name and type (Opaque):
       a Secret's type cannot change, so switching modes replaces it instead. */}}
{{- define "trainscope.webhookSecret" -}}
{{ .Release.Name }}-webhook-{{ if .Values.webhook.certs.job }}certs{{ else }}tls{{ end }}
{{- end -}}

{{- /* imagePullSecrets of every pod (pod spec level, indented by 6) */}}
{{- define "trainscope.pullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- /* nodeSelector, tolerations, affinity of one component: (list $ "webhook") */}}
{{- define "trainscope.scheduling" -}}
{{- $v := index (index . 0).Values (index . 1) }}
{{- with $v.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- /* trainscope's own pods tolerate the taint its remediation sets: a degraded GPU
     node must not lose the analyzer, NATS or the webhook running there */}}
tolerations:
  - {key: trainscope.dev/degraded, operator: Exists}
{{- with $v.tolerations }}
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.affinity }}
affinity: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- /* PodSecurity "restricted", pod level (every pod but the agent's) */}}
{{- define "trainscope.restrictedPod" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  fsGroup: 65532
  seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{- /* PodSecurity "restricted", container level; nothing is written outside volumes */}}
{{- define "trainscope.restrictedContainer" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities: {drop: [ALL]}
{{- end -}}

{{- /* An alert's runbook: docs/alerts.md's section, and its URL where
metrics.alerts.runbookUrl says where that file is served. (list ALERTS ANCHOR) */ -}}
{{- define "trainscope.runbook" -}}
{{- $a := index . 0 }}{{- $anchor := index . 1 -}}
runbook: docs/alerts.md#{{ $anchor }}
{{- with $a.runbookUrl }}
runbook_url: {{ . }}#{{ $anchor }}
{{- end }}
{{- end }}
