{{/*
The name of every object: the release name when it already contains the chart's name (`helm install
tolerator …` gives `tolerator`, the names deploy/ uses), else <release>-tolerator. 63 characters:
the longest DNS label, which a Service name must be.
*/}}
{{- define "tolerator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tolerator.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tolerator.labels" -}}
{{ include "tolerator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "tolerator.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding tls.crt and tls.key (and ca.crt): cert-manager's or tolerator's own, or the one provided. */}}
{{- define "tolerator.tlsSecretName" -}}
{{- if eq .Values.certificates.mode "existingSecret" -}}
{{- required "tls.existingSecret is required with certificates.mode=existingSecret" .Values.tls.existingSecret -}}
{{- else -}}
{{- printf "%s-tls" (include "tolerator.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "tolerator.policiesConfigMapName" -}}
{{- .Values.policies.existingConfigMap | default (printf "%s-policies" (include "tolerator.fullname" .)) -}}
{{- end -}}

{{/* The name the API server dials for clientConfig.service, and so the name the certificate is for. */}}
{{- define "tolerator.serviceHost" -}}
{{- printf "%s.%s.svc" (include "tolerator.fullname" .) .Release.Namespace -}}
{{- end -}}

{{/*
What both webhooks share: where the API server sends the review, which namespaces it reviews, and
which objects it skips. The argument is a dict of the root context (root) and the path.
*/}}
{{- define "tolerator.webhookClientConfig" -}}
clientConfig:
  service:
    name: {{ include "tolerator.fullname" .root }}
    namespace: {{ .root.Release.Namespace }}
    path: {{ .path }}
    port: 443
  {{- if eq .root.Values.certificates.mode "existingSecret" }}
  caBundle: {{ required "tls.caBundle is required with certificates.mode=existingSecret" .root.Values.tls.caBundle }}
  {{- end }}
  {{- /* selfManaged: no caBundle here; tolerator writes it, and Helm's three-way merge leaves it alone on upgrade (the chart never sets the field). */}}
{{- end -}}

{{- define "tolerator.webhookSelectors" -}}
{{- /* A release in "default" is refused by templates/namespace-guard.yaml. */}}
namespaceSelector:
  matchExpressions:
    # Never reviewed, so that failurePolicy Fail cannot lock the cluster or tolerator itself out.
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values:
        {{- toYaml (concat (list "kube-system" "kube-node-lease" .Release.Namespace) .Values.webhooks.excludedNamespaces | uniq) | nindent 8 }}
    - key: {{ .Values.webhooks.optOutLabel | quote }}
      operator: NotIn
      values: ["true"]
matchConditions:
  # Mirror pods created by a kubelet (user system:node:<name> in group system:nodes) are never sent: see deploy/base.
  - name: exclude-mirror-pods
    expression: >-
      request.resource.resource != 'pods' ||
      !has(object.metadata.annotations) ||
      !('kubernetes.io/config.mirror' in object.metadata.annotations) ||
      !(request.userInfo.username.startsWith('system:node:') && has(request.userInfo.groups) && 'system:nodes' in request.userInfo.groups)
{{- end -}}

{{- define "tolerator.webhookAnnotations" -}}
{{- if eq .Values.certificates.mode "certManager" }}
annotations:
  # cainjector keeps every webhook's caBundle equal to the serving Secret's ca.crt.
  cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/{{ include "tolerator.fullname" . }}-serving
{{- end }}
{{- end -}}
