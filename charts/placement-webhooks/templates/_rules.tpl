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
"true" when half .phase of plugin .name is served by a webhook: always, unless
native.enabled leaves it to the native policies made for the cluster's release (native.yaml
beside them, templates/_releases.tpl, templates/native.yaml).
With native.enabled the kept halves share /mutate and /validate, where serve --native runs
just them, as one chain.
*/}}
{{- define "placement-webhooks.webhookServes" -}}
{{- if not .root.Values.native.enabled }}true
{{- else if has (printf "%s/%s" .name .phase) (.root.Files.Get (printf "%s/native.yaml" (include "placement-webhooks.release" .root | fromYaml).native) | fromYaml).webhook }}true
{{- end }}
{{- end }}

{{/*
"true" when half .phase of plugin table row .row checks anything under the values: a
validating half with validateActive is on only when its key is set and true in the plugin's
values, or, absent, when its default is (webhooks/install/webhookconfig.py inactive_halves()).
*/}}
{{- define "placement-webhooks.halfActive" -}}
{{- $active := .row.validateActive }}
{{- if or (ne .phase "validate") (not $active) }}true
{{- else }}
{{- $settings := index .root.Values.plugins .row.name | default dict }}
{{- if hasKey $settings $active.key }}{{ if index $settings $active.key }}true{{ end }}
{{- else if $active.default }}true
{{- end }}
{{- end }}
{{- end }}

{{/*
The CEL condition under which a pod can get an answer from the validating halves the webhook
serves (only plugin .only when set), or "" when any pod can: each half's validatePods, ORed;
other resources are always sent (webhooks/install/webhookconfig.py judged_pods_condition()).
*/}}
{{- define "placement-webhooks.judgedPods" -}}
{{- $root := .root }}
{{- $only := .only | default "" }}
{{- $parts := list }}
{{- $every := false }}
{{- range (include "placement-webhooks.pluginTable" $root | fromYaml).plugins }}
{{- if and (hasKey . "validate") (or (not $only) (eq $only .name)) (include "placement-webhooks.enabled" (dict "root" $root "name" .name)) (include "placement-webhooks.webhookServes" (dict "root" $root "name" .name "phase" "validate")) (include "placement-webhooks.halfActive" (dict "root" $root "row" . "phase" "validate")) (hasKey .validate "pods") }}
{{- if hasKey . "validatePods" }}{{ $parts = append $parts (printf "(%s)" .validatePods) }}{{ else }}{{ $every = true }}{{ end }}
{{- end }}
{{- end }}
{{- if and $parts (not $every) }}request.resource.resource != 'pods' || {{ join " || " $parts }}{{ end }}
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
{{- /* "exclude": every resource but Nodes; "only": Nodes alone (webhooks/install/webhookconfig.py NODE_RESOURCES). */}}
{{- $nodes := .nodes | default "" }}
{{- $operations := list "CREATE" "UPDATE" "DELETE" "CONNECT" }}
{{- $versions := dict "" "v1" "apps" "v1" "batch" "v1" }}
{{- $byResource := dict }}
{{- range (include "placement-webhooks.pluginTable" $root | fromYaml).plugins }}
{{- if and (hasKey . $phase) (or (not $only) (eq $only .name)) (include "placement-webhooks.enabled" (dict "root" $root "name" .name)) (include "placement-webhooks.webhookServes" (dict "root" $root "name" .name "phase" $phase)) (include "placement-webhooks.halfActive" (dict "root" $root "row" . "phase" $phase)) }}
{{- range $resource, $ops := index . $phase }}
{{- if not (or (and (eq $nodes "exclude") (eq $resource "nodes")) (and (eq $nodes "only") (ne $resource "nodes"))) }}
{{- $set := dict }}
{{- if hasKey $byResource $resource }}{{ $set = index $byResource $resource }}{{ end }}
{{- range $ops }}{{ $_ := set $set . true }}{{ end }}
{{- $_ := set $byResource $resource $set }}
{{- end }}
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
CEL conditions the API server evaluates before calling a webhook (.nodes: the Node webhook's):
the value-independent ones come from files/match-conditions.yaml, the rest are built here, in
the order webhooks/install/webhookconfig.py match_conditions() gives them.
*/}}
{{- define "placement-webhooks.matchConditions" -}}
{{- $root := .root }}
{{- $settings := $root.Values.webhooks.matchConditions }}
{{- $fixed := $root.Files.Get "files/match-conditions.yaml" | fromYaml }}
{{- $conditions := list $fixed.mirrorPod $fixed.kubelet }}
{{- $own := printf "request.namespace != '%s' || !has(object.metadata.labels) || !('app.kubernetes.io/name' in object.metadata.labels) || object.metadata.labels['app.kubernetes.io/name'] != '%s'" $root.Release.Namespace (include "placement-webhooks.name" $root) }}
{{- $conditions = append $conditions (dict "name" "not-the-suite-itself" "expression" $own) }}
{{- $parts := list }}
{{- with $settings.skipUsers }}
{{- $quoted := list }}{{ range . }}{{ $quoted = append $quoted (printf "'%s'" .) }}{{ end }}
{{- $parts = append $parts (printf "!(request.userInfo.username in [%s])" (join ", " $quoted)) }}
{{- end }}
{{- with $settings.skipGroups }}
{{- $quoted := list }}{{ range . }}{{ $quoted = append $quoted (printf "'%s'" .) }}{{ end }}
{{- $parts = append $parts (printf "!request.userInfo.groups.exists(g, g in [%s])" (join ", " $quoted)) }}
{{- end }}
{{- if $parts }}
{{- $conditions = append $conditions (dict "name" "not-from-a-skipped-requester" "expression" (join " && " $parts)) }}
{{- end }}
{{- if $settings.skipUnchangedUpdates }}
{{- $conditions = append $conditions $fixed.unchangedUpdate }}
{{- end }}
{{- if .nodes }}
{{- $conditions = append $conditions $fixed.nodeControllers }}
{{- else if and (eq .phase "validate") $settings.skipUnjudgedPods (or (eq $root.Values.webhooks.mutating.failurePolicy "Fail") (eq (include "placement-webhooks.rules" (dict "root" $root "phase" "mutate" "nodes" "exclude")) "[]")) }}
{{- $judged := include "placement-webhooks.judgedPods" (dict "root" $root "only" .only) }}
{{- if $judged }}
{{- $conditions = append $conditions (dict "name" "a-pod-a-validating-check-can-judge" "expression" $judged) }}
{{- end }}
{{- end }}
{{- toYaml $conditions }}
{{- end }}

{{/*
The namespaceSelector: the built-in exclusions (the release namespace and
webhooks.excludeNamespaces) as a NotIn expression, ANDed with webhooks.namespaceSelector.
*/}}
{{- define "placement-webhooks.namespaceSelector" -}}
{{- $values := .Values.webhooks }}
{{- $user := $values.namespaceSelector | default dict }}
{{- $selector := dict }}
{{- with $user.matchLabels }}{{ $_ := set $selector "matchLabels" . }}{{ end }}
{{- $excluded := dict "key" "kubernetes.io/metadata.name" "operator" "NotIn" "values" (uniq (prepend $values.excludeNamespaces .Release.Namespace)) }}
{{- $_ := set $selector "matchExpressions" (concat (list $excluded) ($user.matchExpressions | default list)) }}
{{- toYaml $selector }}
{{- end }}

{{/*
One webhook entry. Input: root, phase (mutate|validate), name, path, rules (YAML), caBundle
(base64, may be empty: left out), nodes (the Node webhook: its own failure policy and
conditions), failOpen (every webhook Ignore: the install window, templates/probe.yaml).
*/}}
{{- define "placement-webhooks.webhook" -}}
{{- $root := .root }}
{{- $values := $root.Values.webhooks }}
{{- $policy := $values.validating.failurePolicy }}
{{- if .nodes }}{{ $policy = $values.nodes.failurePolicy }}{{ else if eq .phase "mutate" }}{{ $policy = $values.mutating.failurePolicy }}{{ end }}
{{- if .failOpen }}{{ $policy = "Ignore" }}{{ end }}
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
  failurePolicy: {{ $policy }}
  matchPolicy: Equivalent
  namespaceSelector:
    {{- include "placement-webhooks.namespaceSelector" $root | nindent 4 }}
  {{- with $values.objectSelector }}
  objectSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if $values.matchConditions.enabled }}
  matchConditions:
    {{- include "placement-webhooks.matchConditions" (dict "root" $root "nodes" .nodes "phase" .phase "only" .only) | nindent 4 }}
  {{- end }}
  sideEffects: None
  timeoutSeconds: {{ $values.timeoutSeconds }}
  {{- if eq .phase "mutate" }}
  reinvocationPolicy: {{ $values.mutating.reinvocationPolicy }}
  {{- end }}
{{- end }}

{{/*
The webhook entries of one configuration (.phase), or "" when none would match anything: one
for the phase (or one per plugin), then the Node webhook when webhooks.nodes.enabled.
*/}}
{{- define "placement-webhooks.webhooks" -}}
{{- $root := .root }}
{{- $phase := .phase }}
{{- $fullname := include "placement-webhooks.fullname" $root }}
{{- $common := dict "root" $root "phase" $phase "caBundle" .caBundle "failOpen" .failOpen }}
{{- if and $root.Values.webhooks.perPlugin $root.Values.native.enabled }}
{{- fail "native.enabled with webhooks.perPlugin: the halves the webhooks keep are served as one chain on /mutate and /validate (serve --native); per-plugin webhooks would be called in an order and as often as the API server's reinvocation decides (docs/native.md)" }}
{{- end }}
{{- if $root.Values.webhooks.perPlugin }}
{{- range (include "placement-webhooks.pluginTable" $root | fromYaml).plugins }}
{{- $rules := include "placement-webhooks.rules" (dict "root" $root "phase" $phase "only" .name "nodes" "exclude") }}
{{- if ne $rules "[]" }}
{{ include "placement-webhooks.webhook" (merge (dict "name" (printf "%s.%s.%s.svc" .name $phase $fullname) "path" (printf "/%s/%s" $phase .name) "rules" $rules "only" .name) $common) }}
{{- end }}
{{- end }}
{{- else }}
{{- $rules := include "placement-webhooks.rules" (dict "root" $root "phase" $phase "nodes" "exclude") }}
{{- if ne $rules "[]" }}
{{ include "placement-webhooks.webhook" (merge (dict "name" (printf "%s.%s.svc" $phase $fullname) "path" (printf "/%s" $phase) "rules" $rules) $common) }}
{{- end }}
{{- end }}
{{- if $root.Values.webhooks.nodes.enabled }}
{{- $rules := include "placement-webhooks.rules" (dict "root" $root "phase" $phase "nodes" "only") }}
{{- if ne $rules "[]" }}
{{ include "placement-webhooks.webhook" (merge (dict "name" (printf "nodes.%s.%s.svc" $phase $fullname) "path" (printf "/%s" $phase) "rules" $rules "nodes" true) $common) }}
{{- end }}
{{- end }}
{{- end }}
