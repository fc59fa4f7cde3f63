//! The copies a source should have, and the decisions made about them:
//! their names and checksums, whose an existing object is, and how it
//! differs from what it should be.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use sha2::{Digest, Sha256};

use super::*;
use crate::cache_form::CachedCopy;
use crate::contract::{checksum, mirror_of, source_name_of};
use crate::ownership::{Ownership, mirror_ownership, ownership};
use crate::plan::compare::{Difference, difference, merge_onto, needs_recreate};
use crate::test_fixtures::{SUFFIX, mk_binary, mk_companion_of, mk_map, mk_source, source_keys};

#[test]
fn companion_is_named_after_its_source_with_the_suffix() {
    assert_eq!(companion_name("colors", SUFFIX), "colors-synced");
    assert_eq!(companion_name("x-synced", SUFFIX), "x-synced-synced");
}

#[test]
fn source_name_is_recovered_from_a_companion_name() {
    assert_eq!(
        source_name_of("colors-synced", SUFFIX).as_deref(),
        Some("colors")
    );
    assert_eq!(source_name_of("colors", SUFFIX), None);
    assert_eq!(source_name_of("-synced", SUFFIX), None);
}

#[test]
fn checksum_ignores_the_order_keys_were_written_in() {
    let mut forward = BTreeMap::new();
    forward.insert("a".to_owned(), "1".to_owned());
    forward.insert("b".to_owned(), "2".to_owned());
    let mut backward = BTreeMap::new();
    backward.insert("b".to_owned(), "2".to_owned());
    backward.insert("a".to_owned(), "1".to_owned());
    assert_eq!(
        checksum(Some(&forward), None),
        checksum(Some(&backward), None)
    );
}

#[test]
fn checksum_is_a_stable_sha256_hex_of_the_canonical_encoding() {
    // Pinned so that a change to the encoding, which would make every
    // running controller rewrite every companion, cannot go unnoticed.
    let sum = checksum(Some(&mk_map(&[("color", "blue")])), None);
    assert_eq!(sum.len(), 64);
    assert!(sum.chars().all(|c| c.is_ascii_hexdigit()));
    let mut hasher = Sha256::new();
    hasher.update(b"d");
    hasher.update(1u64.to_be_bytes());
    hasher.update(5u64.to_be_bytes());
    hasher.update(b"color");
    hasher.update(4u64.to_be_bytes());
    hasher.update(b"blue");
    hasher.update(b"b");
    hasher.update(0u64.to_be_bytes());
    assert_eq!(sum, hex::encode(hasher.finalize()));
}

#[test]
fn checksum_tells_apart_contents_that_concatenate_alike() {
    let split_one_way = mk_map(&[("ab", "c")]);
    let split_other_way = mk_map(&[("a", "bc")]);
    assert_ne!(
        checksum(Some(&split_one_way), None),
        checksum(Some(&split_other_way), None)
    );
}

#[test]
fn checksum_keeps_data_and_binary_data_apart() {
    let as_text = mk_map(&[("k", "v")]);
    let as_bytes = mk_binary(&[("k", b"v")]);
    assert_ne!(
        checksum(Some(&as_text), None),
        checksum(None, Some(&as_bytes))
    );
}

#[test]
fn checksum_of_empty_maps_equals_checksum_of_absent_maps() {
    assert_eq!(
        checksum(Some(&BTreeMap::new()), Some(&BTreeMap::new())),
        checksum(None, None)
    );
}

#[test]
fn desired_companion_copies_content_and_immutability_exactly() {
    let mut source = mk_source("colors", &[("a", "1"), ("b", "2")]);
    source.binary_data = Some(mk_binary(&[("blob", &[0, 159, 146, 150, 255])]));
    source.immutable = Some(true);
    let companion = desired_companion(&source, SUFFIX).unwrap();
    assert_eq!(companion.metadata.name.as_deref(), Some("colors-synced"));
    assert_eq!(companion.metadata.namespace.as_deref(), Some("ns"));
    assert_eq!(companion.data, source.data);
    assert_eq!(companion.binary_data, source.binary_data);
    assert_eq!(companion.immutable, Some(true));
}

#[test]
fn desired_companion_carries_no_label_or_annotation_of_the_source() {
    let companion = desired_companion(&mk_source("colors", &[("a", "1")]), SUFFIX).unwrap();
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
    let companion = desired_companion(&mk_source("colors", &[]), SUFFIX).unwrap();
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
    assert!(desired_companion(&mk_source(&longest_allowed, &[]), SUFFIX).is_ok());
    let too_long = "a".repeat(MAX_NAME_LEN - SUFFIX.len() + 1);
    let refusal = desired_companion(&mk_source(&too_long, &[]), SUFFIX).unwrap_err();
    assert!(matches!(refusal, Refusal::NameTooLong { len: 254, .. }));
}

#[test]
fn a_companion_is_never_treated_as_a_source() {
    let source = mk_source("colors", &[("a", "1")]);
    let companion = mk_companion_of(&source);
    assert_eq!(
        desired_companion(&companion, SUFFIX).unwrap_err(),
        Refusal::SourceIsCompanion
    );
}

#[test]
fn a_companion_controlled_by_the_source_is_ours() {
    let source = mk_source("colors", &[]);
    assert_eq!(
        ownership(
            &CachedCopy::of(&mk_companion_of(&source)),
            "colors",
            "uid-1"
        ),
        Ownership::Ours
    );
}

#[test]
fn a_companion_of_a_deleted_source_with_the_same_name_is_adoptable() {
    let source = mk_source("colors", &[]);
    assert_eq!(
        ownership(
            &CachedCopy::of(&mk_companion_of(&source)),
            "colors",
            "uid-2"
        ),
        Ownership::Adoptable
    );
}

#[test]
fn a_companion_whose_owner_reference_was_removed_by_hand_is_adoptable() {
    let mut companion = mk_companion_of(&mk_source("colors", &[]));
    companion.metadata.owner_references = None;
    assert_eq!(
        ownership(&CachedCopy::of(&companion), "colors", "uid-1"),
        Ownership::Adoptable
    );
}

#[test]
fn a_companion_edited_by_hand_and_without_owner_is_not_adopted() {
    let mut companion = mk_companion_of(&mk_source("colors", &[("a", "1")]));
    companion.metadata.owner_references = None;
    companion.data = Some(mk_map(&[("a", "forged")]));
    assert_eq!(
        ownership(&CachedCopy::of(&companion), "colors", "uid-1"),
        Ownership::Foreign
    );
}

#[test]
fn a_mirror_is_never_a_companion_and_a_companion_never_a_mirror() {
    let tenant_source = mk_source("app-synced", &[("k", "evil")]);
    let mut mirror = desired_mirror(&tenant_source, "b").unwrap();
    mirror.metadata.namespace = Some("b".into());
    assert_eq!(
        ownership(&CachedCopy::of(&mirror), "app", "uid-b"),
        Ownership::Foreign
    );

    let source = mk_source("colors", &[]);
    let mut companion = mk_companion_of(&source);
    companion
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(MIRROR_OF_ANNOTATION.into(), "ns/colors".into());
    assert_eq!(
        mirror_ownership(&CachedCopy::of(&companion), &source),
        Ownership::Foreign
    );
}

#[test]
fn a_source_being_deleted_gets_no_copies() {
    let mut source = mk_source("colors", &[]);
    source.metadata.deletion_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()),
    );
    assert_eq!(
        desired_companion(&source, "-synced"),
        Err(Refusal::BeingDeleted)
    );
    assert_eq!(desired_mirror(&source, "b"), Err(Refusal::BeingDeleted));
}

#[test]
fn an_unrelated_configmap_with_the_companion_name_is_foreign() {
    let mut stranger = mk_source("colors-synced", &[]);
    stranger.metadata.labels = None;
    assert_eq!(
        ownership(&CachedCopy::of(&stranger), "colors", "uid-1"),
        Ownership::Foreign
    );
}

#[test]
fn a_configmap_controlled_by_something_else_is_foreign_even_with_our_label() {
    let mut companion = mk_companion_of(&mk_source("colors", &[]));
    companion.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: "web".into(),
        uid: "uid-9".into(),
        controller: Some(true),
        block_owner_deletion: None,
    }]);
    assert_eq!(
        ownership(&CachedCopy::of(&companion), "colors", "uid-1"),
        Ownership::Foreign
    );
}

#[test]
fn an_up_to_date_companion_needs_no_write() {
    let source = mk_source("colors", &[("a", "1")]);
    let desired = desired_companion(&source, SUFFIX).unwrap();
    let mut actual = mk_companion_of(&source);
    actual
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert("added-by-someone".into(), "x".into());
    assert_eq!(
        difference(&CachedCopy::of(&actual), &desired, &source_keys()),
        Difference::None
    );
}

#[test]
fn a_changed_source_is_told_apart_from_a_hand_edit() {
    let before = mk_source("colors", &[("a", "1")]);
    let actual = mk_companion_of(&before);
    let after = mk_source("colors", &[("a", "2")]);
    let desired = desired_companion(&after, SUFFIX).unwrap();
    assert_eq!(
        difference(&CachedCopy::of(&actual), &desired, &source_keys()),
        Difference::SourceChanged
    );

    let mut edited = mk_companion_of(&before);
    edited.data = Some(mk_map(&[("a", "1"), ("extra", "by hand")]));
    let desired_before = desired_companion(&before, SUFFIX).unwrap();
    assert_eq!(
        difference(&CachedCopy::of(&edited), &desired_before, &source_keys()),
        Difference::Drifted
    );
}

#[test]
fn edits_to_owned_metadata_count_as_drift() {
    let source = mk_source("colors", &[("a", "1")]);
    let desired = desired_companion(&source, SUFFIX).unwrap();
    let edits: Vec<fn(&mut ConfigMap)> = vec![
        |c| {
            c.metadata.annotations = None;
        },
        |c| {
            c.metadata.owner_references = None;
        },
        |c| {
            c.metadata.labels = None;
        },
        |c| {
            c.metadata
                .labels
                .get_or_insert_with(BTreeMap::new)
                .insert("workshop.io/managed".into(), "true".into());
        },
        |c| {
            c.binary_data = Some(mk_binary(&[("k", b"v")]));
        },
    ];
    for edit in edits {
        let mut actual = mk_companion_of(&source);
        edit(&mut actual);
        assert_eq!(
            difference(&CachedCopy::of(&actual), &desired, &source_keys()),
            Difference::Drifted
        );
    }
}

#[test]
fn merge_restores_owned_fields_and_keeps_foreign_metadata() {
    let source = mk_source("colors", &[("a", "1")]);
    let desired = desired_companion(&source, SUFFIX).unwrap();
    let mut actual = mk_companion_of(&source);
    actual.data = Some(mk_map(&[("a", "tampered"), ("extra", "x")]));
    actual.metadata.owner_references = None;
    let labels = actual.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.insert("workshop.io/managed".into(), "true".into());
    labels.insert("keep".into(), "me".into());

    let merged = merge_onto(&CachedCopy::of(&actual), &desired, &source_keys());
    assert_eq!(merged.data, desired.data);
    assert_eq!(
        merged.metadata.owner_references,
        desired.metadata.owner_references
    );
    assert_eq!(merged.metadata.resource_version.as_deref(), Some("42"));
    let labels = merged.metadata.labels.as_ref().unwrap();
    assert!(!labels.contains_key("workshop.io/managed"));
    assert_eq!(labels.get("keep").map(String::as_str), Some("me"));
    assert_eq!(
        difference(&CachedCopy::of(&merged), &desired, &source_keys()),
        Difference::None
    );
}

#[test]
fn an_immutable_companion_with_other_content_must_be_recreated() {
    let mut source = mk_source("colors", &[("a", "1")]);
    source.immutable = Some(true);
    let actual = mk_companion_of(&source);
    source.data = Some(mk_map(&[("a", "2")]));
    let desired = desired_companion(&source, SUFFIX).unwrap();
    assert!(needs_recreate(&CachedCopy::of(&actual), &desired));

    let mut metadata_only = actual.clone();
    metadata_only.metadata.annotations = None;
    let mut unchanged = mk_source("colors", &[("a", "1")]);
    unchanged.immutable = Some(true);
    assert!(!needs_recreate(
        &CachedCopy::of(&metadata_only),
        &desired_companion(&unchanged, SUFFIX).unwrap()
    ));
}

#[test]
fn a_mirror_names_its_source_instead_of_an_owner() {
    let source = mk_source("colors", &[("a", "1")]);
    let mirror = desired_mirror(&source, "team-a").unwrap();
    assert_eq!(mirror.metadata.name.as_deref(), Some("colors"));
    assert_eq!(mirror.metadata.namespace.as_deref(), Some("team-a"));
    assert_eq!(mirror.metadata.owner_references, None);
    assert_eq!(mirror.data, source.data);
    assert_eq!(mirror_of(&mirror), Some(("ns".into(), "colors".into())));
    let annotations = mirror.metadata.annotations.as_ref().unwrap();
    assert_eq!(annotations[MIRROR_OF_UID_ANNOTATION], "uid-1");
    assert_eq!(annotations[CHECKSUM_ANNOTATION], content_checksum(&source));
}

#[test]
fn a_mirror_is_ours_only_for_the_source_it_names() {
    let source = mk_source("colors", &[]);
    let mirror = desired_mirror(&source, "team-a").unwrap();
    assert_eq!(
        mirror_ownership(&CachedCopy::of(&mirror), &source),
        Ownership::Ours
    );

    let mut reborn = source.clone();
    reborn.metadata.uid = Some("uid-2".into());
    assert_eq!(
        mirror_ownership(&CachedCopy::of(&mirror), &reborn),
        Ownership::Adoptable
    );

    let mut same_name_elsewhere = source.clone();
    same_name_elsewhere.metadata.namespace = Some("other".into());
    assert_eq!(
        mirror_ownership(&CachedCopy::of(&mirror), &same_name_elsewhere),
        Ownership::Foreign
    );

    let mut stranger = mk_source("colors", &[]);
    stranger.metadata.labels = None;
    assert_eq!(
        mirror_ownership(&CachedCopy::of(&stranger), &source),
        Ownership::Foreign
    );
}

#[test]
fn a_mirror_whose_source_annotations_were_edited_has_drifted() {
    let source = mk_source("colors", &[("a", "1")]);
    let desired = desired_mirror(&source, "team-a").unwrap();
    let mut actual = desired.clone();
    actual
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(MIRROR_OF_UID_ANNOTATION.into(), "forged".into());
    assert_eq!(
        difference(&CachedCopy::of(&actual), &desired, &source_keys()),
        Difference::Drifted
    );
    assert_eq!(
        difference(&CachedCopy::of(&desired), &desired, &source_keys()),
        Difference::None
    );
}
