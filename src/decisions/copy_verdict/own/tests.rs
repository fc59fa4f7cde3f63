use std::collections::BTreeMap;

use super::*;
use crate::decisions::install::Install;
use crate::decisions::ownership::claimed_source;
use crate::decisions::{copy_request::CopyRequest, desired_copy::desired};
use crate::test_fixtures::{
    SUFFIX, mk_configmap, mk_consent, mk_consenting_labels, mk_desired_companion,
    mk_desired_mirror, mk_install, mk_mirrored_source, mk_namespace, mk_source,
};
use k8s_openapi::api::core::v1::ConfigMap;

#[test]
fn a_companion_whose_source_is_no_longer_managed_is_pruned() {
    let companion = mk_desired_companion(&mk_source("a", &[("key", "v")]), &()).unwrap();
    assert!(should_prune::<ConfigMap>(
        &companion.metadata,
        SUFFIX,
        |_| false
    ));
    assert!(!should_prune::<ConfigMap>(
        &companion.metadata,
        SUFFIX,
        |name| name == "a"
    ));
}

#[test]
fn a_copy_under_another_name_is_never_pruned() {
    let install = Install {
        suffix: "-copy".into(),
        ..mk_install()
    };
    let source = mk_source("a", &[("key", "v")]);
    let companion = desired(&source, &CopyRequest::COMPANION, "ns", &install, &()).unwrap();
    assert!(!should_prune::<ConfigMap>(
        &companion.metadata,
        SUFFIX,
        |_| false
    ));
    let mut backup = mk_desired_companion(&mk_source("a", &[("key", "v")]), &()).unwrap();
    backup.metadata.name = Some("a-backup".into());
    assert!(!should_prune::<ConfigMap>(&backup.metadata, SUFFIX, |_| {
        false
    }));
}

#[test]
fn consent_withdrawn_removes_a_mirror_even_while_the_annotation_is_malformed() {
    let consent = mk_consent();
    let typo = mk_mirrored_source("");
    assert!(mirror_wanted(
        Some(&typo.metadata),
        Some(&mk_namespace("team-a", mk_consenting_labels())),
        &consent
    ));
    assert!(!mirror_wanted(
        Some(&typo.metadata),
        Some(&mk_namespace("team-a", BTreeMap::new())),
        &consent
    ));
}

#[test]
fn a_companion_without_a_controlling_owner_is_never_pruned() {
    let mut companion = mk_desired_companion(&mk_source("a", &[("key", "v")]), &()).unwrap();
    companion.metadata.owner_references = None;
    assert!(!should_prune::<ConfigMap>(
        &companion.metadata,
        SUFFIX,
        |_| false
    ));
    assert_eq!(
        claimed_source::<ConfigMap>(&companion.metadata, SUFFIX),
        Some(("ns".into(), "a".into()))
    );
}

#[test]
fn a_mirror_is_wanted_while_its_source_asks_and_its_namespace_consents() {
    let consent = mk_consent();
    let source = mk_mirrored_source("team-*");
    assert!(mirror_wanted(
        Some(&source.metadata),
        Some(&mk_namespace("team-a", mk_consenting_labels())),
        &consent
    ));
    assert!(
        !mirror_wanted(
            Some(&source.metadata),
            Some(&mk_namespace("team-a", BTreeMap::new())),
            &consent
        ),
        "consent withdrawn"
    );
    assert!(
        !mirror_wanted(
            None,
            Some(&mk_namespace("team-a", mk_consenting_labels())),
            &consent
        ),
        "source gone"
    );
    let narrowed = mk_mirrored_source("payments");
    assert!(
        !mirror_wanted(
            Some(&narrowed.metadata),
            Some(&mk_namespace("team-a", mk_consenting_labels())),
            &consent
        ),
        "not asked any more"
    );
    let typo = mk_mirrored_source("team_*");
    assert!(
        mirror_wanted(
            Some(&typo.metadata),
            Some(&mk_namespace("team-a", mk_consenting_labels())),
            &consent
        ),
        "kept until fixed"
    );
}

#[test]
fn a_mirror_is_unwanted_once_its_namespace_stops_accepting_the_source_namespace() {
    let consent = mk_consent();
    let source = mk_mirrored_source("*");
    let mut namespace = mk_namespace("team-a", mk_consenting_labels());
    assert!(mirror_wanted(
        Some(&source.metadata),
        Some(&namespace),
        &consent
    ));
    namespace.accept_from = Some("platform-*".into());
    assert!(!mirror_wanted(
        Some(&source.metadata),
        Some(&namespace),
        &consent
    ));
    namespace.accept_from = Some("ns".into());
    assert!(mirror_wanted(
        Some(&source.metadata),
        Some(&namespace),
        &consent
    ));
    namespace.accept_from = Some("Not A List".into());
    assert!(
        !mirror_wanted(Some(&source.metadata), Some(&namespace), &consent),
        "a malformed list accepts nothing"
    );
    let protected = mk_namespace("kube-system", mk_consenting_labels());
    assert!(!mirror_wanted(
        Some(&source.metadata),
        Some(&protected),
        &consent
    ));
    let typo = mk_mirrored_source("team_*");
    assert!(
        !mirror_wanted(Some(&typo.metadata), Some(&protected), &consent),
        "a malformed source keeps no mirror in a protected namespace"
    );
}

#[test]
fn a_mirror_whose_name_became_reserved_is_no_longer_wanted() {
    let mirror = mk_desired_mirror(&mk_mirrored_source("*"), "team-a", &()).unwrap();
    let name = mirror.metadata.name.clone().unwrap();
    assert!(mirror_name_reserved(
        &mirror.metadata,
        &["kube-root-ca.crt".into(), name]
    ));
    assert!(!mirror_name_reserved(
        &mirror.metadata,
        &["kube-root-ca.crt".into()]
    ));
}

#[test]
fn an_unmarked_copy_names_its_source_only_in_the_shape_this_install_writes() {
    let source = mk_mirrored_source("*");
    let companion = mk_desired_companion(&source, &()).unwrap();
    let expected = SourceRef {
        namespace: source.metadata.namespace.clone().unwrap(),
        name: source.metadata.name.clone().unwrap(),
        uid: source.metadata.uid.clone().unwrap(),
    };
    assert_eq!(
        unmarked_copy_source::<ConfigMap>(&companion.metadata, SUFFIX),
        Some(expected.clone())
    );
    assert_eq!(
        unmarked_copy_source::<ConfigMap>(&companion.metadata, "-copy"),
        None,
        "another suffix"
    );
    let mut mirror = mk_desired_mirror(&source, "team-a", &()).unwrap();
    assert_eq!(
        unmarked_copy_source::<ConfigMap>(&mirror.metadata, SUFFIX),
        Some(expected)
    );
    mirror.metadata.labels = None;
    assert_eq!(
        unmarked_copy_source::<ConfigMap>(&mirror.metadata, SUFFIX),
        None,
        "not labeled as ours"
    );
}

/// The verdict on `mirror` of `source` in a consenting namespace where
/// no other copy is.
fn verdict_on(mirror: &ConfigMap, source: &ConfigMap) -> CopyVerdict {
    verdict_with_at(mirror, source, None)
}

/// [`verdict_on`], with `at` the object at any other name there.
fn verdict_with_at(mirror: &ConfigMap, source: &ConfigMap, at: Option<&ConfigMap>) -> CopyVerdict {
    source_copy_verdict::<ConfigMap, _>(
        &mirror.metadata,
        &mk_install(),
        &mk_consent(),
        |_, _| Some(source),
        |name| Some(mk_namespace(name, mk_consenting_labels())),
        |_, _| at.map(|object| object.metadata.clone()),
    )
}

fn named_mirrors(source: ConfigMap, name: &str) -> ConfigMap {
    let mut source = source;
    source
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(crate::contract::MIRROR_NAME_ANNOTATION.into(), name.into());
    source
}

#[test]
fn a_mirror_under_a_name_its_source_no_longer_gives_goes_once_its_successor_is_there() {
    let source = mk_mirrored_source("team-a");
    let mirror = mk_desired_mirror(&source, "team-a", &()).unwrap();
    assert_eq!(verdict_on(&mirror, &source), CopyVerdict::Keep);
    let renamed = named_mirrors(source, "palette");
    let palette = mk_desired_mirror(&renamed, "team-a", &()).unwrap();
    assert_eq!(palette.metadata.name.as_deref(), Some("palette"));
    assert_eq!(verdict_on(&palette, &renamed), CopyVerdict::Keep);
    // Before the mirror under the new name is written (or while that name
    // is reserved or held by another object), the old one stays.
    assert_eq!(verdict_on(&mirror, &renamed), CopyVerdict::Keep);
    let mut theirs = mk_configmap("team-a", "palette");
    theirs.metadata.annotations = palette.metadata.annotations.clone();
    theirs.metadata.annotations.as_mut().unwrap().insert(
        crate::contract::MIRROR_OF_UID_ANNOTATION.into(),
        "another-uid".into(),
    );
    let held = verdict_with_at(&mirror, &renamed, Some(&theirs));
    assert_eq!(held, CopyVerdict::Keep, "another source's object there");
    let written = verdict_with_at(&mirror, &renamed, Some(&palette));
    assert_eq!(written, CopyVerdict::Unwanted(Unwanted::Renamed));
}

#[test]
fn a_malformed_mirror_name_or_targets_keeps_the_mirrors_under_any_name() {
    let renamed = named_mirrors(mk_mirrored_source("team-a"), "palette");
    let palette = mk_desired_mirror(&renamed, "team-a", &()).unwrap();
    let malformed = named_mirrors(mk_mirrored_source("team-a"), "Not A Name");
    assert_eq!(verdict_on(&palette, &malformed), CopyVerdict::Keep);
    let bad_targets = named_mirrors(mk_mirrored_source(""), "other");
    assert_eq!(verdict_on(&palette, &bad_targets), CopyVerdict::Keep);
}

#[test]
fn an_unwanted_copy_is_told_why() {
    let source = mk_mirrored_source("team-*");
    let mirror = mk_desired_mirror(&source, "team-a", &()).unwrap();
    let companion = mk_desired_companion(&source, &()).unwrap();
    let verdict = |copy: &ConfigMap, managed: Option<&ConfigMap>, install: &Install| {
        source_copy_verdict::<ConfigMap, _>(
            &copy.metadata,
            install,
            &mk_consent(),
            |_, _| managed,
            |name| Some(mk_namespace(name, mk_consenting_labels())),
            |_, _| None,
        )
    };
    let install = mk_install();
    assert_eq!(verdict(&mirror, Some(&source), &install), CopyVerdict::Keep);
    let unwanted = CopyVerdict::Unwanted;
    assert_eq!(
        verdict(&mirror, None, &install),
        unwanted(Unwanted::NotWantedHere)
    );
    assert_eq!(
        verdict(&companion, None, &install),
        unwanted(Unwanted::SourceNotManaged)
    );
    let reserving = Install {
        reserved_names: vec![mirror.metadata.name.clone().unwrap()],
        ..mk_install()
    };
    assert_eq!(
        verdict(&mirror, Some(&source), &reserving),
        unwanted(Unwanted::ReservedName)
    );
}

#[test]
fn a_mirror_admitted_by_a_grant_alone_is_kept_while_grants_are_not_known() {
    use crate::decisions::grants::{Grant, NamespaceGrants};
    let consent = mk_consent();
    let source = mk_mirrored_source("team-*");
    let from = serde_json::json!({"from": [{"namespace": "*", "kinds": ["ConfigMap"]}]});
    let granted = NamespaceGrants::known(vec![Grant::parse("g", Some(&from))]);
    let namespace = |grants| NamespaceFacts {
        grants,
        ..mk_namespace("team-a", BTreeMap::new())
    };
    let wanted = |grants| mirror_wanted(Some(&source.metadata), Some(&namespace(grants)), &consent);
    assert!(wanted(granted), "admitted by its grant");
    assert!(wanted(NamespaceGrants::NotKnown), "grants not known: kept");
    assert!(!wanted(NamespaceGrants::none()), "no grant: removed");
    let elsewhere = mk_mirrored_source("payments");
    let unknown = namespace(NamespaceGrants::NotKnown);
    assert!(
        !mirror_wanted(Some(&elsewhere.metadata), Some(&unknown), &consent),
        "grants not known: the source's own withdrawal still counts"
    );
}
