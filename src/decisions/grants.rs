//! Consent given by MirrorGrants: whether the grants held in a namespace
//! let in one kind's mirrors from a source namespace, and by which grant.
//! Pure.
//!
//! Grants unknown are never read as no grants: until the grants' watch has
//! listed them (or while it cannot, for want of rights), a namespace that
//! does not consent by its labels is neither written nor emptied
//! ([`NamespaceGrants::NotKnown`]). A grant CRD that is not installed means
//! that no grant exists, which is safe to act on.

use std::sync::{Arc, LazyLock};

use serde::Deserialize;
use serde_json::Value;

use crate::api::SourceKind;
use crate::api::mirror_grant::{MAX_GRANT_ENTRIES, MirrorGrantSpec};
use crate::decisions::patterns::{self, Glob};

/// One MirrorGrant as consent reads it: its name, and what it lets in, or
/// why it cannot be read (it then lets nothing in). Shared, not copied,
/// by the views of its namespace's grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant(Arc<Parsed>);

#[derive(Debug, PartialEq, Eq)]
struct Parsed {
    name: String,
    from: Result<Vec<GrantEntry>, String>,
}

/// One entry of a grant, compiled: the source namespaces it names, and the
/// kinds it lets in from them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct GrantEntry {
    namespaces: Glob,
    configmaps: bool,
    secrets: bool,
}

impl GrantEntry {
    fn lets_in(&self, kind: SourceKind) -> bool {
        match kind {
            SourceKind::ConfigMap => self.configmaps,
            SourceKind::Secret => self.secrets,
        }
    }
}

impl Grant {
    /// The grant named `name` whose stored `spec` is this: read as the
    /// schema says, or malformed (a spec the schema did not check, such as
    /// one stored under another version of the CRD).
    pub fn parse(name: &str, spec: Option<&Value>) -> Grant {
        Grant(Arc::new(Parsed {
            name: name.to_owned(),
            from: spec
                .ok_or_else(|| "it has no spec".to_owned())
                .and_then(entries)
                .map_err(cut_short),
        }))
    }

    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// Why the grant lets nothing in, if it cannot be read.
    pub fn malformed(&self) -> Option<&str> {
        self.0.from.as_ref().err().map(String::as_str)
    }

    /// Whether it lets in mirrors of `kind` from `source_namespace`.
    pub fn lets_in(&self, kind: SourceKind, source_namespace: &str) -> bool {
        self.entries()
            .any(|entry| entry.lets_in(kind) && entry.namespaces.matches(source_namespace))
    }

    /// The source namespaces (names and globs) it lets `kind` in from.
    pub fn namespaces_letting_in(&self, kind: SourceKind) -> Vec<&str> {
        (self.entries())
            .filter(|entry| entry.lets_in(kind))
            .map(|entry| entry.namespaces.as_str())
            .collect()
    }

    /// Whether it lets in mirrors of `kind` from any namespace at all.
    pub fn lets_in_any(&self, kind: SourceKind) -> bool {
        self.entries().any(|entry| entry.lets_in(kind))
    }

    fn entries(&self) -> impl Iterator<Item = &GrantEntry> {
        self.0.from.iter().flatten()
    }
}

/// A spec's entries, each checked as the CRD's schema checks it.
fn entries(spec: &Value) -> Result<Vec<GrantEntry>, String> {
    let spec = MirrorGrantSpec::deserialize(spec).map_err(|e| format!("spec: {e}"))?;
    if spec.from.is_empty() {
        return Err("spec.from lists no source namespace".into());
    }
    if spec.from.len() > MAX_GRANT_ENTRIES as usize {
        return Err(format!(
            "spec.from has {} entries, over the limit of {MAX_GRANT_ENTRIES}",
            spec.from.len()
        ));
    }
    spec.from
        .iter()
        .map(|entry| {
            let mut namespaces =
                patterns::parse_patterns("spec.from[].namespace", &entry.namespace)?;
            let (Some(namespaces), None) = (namespaces.pop(), namespaces.first()) else {
                return Err(format!(
                    "spec.from[].namespace: {:?} is not one namespace name or glob",
                    entry.namespace
                ));
            };
            if entry.kinds.is_empty() {
                return Err("spec.from[].kinds names no kind".into());
            }
            Ok(GrantEntry {
                namespaces,
                configmaps: entry.kinds.contains(&SourceKind::ConfigMap),
                secrets: entry.kinds.contains(&SourceKind::Secret),
            })
        })
        .collect()
}

/// The most grants of one namespace that count; those after them by name
/// let nothing in. A namespace's consent is read for every source that asks
/// for it: its admin must not make that read cost without bound.
pub const MAX_GRANTS_PER_NAMESPACE: usize = 100;

/// The longest reason kept of a grant that cannot be read: a reason may
/// quote the spec, which only the API server's object limit bounds.
const MAX_REASON_LEN: usize = 256;

fn cut_short(mut why: String) -> String {
    if why.len() > MAX_REASON_LEN {
        let end = (0..=MAX_REASON_LEN)
            .rev()
            .find(|at| why.is_char_boundary(*at))
            .unwrap_or_default();
        why.truncate(end);
        why.push('…');
    }
    why
}

/// The grants held in one namespace, as far as they are known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum NamespaceGrants {
    /// Not listed yet, or not readable: consent by grant can be neither
    /// given nor withdrawn.
    #[default]
    NotKnown,
    /// Every grant in the namespace, by name (none: an empty list).
    Known(Arc<[Grant]>),
}

impl NamespaceGrants {
    /// Known to hold no grant. Shared: most namespaces hold none, and
    /// each one's facts are kept.
    pub fn none() -> NamespaceGrants {
        static NONE: LazyLock<Arc<[Grant]>> = LazyLock::new(|| Arc::from([]));
        NamespaceGrants::Known(NONE.clone())
    }

    /// `grants` in order of their names, so that the grant said to admit a
    /// namespace is the same one every time; only the first
    /// [`MAX_GRANTS_PER_NAMESPACE`] count.
    pub fn known(mut grants: Vec<Grant>) -> NamespaceGrants {
        grants.sort_by(|a, b| a.name().cmp(b.name()));
        grants.truncate(MAX_GRANTS_PER_NAMESPACE);
        NamespaceGrants::Known(grants.into())
    }

    /// The first grant, by name, that lets in `kind` from
    /// `source_namespace`; Err when the grants are not known.
    pub fn letting_in(
        &self,
        kind: SourceKind,
        source_namespace: &str,
    ) -> Result<Option<&Grant>, GrantsNotKnown> {
        match self {
            NamespaceGrants::NotKnown => Err(GrantsNotKnown),
            NamespaceGrants::Known(grants) => Ok(grants
                .iter()
                .find(|grant| grant.lets_in(kind, source_namespace))),
        }
    }

    /// Whether a known grant lets in `kind` from anywhere.
    pub fn let_in_any(&self, kind: SourceKind) -> bool {
        self.grants().any(|grant| grant.lets_in_any(kind))
    }

    /// The grants that cannot be read, and why.
    pub fn malformed(&self) -> impl Iterator<Item = (&str, &str)> {
        self.grants()
            .filter_map(|grant| Some((grant.name(), grant.malformed()?)))
    }

    fn grants(&self) -> impl Iterator<Item = &Grant> {
        match self {
            NamespaceGrants::NotKnown => [].iter(),
            NamespaceGrants::Known(grants) => grants.iter(),
        }
    }
}

/// The grants of a namespace are not known yet, or cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrantsNotKnown;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn grant(name: &str, from: Value) -> Grant {
        Grant::parse(name, Some(&json!({ "from": from })))
    }

    #[test]
    fn a_grant_lets_in_only_the_kinds_it_names_from_the_namespaces_it_names() {
        let grant = grant(
            "g",
            json!([
                {"namespace": "team-a", "kinds": ["ConfigMap"]},
                {"namespace": "platform-*", "kinds": ["Secret", "ConfigMap"]},
            ]),
        );
        assert_eq!(grant.malformed(), None);
        assert!(grant.lets_in(SourceKind::ConfigMap, "team-a"));
        assert!(
            !grant.lets_in(SourceKind::Secret, "team-a"),
            "ConfigMap only"
        );
        assert!(grant.lets_in(SourceKind::Secret, "platform-ca"));
        assert!(!grant.lets_in(SourceKind::ConfigMap, "team-b"));
        assert!(grant.lets_in_any(SourceKind::Secret));
    }

    #[test]
    fn a_malformed_grant_lets_nothing_in_and_says_why() {
        for (spec, says) in [
            (json!({"from": []}), "lists no source namespace"),
            (
                json!({"from": [{"namespace": "Team_A", "kinds": ["ConfigMap"]}]}),
                "Team_A",
            ),
            (
                json!({"from": [{"namespace": "a,b", "kinds": ["ConfigMap"]}]}),
                "not one namespace",
            ),
            (
                json!({"from": [{"namespace": "a", "kinds": []}]}),
                "names no kind",
            ),
            (
                json!({"from": [{"namespace": "a", "kinds": ["Pod"]}]}),
                "unknown variant",
            ),
            (
                json!({"from": [{"namespace": "a", "kinds": ["Secret"]}], "to": 1}),
                "unknown field",
            ),
        ] {
            let grant = Grant::parse("g", Some(&spec));
            let why = grant.malformed().unwrap_or_else(|| panic!("{spec} read"));
            assert!(why.contains(says), "{spec}: {why}");
            assert!(!grant.lets_in_any(SourceKind::ConfigMap));
            assert!(!grant.lets_in_any(SourceKind::Secret));
        }
        let too_many: Vec<Value> = (0..=MAX_GRANT_ENTRIES)
            .map(|i| json!({"namespace": format!("n{i}"), "kinds": ["Secret"]}))
            .collect();
        let grant = grant("g", Value::Array(too_many));
        assert!(
            grant
                .malformed()
                .is_some_and(|why| why.contains("over the limit"))
        );
        assert_eq!(Grant::parse("g", None).malformed(), Some("it has no spec"));
        let long = json!({"from": [{"namespace": "a", "kinds": ["x".repeat(100_000)]}]});
        let why = Grant::parse("g", Some(&long)).malformed().map(str::len);
        assert!(
            why.is_some_and(|len| len <= MAX_REASON_LEN + '…'.len_utf8()),
            "{why:?}"
        );
    }

    #[test]
    fn grants_not_known_are_not_read_as_none() {
        let unknown = NamespaceGrants::NotKnown;
        assert_eq!(
            unknown.letting_in(SourceKind::ConfigMap, "team-a"),
            Err(GrantsNotKnown)
        );
        assert!(!unknown.let_in_any(SourceKind::ConfigMap));
        assert_eq!(
            NamespaceGrants::none().letting_in(SourceKind::ConfigMap, "team-a"),
            Ok(None)
        );
    }

    #[test]
    fn the_grant_said_to_admit_is_the_first_by_name() {
        let from = json!([{"namespace": "*", "kinds": ["ConfigMap"]}]);
        let grants = NamespaceGrants::known(vec![
            grant("zz", from.clone()),
            grant("bad", json!([])),
            grant("aa", from),
        ]);
        let admitting = grants.letting_in(SourceKind::ConfigMap, "x");
        assert_eq!(admitting.map(|g| g.map(Grant::name)), Ok(Some("aa")));
        assert_eq!(
            grants.malformed().map(|(name, _)| name).collect::<Vec<_>>(),
            ["bad"]
        );
    }
}
