{{/*
The plugin table (files/plugins.yaml): what each plugin handles, in chain order.
*/}}
{{- define "placement-webhooks.pluginTable" -}}
{{- .Files.Get "files/plugins.yaml" }}
{{- end }}

{{/* "true" when plugin .name is enabled in the values, else empty. */}}
{{- define "placement-webhooks.enabled" -}}
{{- $settings := index .root.Values.plugins .name | default dict }}
{{- if $settings.enabled }}true{{ end }}
{{- end }}

{{/*
Admission rules for one webhook, as a YAML list: what the enabled plugins' halves of .phase
handle (only plugin .only when set). A resource handled by several plugins is listed once
with the union of their operations; resources of one API group with the same operations
share a rule; rules are ordered by "group|operations". webhooks/deploy.py rules() computes
the same list from the server's registry.
*/}}
{{- define "placement-webhooks.rules" -}}
{{- $root := .root }}
{{- $phase := .phase }}
{{- $only := .only | default "" }}
{{- $operations := list "CREATE" "UPDATE" "DELETE" "CONNECT" }}
{{- $versions := dict "" "v1" "apps" "v1" "batch" "v1" }}
{{- $byResource := dict }}
{{- range (include "placement-webhooks.pluginTable" $root | fromYaml).plugins }}
{{- if and (hasKey . $phase) (or (not $only) (eq $only .name)) (include "placement-webhooks.enabled" (dict "root" $root "name" .name)) }}
{{- range $resource, $ops := index . $phase }}
{{- $set := dict }}
{{- if hasKey $byResource $resource }}{{ $set = index $byResource $resource }}{{ end }}
{{- range $ops }}{{ $_ := set $set . true }}{{ end }}
{{- $_ := set $byResource $resource $set }}
{{- end }}
{{- end }}
{{- end }}
{{- $groups := dict }}
{{- range $key, $set := $byResource }}
{{- $group := "" }}
{{- $resource := $key }}
{{- if contains "/" $key }}
{{- $group = first (splitList "/" $key) }}
{{- $resource = last (splitList "/" $key) }}
{{- end }}
{{- if not (hasKey $versions $group) }}
{{- fail (printf "no API version known for group %q (resource %s)" $group $key) }}
{{- end }}
{{- $ops := list }}
{{- range $operations }}{{ if hasKey $set . }}{{ $ops = append $ops . }}{{ end }}{{ end }}
{{- $groupKey := printf "%s|%s" $group (join "," $ops) }}
{{- if hasKey $groups $groupKey }}
{{- $rule := index $groups $groupKey }}
{{- $_ := set $rule "resources" (append $rule.resources $resource) }}
{{- else }}
{{- $_ := set $groups $groupKey (dict "apiGroups" (list $group) "apiVersions" (list (index $versions $group)) "operations" $ops "resources" (list $resource)) }}
{{- end }}
{{- end }}
{{- $rules := list }}
{{- range $groupKey, $rule := $groups }}{{ $rules = append $rules $rule }}{{ end }}
{{- toYaml $rules }}
{{- end }}

{{/*
CEL conditions the API server evaluates before calling a webhook: skip mirror pods, requests
made by kubelets and the suite's own objects (webhooks/deploy.py match_conditions()).
*/}}
{{- define "placement-webhooks.matchConditions" -}}
- name: not-a-mirror-pod
  expression: "request.resource.resource != 'pods' || !has(object.metadata.annotations) || !('kubernetes.io/config.mirror' in object.metadata.annotations)"
- name: not-from-a-kubelet
  expression: "!('system:nodes' in request.userInfo.groups)"
- name: not-the-suite-itself
  expression: {{ printf "request.namespace != '%s' || !has(object.metadata.labels) || !('app.kubernetes.io/name' in object.metadata.labels) || object.metadata.labels['app.kubernetes.io/name'] != '%s'" .Release.Namespace (include "placement-webhooks.name" .) | quote }}
{{- end }}

{{/*
One webhook entry. Input: root, phase (mutate|validate), name, path, rules (YAML), caBundle
(base64, may be empty: left out).
*/}}
{{- define "placement-webhooks.webhook" -}}
{{- $root := .root }}
{{- $values := $root.Values.webhooks }}
- name: {{ .name }}
  admissionReviewVersions: ["v1"]
  clientConfig:
    service:
      name: {{ include "placement-webhooks.fullname" $root }}
      namespace: {{ $root.Release.Namespace }}
      path: {{ .path }}
      port: {{ $root.Values.service.port }}
    {{- with .caBundle }}
    caBundle: {{ . }}
    {{- end }}
  rules:
    {{- .rules | nindent 4 }}
  {{- if eq .phase "mutate" }}
  failurePolicy: {{ $values.mutating.failurePolicy }}
  {{- else }}
  failurePolicy: {{ $values.validating.failurePolicy }}
  {{- end }}
  matchPolicy: Equivalent
  namespaceSelector:
    matchExpressions:
      - key: kubernetes.io/metadata.name
        operator: NotIn
        values:
          {{- toYaml (uniq (prepend $values.excludeNamespaces $root.Release.Namespace)) | nindent 10 }}
  {{- if $values.matchConditions.enabled }}
  matchConditions:
    {{- include "placement-webhooks.matchConditions" $root | nindent 4 }}
  {{- end }}
  sideEffects: None
  timeoutSeconds: {{ $values.timeoutSeconds }}
  {{- if eq .phase "mutate" }}
  reinvocationPolicy: {{ $values.mutating.reinvocationPolicy }}
  {{- end }}
{{- end }}

{{/* The webhook entries of one configuration (.phase), or "" when none would match anything. */}}
{{- define "placement-webhooks.webhooks" -}}
{{- $root := .root }}
{{- $phase := .phase }}
{{- $fullname := include "placement-webhooks.fullname" $root }}
{{- if $root.Values.webhooks.perPlugin }}
{{- range (include "placement-webhooks.pluginTable" $root | fromYaml).plugins }}
{{- $rules := include "placement-webhooks.rules" (dict "root" $root "phase" $phase "only" .name) }}
{{- if ne $rules "[]" }}
{{ include "placement-webhooks.webhook" (dict "root" $root "phase" $phase "name" (printf "%s.%s.%s.svc" .name $phase $fullname) "path" (printf "/%s/%s" $phase .name) "rules" $rules "caBundle" $.caBundle) }}
{{- end }}
{{- end }}
{{- else }}
{{- $rules := include "placement-webhooks.rules" (dict "root" $root "phase" $phase) }}
{{- if ne $rules "[]" }}
{{ include "placement-webhooks.webhook" (dict "root" $root "phase" $phase "name" (printf "%s.%s.svc" $phase $fullname) "path" (printf "/%s" $phase) "rules" $rules "caBundle" .caBundle) }}
{{- end }}
{{- end }}
{{- end }}
