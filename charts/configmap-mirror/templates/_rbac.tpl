{{/*
The rules on ConfigMaps and Events, the same in both modes: exactly the
verbs the binary calls (docs/operator/security.md, "RBAC").
*/}}
{{- define "configmap-mirror.configMapAndEventRules" -}}
# list+watch: the source ConfigMaps (label selector, --selector) and the
#   companions (label app.kubernetes.io/managed-by=configmap-mirror) are read
#   only through watch caches.
# get: the source, when a copy must be written (the cache holds its
#   content's digest only); and when a create finds the name taken by an
#   object outside the caches (e.g. without the managed-by label): read
#   that one object to tell a foreign ConfigMap (never touched) from a
#   companion to restore.
# create: write a missing "<name>-synced" companion.
# update: restore a companion that drifted (full replace, HTTP PUT).
# delete: remove a companion whose source is gone or no longer selected.
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "watch", "create", "update", "delete"]
# create: record Kubernetes Events about the ConfigMaps it reconciles.
# patch: bump the count of a repeated Event (events.k8s.io series) instead of
#   creating a new one.
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end }}
