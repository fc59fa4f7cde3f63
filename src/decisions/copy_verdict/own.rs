//! The verdict on a source's own copy (its companion, its mirrors): still
//! wanted by its source and their namespace, or not, and why.

use std::borrow::Borrow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{CopyVerdict, Unwanted, mirror_name_reserved};
use crate::{
    contract::{self, companion_name},
    decisions::consent::{Consent, NamespaceFacts, NamespaceRefusal},
    decisions::install::Install,
    decisions::mirror_name::mirror_name,
    decisions::owner_ref::{controlling_owner, controlling_source},
    decisions::targets::{Targets, wants_mirror},
    kind::MirroredKind,
};

/// Whether a mirror is still wanted, given its source as the cache holds it
/// (None: not a managed source) and what consent reads of the mirror's
/// namespace (None: the namespace is gone, and the mirror with it).
///
/// Consent comes first, always: a namespace that no longer consents to the
/// kind, no longer accepts the source's namespace, or is protected loses
/// its mirrors (but while its grants are not known, one whose labels do
/// not consent keeps them: a grant may admit it). Only then does a source whose mirror annotations are
/// malformed keep its mirrors until it is fixed: a typo must not delete
/// copies that workloads depend on.
pub fn mirror_wanted(
    source: Option<&ObjectMeta>,
    namespace: Option<&NamespaceFacts>,
    consent: &Consent,
) -> bool {
    let Some(namespace) = namespace else {
        return true;
    };
    let Some(source) = source else {
        return false;
    };
    let source_namespace = source.namespace.as_deref().unwrap_or_default();
    let consents = match consent.verdict(source_namespace, namespace) {
        // Consent by grant can be neither given nor withdrawn yet: only the
        // source's own withdrawal counts.
        Err(NamespaceRefusal::GrantsNotKnown) => None,
        Err(_) => return false,
        Ok(()) => Some(()),
    };
    match Targets::of(source) {
        Err(_) => true,
        Ok(None) => false,
        Ok(Some(targets)) if consents.is_none() => {
            targets.includes(&namespace.name, &namespace.labels)
        }
        Ok(Some(targets)) => wants_mirror(&targets, source_namespace, namespace, consent),
    }
}

/// Whether a mirror is wanted under its name: the name its source gives
/// its mirrors now (`decisions::mirror_name`), or an earlier one until the
/// source's mirror under the new name is there (`at` reads the object at
/// a name in the mirror's namespace). So a name the source cannot have
/// there (reserved, held by another object, a ClusterMirror's) leaves the
/// mirror it had rather than none. While the source's mirror annotations
/// are malformed (its targets or its mirrors' name), it keeps its mirrors
/// whatever their name, as [`mirror_wanted`] does.
pub fn mirror_name_wanted(
    mirror: &ObjectMeta,
    source: &ObjectMeta,
    at: impl FnOnce(&str) -> Option<ObjectMeta>,
) -> bool {
    if Targets::of(source).is_err() {
        return true;
    }
    match mirror_name(source) {
        Ok(name) if mirror.name.as_deref() == Some(name) => true,
        Ok(name) => !at(name).is_some_and(|there| is_mirror_of(&there, source)),
        Err(_) => true,
    }
}

/// Whether `object` is a mirror of `source` (by name and uid).
fn is_mirror_of(object: &ObjectMeta, source: &ObjectMeta) -> bool {
    let names = contract::mirror_of(object).is_some_and(|(namespace, name)| {
        Some(namespace.as_str()) == source.namespace.as_deref()
            && Some(name.as_str()) == source.name.as_deref()
    });
    names
        && contract::annotation(object, contract::MIRROR_OF_UID_ANNOTATION) == source.uid.as_deref()
}

/// A source as a copy records it: namespace, name and uid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRef {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// The source of a copy written before copies were marked with the
/// selector of their install, if it has the exact shape this install
/// writes: a companion under the name this install gives the source that
/// controls it, or a mirror naming its source and that source's uid.
pub fn unmarked_copy_source<K: MirroredKind>(copy: &ObjectMeta, suffix: &str) -> Option<SourceRef> {
    if !contract::is_managed_by_us(copy) {
        return None;
    }
    if let Some((namespace, name)) = contract::mirror_of(copy) {
        let uid = contract::annotation(copy, contract::MIRROR_OF_UID_ANNOTATION)?;
        return Some(SourceRef {
            namespace,
            name,
            uid: uid.to_owned(),
        });
    }
    let owner = controlling_owner::<K>(copy)?;
    let exact_name = copy.name.as_deref() == Some(&companion_name(&owner.name, suffix));
    exact_name.then(|| SourceRef {
        namespace: copy.namespace.clone().unwrap_or_default(),
        name: owner.name.clone(),
        uid: owner.uid.clone(),
    })
}

/// Whether a companion should be deleted because nothing wants it any more:
/// its controlling source is no longer a managed source. Only an object
/// named exactly as this install names its source's companion can be one:
/// a copy of a companion under another name (a backup, another install's
/// suffix) is somebody else's. A companion with no controlling owner is not
/// provably ours and is never pruned.
pub fn should_prune<K: MirroredKind>(
    companion: &ObjectMeta,
    suffix: &str,
    is_managed_source: impl FnOnce(&str) -> bool,
) -> bool {
    let (Some(owner), Some(name)) = (
        controlling_source::<K>(companion),
        companion.name.as_deref(),
    ) else {
        return false;
    };
    companion_name(owner, suffix) == name && !is_managed_source(owner)
}

/// The verdict on a source's own copy (its companion, a mirror) of `install` (its source selector,
/// suffix and reserved names decide), given `managed_source` (the
/// managed source at a namespace and name, if any) and `namespace_facts`
/// (what consent reads of a namespace, None if it is gone) and `copy_at`
/// (the copy cached at a namespace and name, if any). Only a copy
/// this install wrote is ever unwanted: one marked with another install's
/// selector belongs to someone else.
pub fn source_copy_verdict<K: MirroredKind, S: Borrow<K>>(
    copy: &ObjectMeta,
    install: &Install,
    consent: &Consent,
    managed_source: impl Fn(&str, &str) -> Option<S>,
    namespace_facts: impl FnOnce(&str) -> Option<NamespaceFacts>,
    copy_at: impl FnOnce(&str, &str) -> Option<ObjectMeta>,
) -> CopyVerdict {
    let namespace = copy.namespace.as_deref().unwrap_or_default();
    if contract::annotation(copy, contract::SOURCE_SELECTOR_ANNOTATION).is_none() {
        return match unmarked_copy_source::<K>(copy, &install.suffix) {
            Some(source) if managed_source(&source.namespace, &source.name).is_none() => {
                let why = match contract::mirror_of(copy) {
                    Some(_) if mirror_name_reserved(copy, &install.reserved_names) => {
                        Unwanted::ReservedName
                    }
                    Some(_) => Unwanted::NotWantedHere,
                    None => Unwanted::SourceNotManaged,
                };
                CopyVerdict::UnwantedIfSourceGone(source, why)
            }
            _ => CopyVerdict::Keep,
        };
    }
    if !contract::written_under(copy, &install.selector) {
        return CopyVerdict::Keep;
    }
    let unwanted = match contract::mirror_of(copy) {
        Some(_) if mirror_name_reserved(copy, &install.reserved_names) => {
            Some(Unwanted::ReservedName)
        }
        Some((source_namespace, source_name)) => {
            let source = managed_source(&source_namespace, &source_name);
            let source = source.as_ref().map(|s| s.borrow().meta());
            let facts = namespace_facts(namespace);
            // A namespace that is gone takes its mirrors with it, whatever their name.
            let renamed = facts.is_some()
                && source.is_some_and(|s| !mirror_name_wanted(copy, s, |n| copy_at(namespace, n)));
            match (renamed, mirror_wanted(source, facts.as_ref(), consent)) {
                (true, _) => Some(Unwanted::Renamed),
                (false, false) => Some(Unwanted::NotWantedHere),
                (false, true) => None,
            }
        }
        None => should_prune::<K>(copy, &install.suffix, |source| {
            managed_source(namespace, source).is_some()
        })
        .then_some(Unwanted::SourceNotManaged),
    };
    unwanted.map_or(CopyVerdict::Keep, CopyVerdict::Unwanted)
}

#[cfg(test)]
mod tests;
