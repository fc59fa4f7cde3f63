//! What the copies of a source should be, and which sources get none.

use super::*;
use crate::contract::{content_checksum, mirror_of};
use crate::test_fixtures::{SUFFIX, mk_binary, mk_companion_of, mk_source};

#[test]
fn desired_companion_copies_content_and_immutability_exactly() {
    let mut source = mk_source("colors", &[("a", "1"), ("b", "2")]);
    source.binary_data = Some(mk_binary(&[("blob", &[0, 159, 146, 150, 255])]));
    source.immutable = Some(true);
    let companion = desired_companion(&source, SUFFIX, &()).unwrap();
    assert_eq!(companion.metadata.name.as_deref(), Some("colors-synced"));
    assert_eq!(companion.metadata.namespace.as_deref(), Some("ns"));
    assert_eq!(companion.data, source.data);
    assert_eq!(companion.binary_data, source.binary_data);
    assert_eq!(companion.immutable, Some(true));
}

#[test]
fn desired_companion_carries_no_label_or_annotation_of_the_source() {
    let companion = desired_companion(&mk_source("colors", &[("a", "1")]), SUFFIX, &()).unwrap();
    let labels = companion.metadata.labels.unwrap();
    assert_eq!(labels.len(), 1);
    assert_eq!(
        labels.get(MANAGED_BY_LABEL).map(String::as_str),
        Some(MANAGER_NAME)
    );
    let annotations = companion.metadata.annotations.unwrap();
    assert_eq!(annotations.len(), 1);
    assert!(annotations.contains_key(CHECKSUM_ANNOTATION));
}

#[test]
fn desired_companion_has_one_controller_reference_to_its_source() {
    let companion = desired_companion(&mk_source("colors", &[]), SUFFIX, &()).unwrap();
    let refs = companion.metadata.owner_references.unwrap();
    assert_eq!(refs.len(), 1);
    let owner = &refs[0];
    assert_eq!(
        (
            owner.api_version.as_str(),
            owner.kind.as_str(),
            owner.name.as_str(),
            owner.uid.as_str()
        ),
        ("v1", "ConfigMap", "colors", "uid-1")
    );
    assert_eq!(owner.controller, Some(true));
    assert_eq!(owner.block_owner_deletion, None);
}

#[test]
fn a_name_that_would_exceed_253_characters_is_refused() {
    let longest_allowed = "a".repeat(MAX_NAME_LEN - SUFFIX.len());
    assert!(desired_companion(&mk_source(&longest_allowed, &[]), SUFFIX, &()).is_ok());
    let too_long = "a".repeat(MAX_NAME_LEN - SUFFIX.len() + 1);
    let refusal = desired_companion(&mk_source(&too_long, &[]), SUFFIX, &()).unwrap_err();
    assert!(matches!(refusal, Refusal::NameTooLong { len: 254, .. }));
}

#[test]
fn a_companion_is_never_treated_as_a_source() {
    let source = mk_source("colors", &[("a", "1")]);
    let companion = mk_companion_of(&source);
    assert_eq!(
        desired_companion(&companion, SUFFIX, &()).unwrap_err(),
        Refusal::SourceIsCompanion
    );
}

#[test]
fn a_source_being_deleted_gets_no_copies() {
    let mut source = mk_source("colors", &[]);
    source.metadata.deletion_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()),
    );
    assert_eq!(
        desired_companion(&source, "-synced", &()),
        Err(Refusal::BeingDeleted)
    );
    assert_eq!(
        desired_mirror(&source, "b", &()),
        Err(Refusal::BeingDeleted)
    );
}

#[test]
fn a_mirror_names_its_source_instead_of_an_owner() {
    let source = mk_source("colors", &[("a", "1")]);
    let mirror = desired_mirror(&source, "team-a", &()).unwrap();
    assert_eq!(mirror.metadata.name.as_deref(), Some("colors"));
    assert_eq!(mirror.metadata.namespace.as_deref(), Some("team-a"));
    assert_eq!(mirror.metadata.owner_references, None);
    assert_eq!(mirror.data, source.data);
    assert_eq!(
        mirror_of(&mirror.metadata),
        Some(("ns".into(), "colors".into()))
    );
    let annotations = mirror.metadata.annotations.as_ref().unwrap();
    assert_eq!(annotations[MIRROR_OF_UID_ANNOTATION], "uid-1");
    assert_eq!(annotations[CHECKSUM_ANNOTATION], content_checksum(&source));
}

#[test]
fn a_helm_release_record_is_never_a_source_by_name_or_by_label() {
    let named = mk_source("sh.helm.release.v1.web.v3", &[]);
    assert!(never_a_source(&named, &()).is_some_and(|why| why.contains("Helm release record")));
    let mut labeled = mk_source("web", &[]);
    labeled
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("owner".into(), "helm".into());
    assert!(never_a_source(&labeled, &()).is_some());
    let mut owned_by_a_team = mk_source("web", &[]);
    owned_by_a_team
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("owner".into(), "team-a".into());
    assert_eq!(never_a_source(&owned_by_a_team, &()), None);
    let mut tiller = mk_source("web.v1", &[]);
    tiller
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("OWNER".into(), "TILLER".into());
    assert!(never_a_source(&tiller, &()).is_some_and(|why| why.contains("OWNER=TILLER")));
    assert_eq!(
        never_a_source(&mk_source("sh.helm.release", &[]), &()),
        None
    );
}

#[test]
fn what_an_install_keeps_for_itself_is_never_a_source() {
    let mut key = mk_source("configmap-mirror-digest-key", &[]);
    key.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(
            crate::contract::install::INSTALL_OWNED_LABEL.into(),
            "digest-key".into(),
        );
    let why = never_a_source(&key, &()).unwrap();
    assert!(
        why.contains("workshop.io/install-owned=digest-key"),
        "{why}"
    );
    // The slim form the sources' cache keeps says it still.
    let mut slim = key.clone();
    crate::decisions::cache_form::slim_source(&mut slim);
    assert!(never_a_source(&slim, &()).is_some());
}
