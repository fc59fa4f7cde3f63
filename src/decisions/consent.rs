//! Which namespaces may receive a kind's mirrors, and from where. Pure.
//!
//! Asking is the source's part (`targets`); consenting is the namespace's,
//! and the controller's configuration bounds both:
//! - a namespace accepts a kind when its labels match that kind's consent
//!   selector (`--accept-mirrors-selector` for ConfigMaps,
//!   `--accept-secret-mirrors-selector` for Secrets), so consent to one
//!   kind never lets the other in;
//! - it may name the source namespaces it accepts from, in the annotation
//!   `workshop.io/accept-mirrors-from` (names and `*` globs, as
//!   `workshop.io/mirror-to`); a malformed list accepts nothing;
//! - a protected namespace (`--protected-namespaces`, and always the
//!   install's own) is never a target, whatever its labels say.

use std::{collections::BTreeMap, fmt, sync::Arc};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::decisions::{patterns, selector::Selector};

/// On a Namespace: the source namespaces whose mirrors it accepts.
pub const ACCEPT_MIRRORS_FROM_ANNOTATION: &str = "workshop.io/accept-mirrors-from";

/// What consent reads of a namespace: its name, labels and the source
/// namespaces it accepts from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamespaceFacts {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub accept_from: Option<String>,
}

impl NamespaceFacts {
    pub fn of(namespace: &ObjectMeta) -> NamespaceFacts {
        NamespaceFacts {
            name: namespace.name.clone().unwrap_or_default(),
            labels: namespace.labels.clone().unwrap_or_default(),
            accept_from: namespace
                .annotations
                .as_ref()
                .and_then(|a| a.get(ACCEPT_MIRRORS_FROM_ANNOTATION))
                .cloned(),
        }
    }
}

/// Keeps of a namespace's metadata what the cache needs: its name, uid,
/// version, labels and the annotation consent reads. Other annotations
/// (a `last-applied-configuration` can be kilobytes) would cost memory in
/// every namespace and tell nothing.
/// A list over its length is kept cut short, still over it: refused
/// alike, it costs every namespace no more than the limit.
pub fn slim_namespace(namespace: &mut ObjectMeta) {
    namespace.managed_fields = None;
    if let Some(annotations) = namespace.annotations.as_mut() {
        annotations.retain(|key, _| key == ACCEPT_MIRRORS_FROM_ANNOTATION);
        annotations.values_mut().for_each(patterns::cut_over_long);
    }
}

/// Why a namespace receives no mirror of a source it is asked for by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamespaceRefusal {
    /// It is the source's own namespace, which holds the companion.
    SourceNamespace,
    /// Protected: never a target, whatever its labels.
    Protected,
    /// Its labels do not match this kind's consent selector.
    NotConsenting,
    /// Its `workshop.io/accept-mirrors-from` does not name the source's
    /// namespace.
    SourceNamespaceNotAccepted,
    /// Its `workshop.io/accept-mirrors-from` cannot be read: it accepts
    /// nothing until it is fixed.
    MalformedAcceptFrom(String),
}

impl fmt::Display for NamespaceRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NamespaceRefusal::SourceNamespace => f.write_str("it is the source's own namespace"),
            NamespaceRefusal::Protected => f.write_str("it is a protected namespace"),
            NamespaceRefusal::NotConsenting => {
                f.write_str("its labels do not consent to mirrors of this kind")
            }
            NamespaceRefusal::SourceNamespaceNotAccepted => write!(
                f,
                "its {ACCEPT_MIRRORS_FROM_ANNOTATION} does not name the source's namespace"
            ),
            NamespaceRefusal::MalformedAcceptFrom(why) => {
                write!(f, "it accepts nothing until fixed: {why}")
            }
        }
    }
}

/// One kind's consent rules.
#[derive(Debug, Clone, Default)]
pub struct Consent {
    /// The namespaces whose labels match accept this kind's mirrors.
    pub selector: Selector,
    /// Never targets, of any kind.
    protected: Arc<[String]>,
}

impl Consent {
    pub fn new(selector: Selector, protected: impl IntoIterator<Item = String>) -> Consent {
        let mut protected: Vec<String> = protected
            .into_iter()
            .map(|name| name.trim().to_owned())
            .filter(|name| !name.is_empty())
            .collect();
        protected.sort();
        protected.dedup();
        Consent {
            selector,
            protected: protected.into(),
        }
    }

    pub fn is_protected(&self, namespace: &str) -> bool {
        self.protected.iter().any(|p| p == namespace)
    }

    pub fn protected(&self) -> &[String] {
        &self.protected
    }

    /// Whether `namespace` takes this kind's mirrors of a source in
    /// `source_namespace`, and why not. Protection is checked first: it is
    /// the one a namespace's own labels cannot change.
    pub fn verdict(
        &self,
        source_namespace: &str,
        namespace: &NamespaceFacts,
    ) -> Result<(), NamespaceRefusal> {
        if namespace.name == source_namespace {
            return Err(NamespaceRefusal::SourceNamespace);
        }
        if self.is_protected(&namespace.name) {
            return Err(NamespaceRefusal::Protected);
        }
        if !self.selector.matches(&namespace.labels) {
            return Err(NamespaceRefusal::NotConsenting);
        }
        accepts_from(namespace, source_namespace)
    }

    /// The cheap part of the verdict, independent of any source: whether
    /// the namespace could take this kind's mirrors from anywhere.
    pub fn admits(&self, namespace: &NamespaceFacts) -> bool {
        !self.is_protected(&namespace.name) && self.selector.matches(&namespace.labels)
    }
}

/// Whether the namespace's `workshop.io/accept-mirrors-from` names
/// `source_namespace`; absent, it accepts any namespace.
fn accepts_from(
    namespace: &NamespaceFacts,
    source_namespace: &str,
) -> Result<(), NamespaceRefusal> {
    let Some(list) = namespace.accept_from.as_deref() else {
        return Ok(());
    };
    let patterns = patterns::parse_patterns(ACCEPT_MIRRORS_FROM_ANNOTATION, list)
        .map_err(NamespaceRefusal::MalformedAcceptFrom)?;
    match patterns
        .iter()
        .any(|pattern| pattern.matches(source_namespace))
    {
        true => Ok(()),
        false => Err(NamespaceRefusal::SourceNamespaceNotAccepted),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn consent() -> Consent {
        Consent::new(
            Selector::parse("workshop.io/accept-mirrors=true").unwrap(),
            ["kube-system".to_owned(), " ".to_owned()],
        )
    }

    fn mk_labels() -> BTreeMap<String, String> {
        BTreeMap::from([("workshop.io/accept-mirrors".into(), "true".into())])
    }

    fn namespace(name: &str, consents: bool, accept_from: Option<&str>) -> NamespaceFacts {
        let labels = match consents {
            true => mk_labels(),
            false => BTreeMap::new(),
        };
        NamespaceFacts {
            name: name.into(),
            labels,
            accept_from: accept_from.map(str::to_owned),
        }
    }

    #[test]
    fn a_consenting_namespace_accepts_any_source_namespace_unless_it_names_some() {
        let consent = consent();
        assert_eq!(
            consent.verdict("home", &namespace("team-a", true, None)),
            Ok(())
        );
        let picky = namespace("team-a", true, Some("home, platform-*"));
        assert_eq!(consent.verdict("home", &picky), Ok(()));
        assert_eq!(consent.verdict("platform-x", &picky), Ok(()));
        assert_eq!(
            consent.verdict("tenant", &picky),
            Err(NamespaceRefusal::SourceNamespaceNotAccepted)
        );
    }

    #[test]
    fn a_malformed_accept_from_accepts_nothing_and_says_why() {
        let refusal = consent()
            .verdict("home", &namespace("team-a", true, Some("home,,Bad_Name")))
            .unwrap_err();
        let NamespaceRefusal::MalformedAcceptFrom(why) = refusal else {
            panic!("{refusal:?}");
        };
        assert!(why.contains(ACCEPT_MIRRORS_FROM_ANNOTATION), "{why}");
        let too_many = (0..=patterns::MAX_PATTERNS)
            .map(|i| format!("n{i}"))
            .collect::<Vec<_>>()
            .join(",");
        assert!(matches!(
            consent().verdict("n1", &namespace("team-a", true, Some(&too_many))),
            Err(NamespaceRefusal::MalformedAcceptFrom(_))
        ));
    }

    #[test]
    fn a_protected_namespace_refuses_whatever_its_labels_say() {
        let consent = consent();
        assert_eq!(
            consent.verdict("home", &namespace("kube-system", true, Some("*"))),
            Err(NamespaceRefusal::Protected)
        );
        assert!(!consent.admits(&namespace("kube-system", true, None)));
        assert_eq!(consent.protected(), ["kube-system".to_owned()]);
    }

    #[test]
    fn a_cached_namespace_keeps_only_what_consent_reads() {
        let mut namespace = ObjectMeta {
            name: Some("team-a".into()),
            labels: Some(BTreeMap::from([("team".into(), "a".into())])),
            annotations: Some(BTreeMap::from([
                (ACCEPT_MIRRORS_FROM_ANNOTATION.into(), "home".into()),
                (
                    "kubectl.kubernetes.io/last-applied-configuration".into(),
                    "{}".into(),
                ),
            ])),
            ..ObjectMeta::default()
        };
        let before = NamespaceFacts::of(&namespace);
        slim_namespace(&mut namespace);
        assert_eq!(NamespaceFacts::of(&namespace), before);
        assert_eq!(namespace.annotations.map(|a| a.len()), Some(1));
    }

    #[test]
    fn a_cached_list_over_its_length_is_cut_short_and_still_accepts_nothing() {
        let long = format!("home,{}", "x".repeat(256 * 1024));
        let mut cached = ObjectMeta {
            name: Some("team-a".into()),
            labels: Some(mk_labels()),
            annotations: Some(BTreeMap::from([(
                ACCEPT_MIRRORS_FROM_ANNOTATION.into(),
                long.clone(),
            )])),
            ..ObjectMeta::default()
        };
        slim_namespace(&mut cached);
        let facts = NamespaceFacts::of(&cached);
        let kept = facts.accept_from.as_deref().unwrap_or_default();
        assert_eq!(kept.len(), patterns::MAX_PATTERNS_LEN + 1);
        assert!(long.starts_with(kept));
        let refusal = consent().verdict("home", &facts).unwrap_err();
        assert_eq!(
            refusal,
            NamespaceRefusal::MalformedAcceptFrom(format!(
                "{ACCEPT_MIRRORS_FROM_ANNOTATION} is over the limit of 8192 bytes"
            ))
        );
    }

    #[test]
    fn the_labels_must_match_this_kinds_selector() {
        let secrets = Consent::new(
            Selector::parse("workshop.io/accept-secret-mirrors=true").unwrap(),
            [],
        );
        let configmaps_only = namespace("team-a", true, None);
        assert_eq!(
            secrets.verdict("home", &configmaps_only),
            Err(NamespaceRefusal::NotConsenting)
        );
        assert!(!secrets.admits(&configmaps_only));
        assert_eq!(
            consent().verdict("home", &namespace("home", true, None)),
            Err(NamespaceRefusal::SourceNamespace)
        );
    }
}
