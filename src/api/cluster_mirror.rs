//! `ClusterMirror` (`mirror.workshop.io/v1alpha1`): one cluster-scoped
//! object by which a platform team copies one ConfigMap or Secret from an
//! admin namespace into every namespace a selector picks, with no consent
//! asked of the targets, and reads in its status where the copies are and
//! where they failed.
//!
//! The field docs are the schema's descriptions (`kubectl explain cmir`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a ClusterMirror copies, and where.
// Clippy reads the printer columns' repeated `type_` as duplicated
// attributes; they are arguments of distinct columns.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "mirror.workshop.io",
    version = "v1alpha1",
    kind = "ClusterMirror",
    plural = "clustermirrors",
    shortname = "cmir",
    status = "ClusterMirrorStatus",
    derive = "PartialEq",
    validation = rules::name_rule(),
    doc = "Copies one ConfigMap or Secret from an allowed source namespace into every namespace its target selects (protected namespaces and the source's own excepted), and reports where the copies are.",
    printcolumn(
        name = "Kind",
        type_ = "string",
        description = "The kind of the source: ConfigMap or Secret",
        json_path = ".spec.source.kind"
    ),
    printcolumn(
        name = "Source",
        type_ = "string",
        description = "The source's name (its namespace is spec.source.namespace)",
        json_path = ".spec.source.name"
    ),
    printcolumn(
        name = "Selected",
        type_ = "integer",
        description = "Namespaces selected, less protected ones and the source's own",
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
        description = "Selected namespaces where the copy could not be written",
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
pub struct ClusterMirrorSpec {
    /// The install that serves this ClusterMirror: the one whose
    /// `--cluster-mirror-class` is this (empty or absent: the installs
    /// without a class). Every other install leaves it, its status and its
    /// copies alone. Changing it hands the ClusterMirror and its copies
    /// over to the install of the new class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = rules::class_name)]
    pub class_name: Option<String>,

    /// The object copied. Its namespace must be one of the install's
    /// allowed source namespaces (`--cluster-mirror-source-namespaces`).
    pub source: SourceRef,

    /// Where the copies go, and what they carry besides the source's
    /// content.
    pub target: Target,

    /// When true, the status is still computed but nothing is written or
    /// deleted, whatever the spec becomes: the copies stay as they are.
    #[serde(default, skip_serializing_if = "is_false")]
    pub suspend: bool,

    /// What deleting this ClusterMirror does to its copies: `Delete` (the
    /// default) removes them; `Orphan` releases them, left in place with
    /// their content as plain objects the controller no longer keeps
    /// (its labels and annotations removed). Read from the object as it
    /// was deleted; each copy records it too, so that a deletion made while
    /// the controller was not running does the same once it runs. A copy
    /// whose ClusterMirror went with its CRD (deleted or replaced) is kept
    /// either way.
    #[serde(default, skip_serializing_if = "DeletionPolicy::is_default")]
    pub deletion_policy: DeletionPolicy,
}

/// The object a ClusterMirror copies.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceRef {
    /// `ConfigMap` or `Secret`.
    pub kind: SourceKind,
    /// The source's namespace.
    #[schemars(transform = rules::namespace_name)]
    pub namespace: String,
    /// The source's name.
    #[schemars(transform = rules::object_name)]
    pub name: String,
}

/// The kinds a ClusterMirror copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize, JsonSchema)]
pub enum SourceKind {
    ConfigMap,
    Secret,
}

impl SourceKind {
    /// The kind's name, as the spec says it: the API's.
    pub fn as_str(self) -> &'static str {
        use k8s_openapi::{
            Resource,
            api::core::v1::{ConfigMap, Secret},
        };
        match self {
            SourceKind::ConfigMap => ConfigMap::KIND,
            SourceKind::Secret => Secret::KIND,
        }
    }
}

impl std::fmt::Display for SourceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a ClusterMirror's copies go.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(transform = rules::configmap_of_exact_keys)]
pub struct Target {
    /// The copies' name (default: the source's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = rules::object_name)]
    pub name: Option<String>,

    /// The namespaces copied into, by their labels. Required: `{}`
    /// selects every namespace. Protected namespaces, the allowed source
    /// namespaces and the source's own are never written.
    #[schemars(transform = rules::selector_requirements)]
    pub namespace_selector: LabelSelector,

    /// Namespace names and `*` globs (the `workshop.io/mirror-to`
    /// syntax); when given, a namespace must also match one of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(transform = rules::namespace_patterns)]
    pub namespaces: Vec<String>,

    /// Labels set on every copy. The controller's own keys and the keys
    /// other tools claim objects by are refused.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(transform = rules::copy_metadata_keys)]
    pub labels: BTreeMap<String, String>,

    /// Annotations set on every copy, with the same keys refused as for
    /// labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(transform = rules::copy_metadata_keys)]
    pub annotations: BTreeMap<String, String>,

    /// Which of the source's keys the copies hold, and under which names:
    /// each entry an exact key or a `*` glob (`key`), and for an exact key
    /// the name it is copied under (`as`, optional). Absent: every key.
    /// Keys are matched across `data` and `binaryData`, and each keeps its
    /// field. An exact key the source lacks is reported (`KeyMissing`) and
    /// the copies are written without it; a glob that matches nothing is
    /// not an error. A Secret copy keeps its source's type only when it
    /// holds the keys that type requires, each from the source's key of
    /// that name, not another renamed onto it (`kubernetes.io/tls`: `tls.crt`
    /// and `tls.key`; `kubernetes.io/dockerconfigjson`: `.dockerconfigjson`;
    /// `kubernetes.io/dockercfg`: `.dockercfg`; `kubernetes.io/ssh-auth`:
    /// `ssh-privatekey`; `kubernetes.io/basic-auth`: `username` or
    /// `password`); otherwise nothing is copied (`KeysBreakType`) unless
    /// `type` is `Opaque`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(transform = rules::copied_keys)]
    pub keys: Vec<TargetKey>,

    /// Keys the copies never hold, whatever `keys` says: exact keys or `*`
    /// globs, matched against the source's key names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(transform = rules::excluded_keys)]
    pub exclude_keys: Vec<String>,

    /// The copies' kind: `Secret` (the default) or `ConfigMap`, for a
    /// Secret source only (a ConfigMap source is copied as a ConfigMap).
    /// `ConfigMap` publishes the keys `keys` names, which must be exact
    /// keys (no glob, so that a private key such as `tls.key` is never
    /// published by a pattern), as a ConfigMap in every target namespace:
    /// those keys become readable by whoever can read ConfigMaps there.
    /// Such a copy is an ordinary ConfigMap copy (healed, guarded,
    /// pruned), a value that is not UTF-8 in `binaryData`; its checksum
    /// stays keyed, as a Secret copy's. It needs an install that mirrors
    /// Secrets (else `SecretsDisabled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = rules::not_nullable)]
    pub kind: Option<SourceKind>,

    /// `Opaque`: the Secret copies' type, in place of the source's, so
    /// that they need not hold the keys the source's type requires. Only
    /// for a Secret copy.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(transform = rules::not_nullable)]
    pub type_: Option<CopyType>,
}

/// One entry of `target.keys`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = rules::copied_key)]
pub struct TargetKey {
    /// A key of the source, or a `*` glob of keys.
    pub key: String,
    /// The name the key is copied under (default: its own). Only for an
    /// exact key.
    #[serde(default, rename = "as", skip_serializing_if = "Option::is_none")]
    #[schemars(transform = rules::not_nullable)]
    pub copy_as: Option<String>,
}

/// The type a Secret copy may be given in place of its source's: only
/// `Opaque`, a Secret of no particular type, which requires no key. (A
/// variant's own doc would make the schema a `oneOf` the field's doc is
/// lost in.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize, JsonSchema)]
pub enum CopyType {
    Opaque,
}

impl CopyType {
    /// The type's name, as a Secret holds it.
    pub fn as_str(self) -> &'static str {
        match self {
            CopyType::Opaque => "Opaque",
        }
    }
}

impl ClusterMirrorSpec {
    /// The name of the copies: the target's, else the source's.
    pub fn copy_name(&self) -> &str {
        self.target.name.as_deref().unwrap_or(&self.source.name)
    }

    /// The kind of the copies: `target.kind` for a Secret source, else the
    /// source's (a ConfigMap is only ever copied as a ConfigMap).
    pub fn copy_kind(&self) -> SourceKind {
        match (self.source.kind, self.target.kind) {
            (SourceKind::Secret, Some(kind)) => kind,
            (kind, _) => kind,
        }
    }

    /// The class of the install that serves it; empty for none.
    pub fn class(&self) -> &str {
        self.class_name.as_deref().unwrap_or_default()
    }
}

/// What a ClusterMirror or a Mirror achieved, as of `observedGeneration`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterMirrorStatus {
    /// The generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// Namespaces the spec selects, less protected ones and the source's
    /// own; for a Mirror, those that consent, and those it names exactly
    /// that refuse it.
    #[serde(default)]
    pub selected: i32,

    /// Selected namespaces holding an in-sync copy.
    #[serde(default)]
    pub synced: i32,

    /// Selected namespaces where the copy could not be written (for a
    /// Mirror, or that refuse it).
    #[serde(default)]
    pub failed: i32,

    /// Some of the failures (at most 20, sorted by namespace), never any
    /// of the source's content.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<Failure>,

    /// `Ready`, `Reconciling` and `Stalled` (kstatus).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(transform = rules::conditions_by_type)]
    pub conditions: Vec<Condition>,
}

/// Why one selected namespace holds no in-sync copy.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub struct Failure {
    pub namespace: String,
    /// A CamelCase reason, such as `NameTaken`.
    pub reason: String,
    /// What happened, at most 256 bytes.
    pub message: String,
}

/// The most failures a status lists.
pub const MAX_FAILURES_LISTED: usize = 20;
/// The longest message of a listed failure, in bytes.
pub const MAX_FAILURE_MESSAGE_BYTES: usize = 256;

/// The condition types of a ClusterMirror's status (kstatus: `Reconciling`
/// and `Stalled` are read by Argo CD's and Flux's health checks).
pub mod condition {
    pub const READY: &str = "Ready";
    pub const RECONCILING: &str = "Reconciling";
    pub const STALLED: &str = "Stalled";
}

/// The reasons of the `Ready` condition, and of listed failures: of a
/// condition a reconcile can end in, as the table of conditions says.
pub mod reason {
    use crate::contract::condition::Condition;
    /// `Ready` is True: every selected namespace holds an in-sync copy.
    pub const SYNCED: &str = "Synced";
    pub const PARTIALLY_SYNCED: &str = "PartiallySynced";
    pub const SOURCE_NOT_FOUND: &str = "SourceNotFound";
    /// A source never copied (its condition's reason), or a reserved name.
    pub const SOURCE_NOT_COPYABLE: &str = Condition::NeverASource.row().failure;
    pub const SOURCE_NAMESPACE_NOT_ALLOWED: &str = "SourceNamespaceNotAllowed";
    /// A Secret source while `--kinds` leaves Secrets out.
    pub const SECRETS_DISABLED: &str = "SecretsDisabled";
    pub const SUSPENDED: &str = "Suspended";
    /// The spec cannot be acted on (one the CRD's validation could not
    /// catch, such as a kind this controller does not know).
    pub const INVALID_SPEC: &str = "InvalidSpec";
    /// The `Reconciling` condition's reason while copies are being written.
    pub const PROGRESSING: &str = "Progressing";
    /// A failure: the target name is held by an object this ClusterMirror
    /// did not create.
    pub const NAME_TAKEN: &str = Condition::NameTaken.row().failure;
    /// `Ready` is False (and `Stalled`): the keys copied leave out one the
    /// Secret's type requires.
    pub const KEYS_BREAK_TYPE: &str = Condition::KeysBreakType.row().failure;
    /// A failure: an exact key of `target.keys` is not in the source.
    pub const KEY_MISSING: &str = Condition::KeyMissing.row().failure;
    /// A failure: the copy would hold more than the API server accepts.
    pub const COPY_TOO_LARGE: &str = Condition::CopyTooLarge.row().failure;
    /// A failure of a Mirror: a namespace it names exactly does not
    /// consent to the kind from its namespace.
    pub const NOT_CONSENTING: &str = "NotConsenting";
    /// A failure of a Mirror: a namespace it names exactly is protected.
    pub const NAMESPACE_PROTECTED: &str = "NamespaceProtected";
}

fn is_false(value: &bool) -> bool {
    !value
}

mod deletion_policy;
pub mod rules;
pub mod stored;

pub use deletion_policy::DeletionPolicy;
#[cfg(test)]
mod tests;
