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
{{- else -}}nats://{{ .Release.Name }}-nats.{{ .Release.Namespace }}.svc:4222{{- end -}}
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
{{- with $v.tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
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
