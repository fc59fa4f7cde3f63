//! The comparison: given the desired companion and what the cache holds,
//! which single write (if any) brings the cluster to the desired state.
//! Pure, like `desired`; the reconcilers carry out what it decides.

use k8s_openapi::api::core::v1::ConfigMap;

use crate::desired::{
    self, Difference, Ownership, difference, merge_onto, needs_recreate, ownership,
};

/// The one write a reconcile of a source makes.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// The companion is as it should be.
    Nothing,
    /// There is no companion: create this one.
    Create(ConfigMap),
    /// The companion differs: replace it with this (same resourceVersion).
    Replace {
        companion: ConfigMap,
        why: Difference,
    },
    /// An immutable companion must change content: delete it (guarded by its
    /// uid) so that the next reconcile creates it afresh.
    DeleteToRecreate { uid: String },
}

/// The companion's name is held by an object that is not ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameTaken;

/// What the source's reconcile must write, from the desired companion and
/// the object currently at its name.
pub fn plan(
    desired: ConfigMap,
    actual: Option<&ConfigMap>,
    source: &ConfigMap,
    source_keys: &[String],
) -> Result<Write, NameTaken> {
    let Some(actual) = actual else {
        return Ok(Write::Create(desired));
    };
    let source_name = source.metadata.name.as_deref().unwrap_or_default();
    let source_uid = source.metadata.uid.as_deref().unwrap_or_default();
    if ownership(actual, source_name, source_uid) == Ownership::Foreign {
        return Err(NameTaken);
    }
    if needs_recreate(actual, &desired) {
        return Ok(Write::DeleteToRecreate {
            uid: actual.metadata.uid.clone().unwrap_or_default(),
        });
    }
    match difference(actual, &desired, source_keys) {
        Difference::None => Ok(Write::Nothing),
        why => Ok(Write::Replace {
            companion: merge_onto(actual, &desired, source_keys),
            why,
        }),
    }
}

/// The name of the ConfigMap that controls a companion, if any.
pub fn controlling_source(companion: &ConfigMap) -> Option<&str> {
    companion
        .metadata
        .owner_references
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|r| r.controller == Some(true) && r.api_version == "v1" && r.kind == "ConfigMap")
        .map(|owner| owner.name.as_str())
}

/// The source whose reconcile should look at this companion: its
/// controlling owner, or, when the owner reference was removed by hand, the
/// source its name was derived from.
pub fn claimed_source(companion: &ConfigMap, suffix: &str) -> Option<String> {
    match controlling_source(companion) {
        Some(owner) => Some(owner.to_owned()),
        None => desired::source_name_of(companion.metadata.name.as_deref()?, suffix),
    }
}

/// Whether a companion should be deleted because nothing wants it any more:
/// its controlling source is no longer a managed source, or the companion's
/// name no longer follows the naming rule. A companion with no controlling
/// owner is not provably ours and is never pruned.
pub fn should_prune(
    companion: &ConfigMap,
    suffix: &str,
    is_managed_source: impl FnOnce(&str) -> bool,
) -> bool {
    let (Some(owner), Some(name)) = (
        controlling_source(companion),
        companion.metadata.name.as_deref(),
    ) else {
        return false;
    };
    desired::companion_name(owner, suffix) != name || !is_managed_source(owner)
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
