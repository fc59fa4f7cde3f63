{{/*
The chart's name, or nameOverride: the app.kubernetes.io/name label.
*/}}
{{- define "configmap-mirror.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of every object: fullnameOverride, else the release name, with the
chart name appended unless the release name already contains it. Truncated to
63 characters, the longest a label value (and a Service name) may be.
*/}}
{{- define "configmap-mirror.fullname" -}}
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

{{/*
The helm.sh/chart label: name and version.
*/}}
{{- define "configmap-mirror.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every object: the chart's own, then commonLabels.
*/}}
{{- define "configmap-mirror.labels" -}}
{{- include "configmap-mirror.labelsWith" (dict "context" . "extra" dict) }}
{{- end }}

{{/*
The same, with the object's own labels ("extra": podLabels, or the labels a
Prometheus or Grafana selects by), which win over commonLabels of the same
key. The chart's own labels cannot be replaced: selectors and tools rely on
them.
*/}}
{{- define "configmap-mirror.labelsWith" -}}
{{- $ := .context -}}
{{- $own := list "helm.sh/chart" "app.kubernetes.io/name" "app.kubernetes.io/instance" "app.kubernetes.io/version" "app.kubernetes.io/managed-by" "app.kubernetes.io/component" }}
{{- range $key, $_ := $.Values.commonLabels }}
{{- if has $key $own }}
{{- fail (printf "commonLabels: %s is the chart's own label; choose another key" $key) }}
{{- end }}
{{- end -}}
helm.sh/chart: {{ include "configmap-mirror.chart" $ }}
app.kubernetes.io/name: {{ include "configmap-mirror.name" $ }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/version: {{ include "configmap-mirror.imageTag" $ | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ $.Release.Service }}
{{- with merge (deepCopy (.extra | default dict)) $.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The namespace of every namespaced object but those with a namespace of their
own (the watched namespace's Role, the Lease's, the dashboard's):
namespaceOverride, else the release namespace.
*/}}
{{- define "configmap-mirror.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{/*
Labels of the controller's Pods that its Deployment, Service,
PodDisruptionBudget and ServiceMonitor select them by. Fixed for the life of
a release: a Deployment's selector cannot change.
*/}}
{{- define "configmap-mirror.selectorLabels" -}}
app.kubernetes.io/name: {{ include "configmap-mirror.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end }}

{{/*
Labels of the objects that make up the controller (Deployment, Service,
PodDisruptionBudget, ServiceMonitor).
*/}}
{{- define "configmap-mirror.controllerLabels" -}}
{{ include "configmap-mirror.labels" . }}
app.kubernetes.io/component: controller
{{- end }}

{{- define "configmap-mirror.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "configmap-mirror.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "configmap-mirror.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{/*
[registry/]repository:tag, or [registry/]repository:tag@digest when a
digest is given.
*/}}
{{- define "configmap-mirror.image" -}}
{{- $repository := .Values.image.repository }}
{{- with .Values.image.registry }}
{{- $repository = printf "%s/%s" (trimSuffix "/" .) $repository }}
{{- end }}
{{- $image := printf "%s:%s" $repository (include "configmap-mirror.imageTag" .) }}
{{- with .Values.image.digest }}
{{- $image = printf "%s@%s" $image . }}
{{- end }}
{{- $image }}
{{- end }}

{{/*
The namespace of the leader-election Lease and its Role.
*/}}
{{- define "configmap-mirror.leaseNamespace" -}}
{{- default (include "configmap-mirror.namespace" .) .Values.leaderElection.namespace }}
{{- end }}

{{/*
The job label of the controller's series, as the alerts select them: the
Service's name, as the chart's ServiceMonitor scrapes it, or
metrics.prometheusRule.job for a scrape job of one's own. Without either no
series would ever match, and ConfigMapMirrorDown would fire on a healthy
install: refused.
*/}}
{{- define "configmap-mirror.scrapeJob" -}}
{{- $rule := .Values.metrics.prometheusRule }}
{{- if $rule.job }}
{{- $rule.job }}
{{- else if .Values.metrics.serviceMonitor.enabled }}
{{- include "configmap-mirror.fullname" . }}
{{- else }}
{{- fail "metrics.prometheusRule.enabled needs the controller's metrics scraped, or ConfigMapMirrorDown fires on a healthy install: set metrics.serviceMonitor.enabled=true, or set metrics.prometheusRule.job to the job label of the scrape job of your own that scrapes it" }}
{{- end }}
{{- end }}

{{/*
The folder of the alerts' runbooks, each `<alert>.md` in it:
metrics.prometheusRule.runbookBaseUrl, else the project's
docs/operator/runbooks/ at the chart's version (Chart.yaml's home, tag
v<version>).
*/}}
{{- define "configmap-mirror.runbookBaseUrl" -}}
{{- default (printf "%s/blob/v%s/docs/operator/runbooks" (trimSuffix "/" .Chart.Home) .Chart.Version) .Values.metrics.prometheusRule.runbookBaseUrl }}
{{- end }}

{{/*
A duration in Go's form (500ms, 90s, 1m30s, 1.5h; a bare number is
seconds), as the flags take it, in seconds.
*/}}
{{- define "configmap-mirror.seconds" -}}
{{- $duration := toString . }}
{{- if regexMatch "^[0-9]+$" $duration }}
{{- $duration }}
{{- else }}
{{- $unit := dict "h" 3600.0 "m" 60.0 "s" 1.0 "ms" 0.001 "us" 0.000001 "µs" 0.000001 "μs" 0.000001 "ns" 0.000000001 }}
{{- $seconds := 0.0 }}
{{- range regexFindAll "([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)" $duration -1 }}
{{- $number := regexFind "^([0-9]+(\\.[0-9]*)?|\\.[0-9]+)" . }}
{{- $seconds = addf $seconds (mulf (float64 $number) (get $unit (trimPrefix $number .))) }}
{{- end }}
{{- $seconds }}
{{- end }}
{{- end }}

{{/*
The controller's command-line flags, one per item, every value quoted.
*/}}
{{- define "configmap-mirror.args" -}}
{{- $c := .Values.controller -}}
- {{ printf "--selector=%s" $c.selector | quote }}
- {{ printf "--suffix=%s" $c.suffix | quote }}
{{- with $c.watchNamespace }}
- {{ printf "--namespace=%s" . | quote }}
{{- end }}
- {{ printf "--accept-mirrors-selector=%s" $c.acceptMirrorsSelector | quote }}
- {{ printf "--accept-secret-mirrors-selector=%s" $c.acceptSecretMirrorsSelector | quote }}
- {{ printf "--protected-namespaces=%s" (join "," $c.protectedNamespaces) | quote }}
{{- if not $c.watchNamespace }}
- {{ printf "--cluster-mirror-source-namespaces=%s" (join "," (.Values.clusterMirror.sourceNamespaces | default (list (include "configmap-mirror.namespace" .)))) | quote }}
{{- with .Values.clusterMirror.class }}
- {{ printf "--cluster-mirror-class=%s" . | quote }}
{{- end }}
{{- end }}
{{- with $c.reservedNames }}
- {{ printf "--reserved-names=%s" (join "," .) | quote }}
{{- end }}
{{- with $c.neverCarry }}
- {{ printf "--never-carry=%s" (join "," .) | quote }}
{{- end }}
- {{ printf "--concurrency=%d" (int $c.concurrency) | quote }}
- {{ printf "--worker-threads=%d" (int $c.workerThreads) | quote }}
- {{ printf "--log-format=%s" $c.logFormat | quote }}
{{- /* info is the binary's default: the flag only when it differs */}}
{{- if ne $c.logLevel "info" }}
- {{ printf "--log-level=%s" $c.logLevel | quote }}
{{- end }}
- {{ printf "--http-addr=[::]:%d" (int $c.httpPort) | quote }}
- {{ printf "--watch-failure-threshold=%s" $c.watchFailureThreshold | quote }}
- {{ printf "--slow-retry=%s" $c.slowRetry | quote }}
- {{ printf "--initial-list=%s" $c.initialList | quote }}
- {{ printf "--api-timeout=%s" $c.apiTimeout | quote }}
- {{ printf "--shutdown-timeout=%s" $c.shutdownTimeout | quote }}
{{- if .Values.secrets.enabled }}
- "--kinds=configmaps,secrets"
{{- with .Values.secrets.digestKeySecret }}
- {{ printf "--digest-key-secret=%s" . | quote }}
{{- end }}
{{- with .Values.secrets.refusedTypes }}
- {{ printf "--refused-secret-types=%s" (join "," .) | quote }}
{{- end }}
{{- end }}
{{- with .Values.leaderElection }}
{{- if .enabled }}
- "--leader-elect"
- {{ printf "--leader-election-id=%s" .leaseName | quote }}
{{- with .namespace }}
- {{ printf "--leader-election-namespace=%s" . | quote }}
{{- end }}
- {{ printf "--lease-duration=%s" .leaseDuration | quote }}
- {{ printf "--renew-deadline=%s" .renewDeadline | quote }}
- {{ printf "--retry-period=%s" .retryPeriod | quote }}
{{- end }}
{{- end }}
{{- include "configmap-mirror.policyInputsFromValues" . }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/*
The flags (and their MIRROR_* variables) that the admission policy is
rendered from too: given through extraArgs or extraEnv they would reach the
controller but not the policy, which would then refuse the controller, or
let through what the controller refuses. Refused, naming the value to set.
*/}}
{{- define "configmap-mirror.policyInputsFromValues" -}}
{{- $values := dict
  "selector" "controller.selector"
  "protected-namespaces" "controller.protectedNamespaces"
  "cluster-mirror-source-namespaces" "clusterMirror.sourceNamespaces"
  "never-carry" "controller.neverCarry"
  "refused-secret-types" "secrets.refusedTypes"
  "digest-key-secret" "secrets.digestKeySecret"
  "leader-election-namespace" "leaderElection.namespace"
  "cluster-mirror-class" "clusterMirror.class" }}
{{- range .Values.extraArgs }}
{{- $flag := trimPrefix "--" (regexReplaceAll "=.*$" . "") }}
{{- if hasKey $values $flag }}
{{- fail (printf "extraArgs: --%s is set from %s, which the admission policy reads too: set that value instead" $flag (get $values $flag)) }}
{{- end }}
{{- end }}
{{- range .Values.extraEnv }}
{{- $flag := lower (replace "_" "-" (trimPrefix "MIRROR_" (toString .name))) }}
{{- if and (hasPrefix "MIRROR_" (toString .name)) (hasKey $values $flag) }}
{{- fail (printf "extraEnv: %s is set from %s, which the admission policy reads too: set that value instead" .name (get $values $flag)) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The label and annotation keys no copy carries, one a line: contract.rs's
NEVER_CARRIED, which a unit test keeps this the same as (an entry ending in
`*` is a prefix). The admission policy refuses them on copies, with
controller.neverCarry's.
*/}}
{{- define "configmap-mirror.neverCarriedBuiltIn" -}}
app.kubernetes.io/managed-by
workshop.io/*
kubectl.kubernetes.io/*
applyset.kubernetes.io/*
addonmanager.kubernetes.io/*
app.kubernetes.io/instance
meta.helm.sh/*
helm.sh/*
argocd.argoproj.io/*
kustomize.toolkit.fluxcd.io/*
helm.toolkit.fluxcd.io/*
fluxcd.io/*
kapp.k14s.io/*
fleet.cattle.io/*
objectset.rio.cattle.io/*
pulumi.com/*
crossplane.io/*
kluctl.io/*
config.k8s.io/owning-inventory
cli-utils.sigs.k8s.io/inventory-id
configsync.gke.io/*
configmanagement.gke.io/*
cert-manager.io/*
controller.cert-manager.io/*
trust.cert-manager.io/*
reconcile.external-secrets.io/*
sealedsecrets.bitnami.com/*
reflector.v1.k8s.emberstack.com/*
replicator.v1.mittwald.de/*
kubed.appscode.com/*
generate.kyverno.io/*
service.beta.openshift.io/*
service.alpha.openshift.io/*
config.openshift.io/inject-trusted-cabundle
istio/multiCluster
{{- end }}

{{/*
The never-carried keys the admission policy refuses to add to a copy:
the built-in list and controller.neverCarry, but the controller's own keys
(the managed-by label, workshop.io/*), which its other rules guard. A dict:
"exact" keys and "prefixes" (without their `*`).
*/}}
{{- define "configmap-mirror.neverCarriedForPolicy" -}}
{{- $own := list "app.kubernetes.io/managed-by" "workshop.io/*" }}
{{- $entries := concat (splitList "\n" (include "configmap-mirror.neverCarriedBuiltIn" .)) .Values.controller.neverCarry }}
{{- $exact := list }}
{{- $prefixes := list }}
{{- range $entries }}
{{- if and . (not (has . $own)) }}
{{- if hasSuffix "*" . }}
{{- $prefixes = append $prefixes (trimSuffix "*" .) }}
{{- else }}
{{- $exact = append $exact . }}
{{- end }}
{{- end }}
{{- end }}
{{- toJson (dict "exact" (uniq $exact) "prefixes" (uniq $prefixes)) }}
{{- end }}

{{/*
The validation of a ClusterMirror's or a Mirror's policy that refuses
target.labels or target.annotations setting a key of controller.neverCarry
(the CRDs' own rules refuse the built-in never-carried keys). A dict: "root"
the chart's context, "what" the object as the message names it ("a Mirror").
*/}}
{{- define "configmap-mirror.neverCarryValidation" -}}
{{- $exact := list }}
{{- $prefixes := list }}
{{- range .root.Values.controller.neverCarry }}
{{- if hasSuffix "*" . }}
{{- $prefixes = append $prefixes (trimSuffix "*" .) }}
{{- else }}
{{- $exact = append $exact . }}
{{- end }}
{{- end }}
- expression: >-
    !object.spec.target.?labels.orValue({}).exists(k, k in {{ toJson $exact }}
    || {{ toJson $prefixes }}.exists(p, k.startsWith(p)))
    && !object.spec.target.?annotations.orValue({}).exists(k, k in {{ toJson $exact }}
    || {{ toJson $prefixes }}.exists(p, k.startsWith(p)))
  messageExpression: >-
    '{{ .what }} may not set ' + (object.spec.target.?labels.orValue({}).filter(k,
    k in {{ toJson $exact }} || {{ toJson $prefixes }}.exists(p, k.startsWith(p)))
    + object.spec.target.?annotations.orValue({}).filter(k,
    k in {{ toJson $exact }} || {{ toJson $prefixes }}.exists(p, k.startsWith(p)))).join(', ')
    + ' on its copies: this install never carries it (controller.neverCarry)'
  reason: Invalid
{{- end }}
