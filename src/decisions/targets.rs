//! Which other namespaces a source is mirrored into. Pure.
//!
//! A source asks with annotations:
//! - `workshop.io/mirror-to: "team-*,payments"`: namespace names and `*` globs;
//! - `workshop.io/mirror-to-selector: "env=prod"`: a namespace label selector.
//!
//! A namespace receives the mirror when the source asks for it and the
//! namespace consents (`consent`: its labels, the source namespaces it
//! accepts from, protection); never the source's own namespace, which has
//! the companion.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::decisions::{
    consent::{Consent, NamespaceFacts},
    patterns::{Glob, parse_patterns},
    selector::Selector,
};

pub const MIRROR_TO_ANNOTATION: &str = "workshop.io/mirror-to";
/// Published into every namespace, by Kubernetes (the root-CA publisher),
/// istiod and OpenShift's service CA: a mirror of a source with such a name
/// would be rewritten by its publisher forever, and until then workloads
/// would trust it as their cluster's or mesh's root CA.
pub const SYSTEM_PUBLISHED_NAMES: [&str; 3] = [
    "kube-root-ca.crt",
    "istio-ca-root-cert",
    "openshift-service-ca.crt",
];

/// The built-in reserved names and the extra ones configured.
pub fn reserved_names(extra: &[String]) -> Vec<String> {
    SYSTEM_PUBLISHED_NAMES
        .iter()
        .map(|name| (*name).to_owned())
        .chain(extra.iter().map(|name| name.trim().to_owned()))
        .filter(|name| !name.is_empty())
        .collect()
}
pub const MIRROR_TO_SELECTOR_ANNOTATION: &str = "workshop.io/mirror-to-selector";

/// What a source asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Targets {
    patterns: Vec<Glob>,
    selector: Option<Selector>,
}

impl Targets {
    /// Reads a source's annotations: `Ok(None)` when it asks for no mirrors,
    /// an error naming the malformed annotation otherwise.
    pub fn of(source: &ObjectMeta) -> Result<Option<Targets>, String> {
        let annotations = source.annotations.as_ref();
        let get = |key| annotations.and_then(|a| a.get(key)).map(String::as_str);
        let patterns = get(MIRROR_TO_ANNOTATION)
            .map(|text| parse_patterns(MIRROR_TO_ANNOTATION, text))
            .transpose()?;
        let selector = get(MIRROR_TO_SELECTOR_ANNOTATION)
            .map(parse_selector)
            .transpose()?;
        if patterns.is_none() && selector.is_none() {
            return Ok(None);
        }
        Ok(Some(Targets {
            patterns: patterns.unwrap_or_default(),
            selector,
        }))
    }

    /// The namespaces asked for, when they are all named exactly (no glob,
    /// no selector): then no other namespace can ever be one.
    pub fn exact_names(&self) -> Option<impl Iterator<Item = &str>> {
        let exact = self.selector.is_none() && self.patterns.iter().all(|p| !p.has_star());
        exact.then(|| self.patterns.iter().map(Glob::as_str))
    }

    /// The literal beginnings every namespace asked for starts with, one per
    /// glob or name (`team-*` gives `team-`); None when a selector may ask
    /// for any namespace. An empty beginning (`*`) matches every name.
    pub fn literal_prefixes(&self) -> Option<Vec<&str>> {
        if self.selector.is_some() {
            return None;
        }
        Some(self.patterns.iter().map(Glob::prefix).collect())
    }

    /// Under what a source asking for these targets is found from a
    /// namespace's name: each exact name, each glob's literal beginning,
    /// and the selector, which any namespace may match.
    pub fn filings(&self) -> impl Iterator<Item = Filing<'_>> {
        let patterns = self
            .patterns
            .iter()
            .map(|pattern| match pattern.has_star() {
                true => Filing::Prefix(pattern.prefix()),
                false => Filing::Name(pattern.as_str()),
            });
        patterns.chain(self.selector.is_some().then_some(Filing::Selector))
    }

    /// Whether the namespace `name` with `labels` is asked for.
    pub fn includes(&self, name: &str, labels: &BTreeMap<String, String>) -> bool {
        self.patterns.iter().any(|pattern| pattern.matches(name))
            || self
                .selector
                .as_ref()
                .is_some_and(|selector| selector.matches(labels))
    }
}

/// One way a namespace may be asked for (see [`Targets::filings`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filing<'a> {
    Name(&'a str),
    Prefix(&'a str),
    Selector,
}

/// The longest namespace selector a source may give: a bound on the work
/// one tenant's source costs per namespace, as the bound on its names and
/// globs is.
pub const MAX_SELECTOR_LEN: usize = 1024;

fn parse_selector(text: &str) -> Result<Selector, String> {
    if text.trim().is_empty() {
        return Err(format!("{MIRROR_TO_SELECTOR_ANNOTATION} is empty"));
    }
    if text.len() > MAX_SELECTOR_LEN {
        return Err(format!(
            "{MIRROR_TO_SELECTOR_ANNOTATION} is {} bytes long, over the limit of {MAX_SELECTOR_LEN}",
            text.len()
        ));
    }
    Selector::parse(text).map_err(|e| format!("{MIRROR_TO_SELECTOR_ANNOTATION}: {e}"))
}

/// Whether a namespace should hold a mirror of a source in
/// `source_namespace` asking for `targets`. Consent is checked first: it
/// is the cheap test, and the one most namespaces fail.
pub fn wants_mirror(
    targets: &Targets,
    source_namespace: &str,
    namespace: &NamespaceFacts,
    consent: &Consent,
) -> bool {
    consent.admits(namespace)
        && targets.includes(&namespace.name, &namespace.labels)
        && consent.verdict(source_namespace, namespace).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decisions::patterns::MAX_PATTERNS;
    use crate::test_fixtures::{
        mk_consent, mk_consenting_labels, mk_map, mk_mirrored_source, mk_namespace, mk_source,
        with_annotations,
    };

    #[test]
    fn every_name_a_source_asks_for_begins_with_one_of_its_literal_prefixes() {
        let source = mk_mirrored_source("team-*,payments,*-prod,a*b");
        let targets = Targets::of(&source.metadata).unwrap().unwrap();
        assert_eq!(
            targets.literal_prefixes(),
            Some(vec!["team-", "payments", "", "a"])
        );
        for name in ["team-x", "payments", "web-prod", "axb"] {
            assert!(targets.includes(name, &BTreeMap::new()));
            let prefixes = targets.literal_prefixes().unwrap();
            assert!(prefixes.iter().any(|p| name.starts_with(p)), "{name}");
        }
        let by_selector = with_annotations(
            mk_mirrored_source("team-*"),
            &[(MIRROR_TO_SELECTOR_ANNOTATION, "env=prod")],
        );
        let targets = Targets::of(&by_selector.metadata).unwrap().unwrap();
        assert_eq!(
            targets.literal_prefixes(),
            None,
            "a selector may ask for any name"
        );
    }

    #[test]
    fn a_source_is_filed_under_its_names_its_globs_beginnings_and_its_selector() {
        let source = with_annotations(
            mk_mirrored_source("team-*,payments,*-prod"),
            &[(MIRROR_TO_SELECTOR_ANNOTATION, "env=prod")],
        );
        let targets = Targets::of(&source.metadata).unwrap().unwrap();
        assert_eq!(
            targets.filings().collect::<Vec<_>>(),
            [
                Filing::Prefix("team-"),
                Filing::Name("payments"),
                Filing::Prefix(""),
                Filing::Selector
            ]
        );
    }

    #[test]
    fn a_source_without_annotations_asks_for_nothing() {
        assert_eq!(Targets::of(&mk_source("colors", &[]).metadata), Ok(None));
    }

    #[test]
    fn names_globs_and_a_selector_combine() {
        let source = with_annotations(
            mk_source("colors", &[]),
            &[
                (MIRROR_TO_ANNOTATION, "team-*, payments"),
                (MIRROR_TO_SELECTOR_ANNOTATION, "env=prod"),
            ],
        );
        let targets = Targets::of(&source.metadata).unwrap().unwrap();
        let none = BTreeMap::new();
        assert!(targets.includes("team-x", &none));
        assert!(targets.includes("payments", &none));
        assert!(targets.includes("other", &mk_map(&[("env", "prod")])));
        assert!(!targets.includes("other", &none));
    }

    #[test]
    fn malformed_annotations_are_refused_with_their_name() {
        for (key, malformed) in [
            (MIRROR_TO_ANNOTATION, "team_a,,"),
            (MIRROR_TO_SELECTOR_ANNOTATION, "a in b"),
        ] {
            let source = with_annotations(mk_source("colors", &[]), &[(key, malformed)]);
            assert!(
                Targets::of(&source.metadata).unwrap_err().contains(key),
                "{key}"
            );
        }
    }

    #[test]
    fn lists_over_the_limits_are_refused_before_they_are_parsed() {
        let patterns = |n: usize| {
            (0..n)
                .map(|i| format!("team-{i}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let at_limit = with_annotations(
            mk_source("colors", &[]),
            &[(MIRROR_TO_ANNOTATION, &patterns(MAX_PATTERNS))],
        );
        assert!(Targets::of(&at_limit.metadata).is_ok());
        let over = with_annotations(
            mk_source("colors", &[]),
            &[(MIRROR_TO_ANNOTATION, &patterns(MAX_PATTERNS + 1))],
        );
        let why = Targets::of(&over.metadata).unwrap_err();
        assert!(why.contains("101") && why.contains("limit of 100"), "{why}");
        let long = with_annotations(
            mk_source("colors", &[]),
            &[(MIRROR_TO_ANNOTATION, &patterns(40_000))],
        );
        let why = Targets::of(&long.metadata).unwrap_err();
        assert!(why.contains("over the limit of 8192 bytes"), "{why}");
        assert!(!why.contains("team-"), "the list is not quoted: {why}");
        let long_selector = (0..400)
            .map(|i| format!("k{i}"))
            .collect::<Vec<_>>()
            .join(",");
        let over = with_annotations(
            mk_source("colors", &[]),
            &[(MIRROR_TO_SELECTOR_ANNOTATION, &long_selector)],
        );
        let why = Targets::of(&over.metadata).unwrap_err();
        assert!(why.contains("limit of 1024"), "{why}");
    }

    #[test]
    fn only_consenting_namespaces_other_than_the_source_s_own_receive_mirrors() {
        let targets = Targets::of(&mk_mirrored_source("*").metadata)
            .unwrap()
            .unwrap();
        let consent = mk_consent();
        let consenting = |name| mk_namespace(name, mk_consenting_labels());
        assert!(wants_mirror(
            &targets,
            "home",
            &consenting("team-a"),
            &consent
        ));
        assert!(!wants_mirror(
            &targets,
            "home",
            &mk_namespace("team-a", BTreeMap::new()),
            &consent
        ));
        assert!(!wants_mirror(
            &targets,
            "home",
            &consenting("home"),
            &consent
        ));
        assert!(!wants_mirror(
            &targets,
            "home",
            &consenting("kube-system"),
            &consent
        ));
        let mut picky = consenting("team-b");
        picky.accept_from = Some("platform".into());
        assert!(!wants_mirror(&targets, "home", &picky, &consent));
        assert!(wants_mirror(&targets, "platform", &picky, &consent));
    }
}
