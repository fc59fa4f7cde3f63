//! `MirrorGrant` (`mirror.workshop.io/v1alpha1`): consent given from
//! inside a namespace. A grant in a namespace lets in the mirrors of the
//! kinds it names from the source namespaces it names, as a label matching
//! the kind's consent selector does (the pattern of Gateway API's
//! ReferenceGrant), for a tenant who may not edit the Namespace object.
//!
//! The field docs are the schema's descriptions (`kubectl explain
//! mirrorgrant`).

use kube::CustomResource;
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::api::{SourceKind, cluster_mirror::rules};

/// The most entries of `spec.from`: a grant costs memory and time in
/// proportion to it, in every lookup of its namespace's consent.
pub const MAX_GRANT_ENTRIES: u32 = 64;

/// Which source namespaces may send mirrors of which kinds into the
/// grant's namespace.
#[derive(CustomResource, Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "mirror.workshop.io",
    version = "v1alpha1",
    kind = "MirrorGrant",
    plural = "mirrorgrants",
    shortname = "mgrant",
    namespaced,
    derive = "PartialEq",
    doc = "Lets the mirrors of the kinds it names, from the source namespaces it names, into its own namespace: consent given from inside the namespace, as the consent labels on the Namespace give it. Protected namespaces stay closed whatever a grant says.",
    printcolumn(
        name = "From",
        type_ = "string",
        description = "The source namespaces (names and * globs) let in",
        json_path = ".spec.from[*].namespace"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MirrorGrantSpec {
    /// Each entry lets in the mirrors of its kinds from the namespaces it
    /// names. A namespace consents to a kind from a source namespace when
    /// any entry of any grant in it names both.
    #[schemars(transform = grant_entries)]
    pub from: Vec<GrantFrom>,
}

/// One entry of a grant: a source namespace (or a glob of them) and the
/// kinds let in from it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GrantFrom {
    /// A source namespace's name, or a `*` glob of names (the
    /// `workshop.io/mirror-to` syntax): `team-a`, `platform-*`, `*`.
    #[schemars(transform = namespace_or_glob)]
    pub namespace: String,
    /// The kinds of mirrors let in: `ConfigMap`, `Secret`, or both. A grant
    /// naming only ConfigMap lets no Secret in.
    #[schemars(transform = grant_kinds)]
    pub kinds: Vec<SourceKind>,
}

/// `spec.from`: at least one entry, at most [`MAX_GRANT_ENTRIES`].
fn grant_entries(schema: &mut Schema) {
    schema.insert("minItems".into(), json!(1));
    schema.insert("maxItems".into(), json!(MAX_GRANT_ENTRIES));
}

/// `spec.from[].namespace`: a name or a glob, as `target.namespaces` of a
/// ClusterMirror takes one.
fn namespace_or_glob(schema: &mut Schema) {
    schema.insert("minLength".into(), json!(1));
    schema.insert("maxLength".into(), json!(63));
    schema.insert(
        "pattern".into(),
        json!(format!(
            "^(({})|({}))$",
            rules::NAMESPACE_PATTERN
                .trim_start_matches('^')
                .trim_end_matches('$'),
            rules::GLOB_PATTERN
                .trim_start_matches('^')
                .trim_end_matches('$'),
        )),
    );
}

/// `spec.from[].kinds`: one or both kinds, each once.
fn grant_kinds(schema: &mut Schema) {
    schema.insert("minItems".into(), json!(1));
    schema.insert("maxItems".into(), json!(2));
    schema.insert("x-kubernetes-list-type".into(), json!("set"));
    if let Some(items) = schema
        .get_mut("items")
        .and_then(serde_json::Value::as_object_mut)
    {
        items.insert("description".into(), json!("ConfigMap or Secret"));
    }
}
