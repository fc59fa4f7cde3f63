//! `Mirror` (`mirror.workshop.io/v1alpha1`): a tenant's own request for
//! copies of one ConfigMap or Secret of its namespace, into the namespaces
//! it names or selects that consent to them. It asks what a ClusterMirror
//! asks, with its source in its own namespace, and one more rule: consent
//! comes first (the target namespace's labels, or a MirrorGrant in it).
//! Its source needs no label or annotation, and is never written.
//!
//! The field docs are the schema's descriptions (`kubectl explain mir`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::api::cluster_mirror::{
    ClusterMirrorSpec, ClusterMirrorStatus, CopyType, DeletionPolicy, SourceKind, SourceRef,
    Target, TargetKey, rules,
};

/// What a Mirror copies, and where.
// Clippy reads the printer columns' repeated `type_` as duplicated
// attributes; they are arguments of distinct columns.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "mirror.workshop.io",
    version = "v1alpha1",
    kind = "Mirror",
    plural = "mirrors",
    shortname = "mir",
    namespaced,
    status = "ClusterMirrorStatus",
    derive = "PartialEq",
    validation = rules::name_rule(),
    doc = "Copies one ConfigMap or Secret of its own namespace into the namespaces its target names or selects that consent to that kind from its namespace (by their labels, or a MirrorGrant), and reports where the copies are. Its source is never written.",
    printcolumn(
        name = "Kind",
        type_ = "string",
        description = "The kind of the source: ConfigMap or Secret",
        json_path = ".spec.source.kind"
    ),
    printcolumn(
        name = "Source",
        type_ = "string",
        description = "The source's name, in the Mirror's namespace",
        json_path = ".spec.source.name"
    ),
    printcolumn(
        name = "Selected",
        type_ = "integer",
        description = "Namespaces selected that consent, and those named exactly that do not",
        json_path = ".status.selected"
    ),
    printcolumn(
        name = "Synced",
        type_ = "integer",
        description = "Selected namespaces holding an in-sync copy",
        json_path = ".status.synced"
    ),
    printcolumn(
        name = "Failed",
        type_ = "integer",
        description = "Selected namespaces where the copy could not be written, or that refuse it",
        json_path = ".status.failed"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        description = "Whether every selected namespace holds an in-sync copy",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Class",
        type_ = "string",
        description = "The install class that serves it (spec.className); empty: the installs without a class",
        json_path = ".spec.className",
        priority = "1"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(transform = rules::copy_kind_and_type)]
pub struct MirrorSpec {
    /// The install that serves this Mirror: the one whose
    /// `--cluster-mirror-class` is this (empty or absent: the installs
    /// without a class), as for a ClusterMirror.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = rules::class_name)]
    pub class_name: Option<String>,

    /// The object copied, in the Mirror's own namespace. It needs no label
    /// or annotation, and is never written.
    pub source: LocalSourceRef,

    /// Where the copies go, and what they carry besides the source's
    /// content.
    pub target: MirrorTarget,

    /// When true, the status is still computed but nothing is written or
    /// deleted, whatever the spec becomes: the copies stay as they are.
    #[serde(default, skip_serializing_if = "is_false")]
    pub suspend: bool,

    /// What deleting this Mirror does to its copies: `Delete` (the
    /// default) removes them; `Orphan` releases them, left in place as
    /// plain objects the controller no longer keeps.
    #[serde(default, skip_serializing_if = "DeletionPolicy::is_default")]
    pub deletion_policy: DeletionPolicy,
}

/// The object a Mirror copies: in the Mirror's namespace, so it has no
/// namespace field.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LocalSourceRef {
    /// `ConfigMap` or `Secret`.
    pub kind: SourceKind,
    /// The source's name.
    #[schemars(transform = rules::object_name)]
    pub name: String,
}

/// Where a Mirror's copies go. At least one of `namespaces` and
/// `namespaceSelector` is given; with both, a namespace must match both.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(transform = rules::configmap_of_exact_keys)]
#[schemars(transform = some_namespaces_asked)]
pub struct MirrorTarget {
    /// The copies' name (default: the source's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = rules::object_name)]
    pub name: Option<String>,

    /// Namespace names and `*` globs (the `workshop.io/mirror-to` syntax).
    /// A namespace named exactly that does not consent, or is protected,
    /// is a failure (`NotConsenting`, `NamespaceProtected`); one reached
    /// only by a glob or the selector is then just not selected.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(transform = rules::namespace_patterns)]
    pub namespaces: Vec<String>,

    /// The namespaces copied into, by their labels (`{}`: every
    /// namespace); each must still consent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = rules::selector_requirements)]
    #[schemars(transform = rules::not_nullable)]
    pub namespace_selector: Option<LabelSelector>,

    /// Labels set on every copy, as a ClusterMirror's `target.labels`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(transform = rules::copy_metadata_keys)]
    pub labels: BTreeMap<String, String>,

    /// Annotations set on every copy, with the same keys refused as for
    /// labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(transform = rules::copy_metadata_keys)]
    pub annotations: BTreeMap<String, String>,

    /// Which of the source's keys the copies hold, and under which names,
    /// as a ClusterMirror's `target.keys`. Absent: every key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(transform = rules::copied_keys)]
    pub keys: Vec<TargetKey>,

    /// Keys the copies never hold, whatever `keys` says: exact keys or `*`
    /// globs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(transform = rules::excluded_keys)]
    pub exclude_keys: Vec<String>,

    /// The copies' kind: `Secret` (the default) or `ConfigMap`, for a
    /// Secret source only, as a ClusterMirror's `target.kind`: `ConfigMap`
    /// publishes the exact keys `keys` names to whoever can read
    /// ConfigMaps in the target namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = rules::not_nullable)]
    pub kind: Option<SourceKind>,

    /// `Opaque`: the Secret copies' type, in place of the source's. Only
    /// for a Secret copy.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(transform = rules::not_nullable)]
    pub type_: Option<CopyType>,
}

impl MirrorSpec {
    /// What the Mirror in `namespace` asks, as the ClusterMirror spec the
    /// engine reads: its source in `namespace`, and every namespace its
    /// selector leaves open when it gives none. Consent, which a
    /// ClusterMirror does not ask, is the request's to check.
    pub fn as_cluster_mirror_spec(&self, namespace: &str) -> ClusterMirrorSpec {
        let target = &self.target;
        ClusterMirrorSpec {
            class_name: self.class_name.clone(),
            source: SourceRef {
                kind: self.source.kind,
                namespace: namespace.to_owned(),
                name: self.source.name.clone(),
            },
            target: Target {
                name: target.name.clone(),
                namespace_selector: target.namespace_selector.clone().unwrap_or_default(),
                namespaces: target.namespaces.clone(),
                labels: target.labels.clone(),
                annotations: target.annotations.clone(),
                keys: target.keys.clone(),
                exclude_keys: target.exclude_keys.clone(),
                kind: target.kind,
                type_: target.type_,
            },
            suspend: self.suspend,
            deletion_policy: self.deletion_policy,
        }
    }
}

/// `target`: a Mirror names or selects its namespaces; an empty target
/// would be taken for every namespace, which a tenant must ask for by
/// `namespaceSelector: {}`.
fn some_namespaces_asked(schema: &mut Schema) {
    rules::add_rule(
        schema,
        json!({
            "rule": "has(self.namespaceSelector) || (has(self.namespaces) && size(self.namespaces) > 0)",
            "message": "give namespaces, namespaceSelector or both: a Mirror copies only where \
                        it is asked to",
            "reason": "FieldValueRequired",
        }),
    );
}

fn is_false(value: &bool) -> bool {
    !value
}

pub mod stored;

#[cfg(test)]
mod tests;
