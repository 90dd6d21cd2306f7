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
