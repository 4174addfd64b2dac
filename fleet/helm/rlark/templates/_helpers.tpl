{{/* The agent's image (no shell, git or ssh) and the hub's (the same layers plus git and ssh): docs/adr/0006-images.md. */}}
{{- define "rlark.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "rlark.hubImage" -}}
{{ .Values.image.hubRepository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "rlark.labels" -}}
app.kubernetes.io/part-of: rlark
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The agent keeps its identity in rlark-system/rlark-agent-identity, so an agent release lives there. */}}
{{- define "rlark.checkNamespace" -}}
{{- if ne .Release.Namespace "rlark-system" -}}
{{- fail (printf "install the rlark chart with the agent into the namespace rlark-system (helm install --namespace rlark-system --create-namespace), not %q" .Release.Namespace) -}}
{{- end -}}
{{- end -}}

{{/* A value kept from the Secret the cluster already holds, so upgrades do not rotate it. */}}
{{- define "rlark.existingSecretData" -}}
{{- $secret := lookup "v1" "Secret" .namespace .name -}}
{{- if $secret -}}{{ index $secret.data .key | default "" }}{{- end -}}
{{- end -}}
