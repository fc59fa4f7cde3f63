use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::decisions::targets::MIRROR_TO_SELECTOR_ANNOTATION;
use crate::test_fixtures::{
    mk_consent, mk_consenting_labels, mk_map, mk_mirrored_source, mk_namespace, mk_source,
    with_annotations,
};

fn named(name: &str, to: &str) -> k8s_openapi::api::core::v1::ConfigMap {
    let mut source = mk_mirrored_source(to);
    source.metadata.name = Some(name.into());
    source
}

#[test]
fn a_source_naming_namespaces_is_found_by_those_names_only() {
    let index = MirroringSources::default();
    index.observe(&Event::Apply(named("exact", "team-a,team-b")));
    index.observe(&Event::Apply(mk_source("plain", &[])));
    let consenting = mk_consenting_labels();
    let found = index.wanting_mirror_in(&mk_namespace("team-b", consenting.clone()), &mk_consent());
    assert_eq!(found, vec![ObjectRef::from(&named("exact", "x"))]);
    assert!(
        index
            .wanting_mirror_in(&mk_namespace("team-c", consenting.clone()), &mk_consent())
            .is_empty()
    );
    let by_name = &index.lock().by_name;
    assert_eq!(
        by_name.len(),
        2,
        "one entry per name, none for plain sources"
    );
}

#[test]
fn globs_and_selectors_are_compared_with_every_namespace() {
    let index = MirroringSources::default();
    index.observe(&Event::Apply(named("glob", "team-*")));
    let selecting = with_annotations(
        mk_source("selecting", &[]),
        &[(MIRROR_TO_SELECTOR_ANNOTATION, "env=prod")],
    );
    index.observe(&Event::Apply(selecting));
    let mut prod = mk_consenting_labels();
    prod.insert("env".into(), "prod".into());
    let mut found = index.wanting_mirror_in(&mk_namespace("team-x", prod.clone()), &mk_consent());
    found.sort_by_key(|r| r.name.clone());
    assert_eq!(
        found.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        ["glob", "selecting"]
    );
    assert!(
        index
            .wanting_mirror_in(&mk_namespace("team-x", BTreeMap::new()), &mk_consent())
            .is_empty(),
        "consent first"
    );
}

#[test]
fn a_changed_or_deleted_source_is_refiled_or_forgotten() {
    let index = MirroringSources::default();
    index.observe(&Event::Apply(named("s", "team-a")));
    index.observe(&Event::Apply(named("s", "team-b")));
    let consenting = mk_consenting_labels();
    assert!(
        index
            .wanting_mirror_in(&mk_namespace("team-a", consenting.clone()), &mk_consent())
            .is_empty()
    );
    assert_eq!(
        index
            .wanting_mirror_in(&mk_namespace("team-b", consenting.clone()), &mk_consent())
            .len(),
        1
    );
    index.observe(&Event::Apply(with_annotations(
        named("s", "team-b"),
        &[(crate::decisions::targets::MIRROR_TO_ANNOTATION, "Bad_Name")],
    )));
    assert!(
        index.lock().targets.is_empty(),
        "malformed: asks for nothing"
    );
    index.observe(&Event::Apply(named("s", "team-b")));
    index.observe(&Event::Delete(named("s", "team-b")));
    let left = index.lock();
    assert!(left.targets.is_empty() && left.by_name.is_empty());
}

#[test]
fn a_relist_replaces_the_index() {
    let index = MirroringSources::default();
    index.observe(&Event::Apply(named("old", "team-a")));
    index.observe(&Event::Init);
    index.observe(&Event::InitApply(named("new", "team-a")));
    index.observe(&Event::InitDone);
    let found = index.wanting_mirror_in(
        &mk_namespace("team-a", mk_consenting_labels()),
        &mk_consent(),
    );
    assert_eq!(found, vec![ObjectRef::from(&named("new", "x"))]);
    let _ = mk_map(&[]);
}

fn names(found: Vec<ObjectRef<k8s_openapi::api::core::v1::ConfigMap>>) -> Vec<String> {
    let mut names: Vec<String> = found.into_iter().map(|r| r.name).collect();
    names.sort();
    names
}

#[test]
fn a_glob_source_is_found_only_from_names_beginning_as_its_glob_does() {
    let index = MirroringSources::default();
    index.observe(&Event::Apply(named("teams", "team-*")));
    index.observe(&Event::Apply(named("prod", "*-prod")));
    index.observe(&Event::Apply(named("both", "team-*,web-*")));
    let consenting = mk_consenting_labels();
    let in_namespace = |name: &str| {
        names(index.wanting_mirror_in(&mk_namespace(name, consenting.clone()), &mk_consent()))
    };
    assert_eq!(in_namespace("team-a"), ["both", "teams"]);
    assert_eq!(in_namespace("web-prod"), ["both", "prod"]);
    assert!(in_namespace("other").is_empty());
    let filed = index.lock();
    assert_eq!(
        filed
            .by_prefix
            .keys()
            .map(String::as_str)
            .collect::<BTreeSet<_>>(),
        BTreeSet::from(["", "team-", "web-"])
    );
    assert!(filed.by_selector.is_empty());
}

#[test]
fn a_glob_source_changed_or_deleted_leaves_no_filing_behind() {
    let index = MirroringSources::default();
    index.observe(&Event::Apply(named("s", "team-*")));
    index.observe(&Event::Apply(named("s", "web-*")));
    let consenting = mk_consenting_labels();
    assert!(
        index
            .wanting_mirror_in(&mk_namespace("team-a", consenting.clone()), &mk_consent())
            .is_empty(),
        "refiled under its new glob"
    );
    assert_eq!(
        index
            .wanting_mirror_in(&mk_namespace("web-a", consenting.clone()), &mk_consent())
            .len(),
        1
    );
    let selecting = with_annotations(
        named("s", "web-*"),
        &[(MIRROR_TO_SELECTOR_ANNOTATION, "env=prod")],
    );
    index.observe(&Event::Apply(selecting.clone()));
    assert_eq!(index.lock().by_selector.len(), 1);
    index.observe(&Event::Delete(selecting));
    let left = index.lock();
    assert!(left.targets.is_empty() && left.by_prefix.is_empty() && left.by_selector.is_empty());
}
