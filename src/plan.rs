//! The comparison: given the desired companion and what the cache holds,
//! which single write (if any) brings the cluster to the desired state.
//! Pure, like `desired`; the reconcilers carry out what it decides.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;

use crate::{
    desired::{
        self, Difference, Ownership, difference, merge_onto, mirror_ownership, needs_recreate,
        ownership,
    },
    selector::Selector,
    targets::{Targets, wants_mirror},
};

/// The one write a copy (companion or mirror) of a source needs.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// The companion is as it should be.
    Nothing,
    /// There is no companion: create this one.
    Create(ConfigMap),
    /// The companion differs: replace it with this (same resourceVersion).
    Replace { copy: ConfigMap, why: Difference },
    /// An immutable copy must change content: delete it (guarded by its
    /// uid) so that the next reconcile creates it afresh.
    DeleteToRecreate { copy: ConfigMap, uid: String },
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
    let owner = match desired::mirror_of(&desired) {
        Some(_) => mirror_ownership(actual, source),
        None => ownership(actual, source_name, source_uid),
    };
    if owner == Ownership::Foreign {
        return Err(NameTaken);
    }
    if needs_recreate(actual, &desired) {
        return Ok(Write::DeleteToRecreate {
            copy: desired,
            uid: actual.metadata.uid.clone().unwrap_or_default(),
        });
    }
    match difference(actual, &desired, source_keys) {
        Difference::None => Ok(Write::Nothing),
        why => Ok(Write::Replace {
            copy: merge_onto(actual, &desired, source_keys),
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

/// The source, as (namespace, name), whose reconcile should look at this
/// copy: the source a mirror names; a companion's controlling owner or, when
/// the owner reference was removed by hand, the source its name comes from.
pub fn claimed_source(copy: &ConfigMap, suffix: &str) -> Option<(String, String)> {
    if let Some(source) = desired::mirror_of(copy) {
        return Some(source);
    }
    let namespace = copy.metadata.namespace.clone()?;
    let name = match controlling_source(copy) {
        Some(owner) => owner.to_owned(),
        None => desired::source_name_of(copy.metadata.name.as_deref()?, suffix)?,
    };
    Some((namespace, name))
}

/// Whether a mirror is still wanted, given its source as the cache holds it
/// (None: not a managed source) and the labels of the mirror's namespace
/// (None: the namespace is gone, and the mirror with it).
///
/// Consent comes first, always: a namespace that no longer consents loses
/// its mirrors. Only then does a source whose mirror annotations are
/// malformed keep its mirrors until it is fixed: a typo must not delete
/// copies that workloads depend on.
pub fn mirror_wanted(
    mirror: &ConfigMap,
    source: Option<&ConfigMap>,
    namespace_labels: Option<&BTreeMap<String, String>>,
    consent: &Selector,
) -> bool {
    let Some(labels) = namespace_labels else {
        return true;
    };
    let Some(source) = source else {
        return false;
    };
    if !consent.matches(labels) {
        return false;
    }
    let source_namespace = source.metadata.namespace.as_deref().unwrap_or_default();
    let namespace = mirror.metadata.namespace.as_deref().unwrap_or_default();
    match Targets::of(source) {
        Err(_) => true,
        Ok(None) => false,
        Ok(Some(targets)) => wants_mirror(&targets, source_namespace, namespace, labels, consent),
    }
}

/// Whether a companion should be deleted because nothing wants it any more:
/// its controlling source is no longer a managed source. Only an object
/// named exactly as this install names its source's companion can be one:
/// a copy of a companion under another name (a backup, another install's
/// suffix) is somebody else's. A companion with no controlling owner is not
/// provably ours and is never pruned.
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
    desired::companion_name(owner, suffix) == name && !is_managed_source(owner)
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
