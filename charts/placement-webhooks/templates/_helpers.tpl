{{/* The chart name, shortened for label values. */}}
{{- define "placement-webhooks.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: names every namespaced and cluster-scoped object. */}}
{{- define "placement-webhooks.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "placement-webhooks.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The Deployment's selector. Deployment.spec.selector is immutable, so this pair can never
change once released: a change makes every `helm upgrade` fail. No pod but a webhook pod
carries both labels (the audit, hook and test pods have names of their own).
*/}}
{{- define "placement-webhooks.selectorLabels" -}}
app.kubernetes.io/name: {{ include "placement-webhooks.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
What selects the webhook pods everywhere else (Service, PodDisruptionBudget, NetworkPolicy,
anti-affinity, spread): the Deployment's selector plus the component. Pinned by a test; it
must not change after 1.0 (a Service or budget selecting other pods counts them as webhook
replicas and routes admission calls to them).
*/}}
{{- define "placement-webhooks.webhookSelectorLabels" -}}
{{ include "placement-webhooks.selectorLabels" . }}
app.kubernetes.io/component: webhook
{{- end }}

{{/*
The labels of a pod that is not a webhook pod (.component: audit, probe, test): its own
name, so neither the Deployment's selector nor the webhook selector can ever match it.
*/}}
{{- define "placement-webhooks.otherPodLabels" -}}
app.kubernetes.io/name: {{ printf "%s-%s" (include "placement-webhooks.name" .root) .component | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/part-of: {{ include "placement-webhooks.name" .root }}
{{- end }}

{{- define "placement-webhooks.labels" -}}
helm.sh/chart: {{ include "placement-webhooks.chart" . }}
{{ include "placement-webhooks.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "placement-webhooks.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "placement-webhooks.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The TLS mode in force. "auto" (the default) is "managed" for a new install, and "generate"
for an upgrade of a release that already runs on generate (its Secret <fullname>-tls holds
a chain): that release keeps its CA, where switching on an upgrade would refuse fail-closed
calls until every old pod is gone (docs/operations.md, "TLS modes"). Offline renders
(`helm template`, GitOps tools) see no Secret and always render "managed", so two renders
are identical.
*/}}
{{- define "placement-webhooks.tlsMode" -}}
{{- $mode := .Values.tls.mode }}
{{- if eq $mode "auto" }}
{{- $mode = "managed" }}
{{- if .Release.IsUpgrade }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (printf "%s-tls" (include "placement-webhooks.fullname" .)) }}
{{- if and $existing (hasKey ($existing.data | default dict) "ca.crt") }}
{{- $mode = "generate" }}
{{- end }}
{{- end }}
{{- end }}
{{- $mode }}
{{- end }}

{{/* The Secret holding tls.crt and tls.key that the pods mount. */}}
{{- define "placement-webhooks.tlsSecretName" -}}
{{- $mode := include "placement-webhooks.tlsMode" . }}
{{- if eq $mode "secret" }}
{{- required "tls.secret.name is required when tls.mode is secret" .Values.tls.secret.name }}
{{- else if eq $mode "managed" }}
{{- printf "%s-certs" (include "placement-webhooks.fullname" .) }}
{{- else }}
{{- printf "%s-tls" (include "placement-webhooks.fullname" .) }}
{{- end }}
{{- end }}

{{/* Every DNS name the Service answers to inside the cluster. */}}
{{- define "placement-webhooks.dnsNames" -}}
{{- $svc := include "placement-webhooks.fullname" . }}
{{- $ns := .Release.Namespace }}
{{- toYaml (list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns)) }}
{{- end }}

{{/*
The fewest replicas that run: replicaCount, or with autoscaling the HPA's minimum. That
minimum is raised to one above an integer PodDisruptionBudget minAvailable, so scaling in
never leaves a budget that allows no eviction at all (node drains would hang).
*/}}
{{- define "placement-webhooks.minReplicas" -}}
{{- if .Values.autoscaling.enabled }}
{{- $min := int .Values.autoscaling.minReplicas }}
{{- $budget := .Values.podDisruptionBudget.minAvailable }}
{{- if and .Values.podDisruptionBudget.enabled (kindIs "float64" $budget) }}
{{- $min = max $min (add1 (int $budget)) }}
{{- else if and .Values.podDisruptionBudget.enabled (kindIs "int" $budget) }}
{{- $min = max $min (add1 $budget) }}
{{- end }}
{{- $min }}
{{- else }}
{{- .Values.replicaCount }}
{{- end }}
{{- end }}

{{/*
The image reference: [registry/]repository, then @digest when one is given, else :tag (the
chart's appVersion by default). global.imageRegistry wins over image.registry.
*/}}
{{- define "placement-webhooks.image" -}}
{{- $image := .Values.image }}
{{- $registry := ((.Values.global | default dict).imageRegistry | default $image.registry) | default "" }}
{{- $repository := $image.repository }}
{{- if $registry }}{{ $repository = printf "%s/%s" (trimSuffix "/" $registry) $repository }}{{ end }}
{{- if $image.digest }}
{{- printf "%s@%s" $repository $image.digest }}
{{- else }}
{{- printf "%s:%s" $repository ($image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/* "true" when the pods use a priority class the API server limits to namespaces with a matching quota. */}}
{{- define "placement-webhooks.criticalClass" -}}
{{- if has .Values.priorityClassName (list "system-cluster-critical" "system-node-critical") }}true{{ end }}
{{- end }}

{{/*
"true" while installing with install.failOpenUntilReady: every webhook is rendered with
failurePolicy Ignore, and the post-install hook (templates/probe.yaml) sets the configured
policies once a review has round-tripped.
*/}}
{{- define "placement-webhooks.failOpen" -}}
{{- if and .Values.install.failOpenUntilReady .Release.IsInstall }}true{{ end }}
{{- end }}

{{/*
"WEBHOOK=POLICY" for every webhook whose configured failurePolicy is not Ignore: what the
install hook sets once the server answers (a YAML list).
*/}}
{{- define "placement-webhooks.failClosedWebhooks" -}}
{{- $out := list }}
{{- range $phase := list "mutate" "validate" }}
{{- $hooks := include "placement-webhooks.webhooks" (dict "root" $ "phase" $phase) | fromYamlArray }}
{{- range $hooks }}
{{- if ne .failurePolicy "Ignore" }}{{ $out = append $out (printf "%s=%s" .name .failurePolicy) }}{{ end }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{/* The pod spec fields of the probe Job and the test Pod (.root, .account). */}}
{{- define "placement-webhooks.probePod" -}}
serviceAccountName: {{ .account }}
automountServiceAccountToken: true
restartPolicy: Never
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  seccompProfile:
    type: RuntimeDefault
{{- with .root.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The probe container, less its name and arguments. */}}
{{- define "placement-webhooks.probeContainer" -}}
image: {{ include "placement-webhooks.image" . | quote }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
resources:
  {{- toYaml .Values.install.resources | nindent 2 }}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  runAsNonRoot: true
  privileged: false
  capabilities:
    drop: ["ALL"]
  seccompProfile:
    type: RuntimeDefault
{{- end }}

{{/* "true" when the post-install hook renders: a fail-open install with webhooks to switch. */}}
{{- define "placement-webhooks.installHook" -}}
{{- if and (include "placement-webhooks.failOpen" .) (include "placement-webhooks.failClosedWebhooks" . | fromYamlArray) }}true{{ end }}
{{- end }}
