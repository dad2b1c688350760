{{- define "cicada.name" -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{- define "cicada.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "cicada.labels" -}}
app.kubernetes.io/name: cicada
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "cicada.scenarioConfigMap" -}}
{{- .Values.scenarioConfigMap | default (printf "%s-scenario" (include "cicada.name" .)) -}}
{{- end -}}

{{- define "cicada.volume" -}}
- name: scenario
  configMap:
    name: {{ include "cicada.scenarioConfigMap" . }}
{{- end -}}
