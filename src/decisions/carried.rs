//! The labels and annotations a source asks its copies to carry, by
//! allowlist, and the record on each copy of which keys the controller put
//! there, so that it removes only those. Pure.
//!
//! ```yaml
//! workshop.io/copy-labels: "app.kubernetes.io/name,team"
//! workshop.io/copy-annotations: "reloader.stakater.com/*,example.com/owner"
//! ```
//!
//! Entries are exact keys, or a prefix ending in `*`. Never carried: the
//! keys of [`NeverCarried`] (the controller's own, those by which other
//! tools claim, prune or trust an object, and those `--never-carry` adds),
//! and the label keys of the source
//! selector (a copy must never become a source). A list that asks for one of
//! the former, by name or by a prefix that matches one the source has, is
//! refused ([`Carried::refused`]): the source is told, and its copies are
//! written without it.
//! The controller's own keys and kubectl's record of the last apply, which
//! a source may have whatever its owner means, are skipped without a word
//! when only a prefix matches them.
//!
//! A ClusterMirror's copies carry what its `spec.target` sets instead
//! ([`Carried::Given`]), under the same rules and with the same record; a
//! spec that sets a key never carried is refused as a whole.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::contract::{
    CARRIED_ANNOTATIONS_ANNOTATION, CARRIED_LABELS_ANNOTATION, CONTROLLER_KEY_PREFIX,
    COPY_ANNOTATIONS_ANNOTATION, COPY_LABELS_ANNOTATION, MANAGED_BY_LABEL, NeverCarried,
    annotation,
};

/// How many entries one list may have, and how long it may be: a bound on
/// what one source costs per copy.
pub const MAX_ENTRIES: usize = 64;
pub const MAX_LIST_LEN: usize = 2048;
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// One list: exact keys and prefixes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    exact: Vec<String>,
    prefixes: Vec<String>,
}

impl Allowlist {
    pub fn allows(&self, key: &str) -> bool {
        self.exact.iter().any(|k| k == key) || self.prefixes.iter().any(|p| key.starts_with(p))
    }

    fn parse(annotation_key: &str, text: &str) -> Result<Allowlist, String> {
        if text.len() > MAX_LIST_LEN {
            return Err(format!(
                "{annotation_key} is {} bytes long, over the limit of {MAX_LIST_LEN}",
                text.len()
            ));
        }
        let count = text.split(',').count();
        if count > MAX_ENTRIES {
            return Err(format!(
                "{annotation_key} lists {count} entries, over the limit of {MAX_ENTRIES}"
            ));
        }
        let mut list = Allowlist::default();
        for entry in text.split(',').map(str::trim) {
            match key_or_prefix(entry) {
                Some((key, true)) => list.prefixes.push(key.to_owned()),
                Some((key, false)) => list.exact.push(key.to_owned()),
                None => {
                    return Err(format!(
                        "{annotation_key}: {entry:?} is neither a label or annotation key nor a \
                         prefix ending in '*' (comma-separated)"
                    ));
                }
            }
        }
        Ok(list)
    }
}

/// A list entry as a key, or as a prefix (true) when it ends in `*`; None
/// when it is neither. `--never-carry` takes its entries so too.
pub fn key_or_prefix(entry: &str) -> Option<(&str, bool)> {
    let (key, prefix) = match entry.strip_suffix('*') {
        Some(prefix) => (prefix, true),
        None => (entry, false),
    };
    let valid = match prefix {
        true => !key.contains('*') && (key.is_empty() || is_key_prefix(key)),
        false => is_qualified_key(key),
    };
    (valid && !entry.is_empty()).then_some((key, prefix))
}

/// What a source asks its copies to carry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lists {
    pub labels: Allowlist,
    pub annotations: Allowlist,
}

impl Lists {
    /// Reads a source's lists; an error naming the malformed one.
    pub fn of(source: &ObjectMeta) -> Result<Lists, String> {
        let list = |key| {
            annotation(source, key)
                .map(|text| Allowlist::parse(key, text))
                .transpose()
                .map(Option::unwrap_or_default)
        };
        Ok(Lists {
            labels: list(COPY_LABELS_ANNOTATION)?,
            annotations: list(COPY_ANNOTATIONS_ANNOTATION)?,
        })
    }
}

/// Whether a key may be carried at all, whatever the lists say.
fn carriable(key: &str, never: &NeverCarried, source_label_keys: &[String]) -> bool {
    !never.contains(key) && !source_label_keys.iter().any(|k| k == key)
}

/// Never carried, and not worth a word when only a prefix matches: keys a
/// source has whatever its owner means to carry.
fn skipped_silently(key: &str) -> bool {
    key.starts_with(CONTROLLER_KEY_PREFIX) || key == LAST_APPLIED
}

fn selected(
    map: Option<&BTreeMap<String, String>>,
    list: &Allowlist,
    keep: impl Fn(&str) -> bool,
) -> BTreeMap<String, String> {
    map.into_iter()
        .flatten()
        .filter(|(key, _)| list.allows(key) && keep(key))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The source's labels and annotations its lists select: what the source's
/// cache must keep of them. Keys never carried are kept too (but those
/// skipped silently), so that its reconcile can name them in [`Carried::refused`].
pub fn selected_of(source: &ObjectMeta, lists: &Lists) -> [BTreeMap<String, String>; 2] {
    let keep = |key: &str| !skipped_silently(key);
    [
        selected(source.labels.as_ref(), &lists.labels, keep),
        selected(source.annotations.as_ref(), &lists.annotations, keep),
    ]
}

/// What a copy is asked to carry besides its own labels and annotations.
#[derive(Debug, Clone, Copy)]
pub enum Carried<'a> {
    /// What a source's lists select of its own labels and annotations.
    Listed {
        source: &'a ObjectMeta,
        lists: &'a Lists,
    },
    /// What a ClusterMirror's `spec.target.labels` and
    /// `spec.target.annotations` set.
    Given {
        labels: &'a BTreeMap<String, String>,
        annotations: &'a BTreeMap<String, String>,
    },
}

impl Carried<'_> {
    /// What is asked for that `never` refuses, as the Warning (or the
    /// ClusterMirror's refusal) says it; None when nothing. A list counts
    /// a key it names exactly, or one the source has that a prefix entry
    /// matches (but those skipped silently): then the owner means
    /// something the copies will not have.
    pub fn refused(&self, never: &NeverCarried) -> Option<String> {
        let asked = match *self {
            Carried::Listed { source, lists } => [
                (
                    format!("{COPY_LABELS_ANNOTATION} asks for"),
                    listed_refused(&lists.labels, source.labels.as_ref(), never),
                ),
                (
                    format!("{COPY_ANNOTATIONS_ANNOTATION} asks for"),
                    listed_refused(&lists.annotations, source.annotations.as_ref(), never),
                ),
            ],
            Carried::Given {
                labels,
                annotations,
            } => [
                (
                    "spec.target.labels sets".to_owned(),
                    given_refused(labels, never),
                ),
                (
                    "spec.target.annotations sets".to_owned(),
                    given_refused(annotations, never),
                ),
            ],
        };
        let parts: Vec<String> = asked
            .into_iter()
            .filter(|(_, keys)| !keys.is_empty())
            .map(|(asks, keys)| {
                let keys: Vec<&str> = keys.into_iter().collect();
                format!("{asks} {}", keys.join(", "))
            })
            .collect();
        let said = (!parts.is_empty()).then(|| parts.join("; "))?;
        Some(match self {
            Carried::Listed { .. } => said,
            Carried::Given { .. } => format!(
                "{said}: never carried by this install (--never-carry, or the built-in list)"
            ),
        })
    }

    /// `copy` (a built copy) carrying what is asked for, but the keys never
    /// carried (`never`, and the label keys of the source selector, which
    /// would make a copy a source), with a record of the carried keys.
    /// Nothing is added when nothing is carried, so the copies of a source
    /// without lists stay as they were.
    pub fn onto(
        &self,
        mut copy: ObjectMeta,
        never: &NeverCarried,
        source_label_keys: &[String],
    ) -> ObjectMeta {
        // None of the copy's own keys is carriable, so they always win.
        let carriable = |key: &str| carriable(key, never, source_label_keys);
        let (labels, annotations) = match *self {
            Carried::Listed { source, lists } => (
                selected(source.labels.as_ref(), &lists.labels, carriable),
                selected(source.annotations.as_ref(), &lists.annotations, carriable),
            ),
            Carried::Given {
                labels,
                annotations,
            } => (given(labels, carriable), given(annotations, carriable)),
        };
        let records = [
            (CARRIED_LABELS_ANNOTATION, record(&labels)),
            (CARRIED_ANNOTATIONS_ANNOTATION, record(&annotations)),
        ];
        copy.labels.get_or_insert_with(BTreeMap::new).extend(labels);
        let copy_annotations = copy.annotations.get_or_insert_with(BTreeMap::new);
        copy_annotations.extend(annotations);
        for (key, record) in records {
            if let Some(record) = record {
                copy_annotations.insert(key.into(), record);
            }
        }
        copy
    }
}

/// The keys never carried that `list` names exactly, or that a prefix of
/// it matches in `map` (but those skipped silently).
fn listed_refused<'m>(
    list: &'m Allowlist,
    map: Option<&'m BTreeMap<String, String>>,
    never: &NeverCarried,
) -> BTreeSet<&'m str> {
    let named = list.exact.iter().filter(|key| never.contains(key));
    let matched = map.into_iter().flatten().map(|(key, _)| key).filter(|key| {
        list.prefixes.iter().any(|p| key.starts_with(p))
            && never.contains(key)
            && !skipped_silently(key)
    });
    named.chain(matched).map(String::as_str).collect()
}

/// The keys of `map` never carried.
fn given_refused<'m>(map: &'m BTreeMap<String, String>, never: &NeverCarried) -> BTreeSet<&'m str> {
    map.keys()
        .map(String::as_str)
        .filter(|key| never.contains(key))
        .collect()
}

fn given(map: &BTreeMap<String, String>, keep: impl Fn(&str) -> bool) -> BTreeMap<String, String> {
    map.iter()
        .filter(|(key, _)| keep(key))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The keys in a record, sorted and comma-separated; None for none.
fn record(carried: &BTreeMap<String, String>) -> Option<String> {
    (!carried.is_empty()).then(|| carried.keys().cloned().collect::<Vec<_>>().join(","))
}

/// The label and annotation keys a copy's record says the controller put
/// there (the record annotations themselves included, for the annotations).
pub fn recorded(copy: &ObjectMeta) -> (Vec<String>, Vec<String>) {
    let keys = |key| -> Vec<String> {
        annotation(copy, key)
            .into_iter()
            .flat_map(|record| record.split(','))
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let mut annotations = keys(CARRIED_ANNOTATIONS_ANNOTATION);
    annotations.extend([
        CARRIED_LABELS_ANNOTATION.to_owned(),
        CARRIED_ANNOTATIONS_ANNOTATION.to_owned(),
    ]);
    (keys(CARRIED_LABELS_ANNOTATION), annotations)
}

/// Whether an earlier release carried the source's managed-by label onto
/// this copy (its record says so): the copy then dropped out of the copies'
/// watch, but is still ours, and its source's reconcile takes it back.
pub fn detached(copy: &ObjectMeta) -> bool {
    recorded(copy).0.iter().any(|key| key == MANAGED_BY_LABEL)
}

/// `prefix/name` as Kubernetes takes label and annotation keys: an
/// optional DNS subdomain prefix, and a name of at most 63 characters of
/// alphanumerics, `-`, `_` and `.`, starting and ending alphanumeric.
fn is_qualified_key(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    prefix.is_none_or(crate::decisions::names::is_dns_subdomain)
        && !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The start of a key, before a `*`: what some qualified key can start with.
fn is_key_prefix(prefix: &str) -> bool {
    let completed = match prefix.chars().last() {
        Some('/' | '-' | '_' | '.') => format!("{prefix}x"),
        _ => prefix.to_owned(),
    };
    is_qualified_key(&completed)
}

#[cfg(test)]
mod tests;
