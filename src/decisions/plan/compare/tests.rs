use super::*;
use crate::contract::MIRROR_OF_UID_ANNOTATION;
use crate::decisions::desired::{desired_companion, desired_mirror};
use crate::test_fixtures::{SUFFIX, mk_binary, mk_companion_of, mk_map, mk_source, source_keys};
use k8s_openapi::api::core::v1::ConfigMap;

#[test]
fn an_up_to_date_companion_needs_no_write() {
    let source = mk_source("colors", &[("a", "1")]);
    let desired = desired_companion(&source, SUFFIX, &()).unwrap();
    let mut actual = mk_companion_of(&source);
    actual
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert("added-by-someone".into(), "x".into());
    assert_eq!(
        difference(&CachedCopy::of(&actual, &()), &desired, &source_keys()),
        Difference::None
    );
}

#[test]
fn a_changed_source_is_told_apart_from_a_hand_edit() {
    let before = mk_source("colors", &[("a", "1")]);
    let actual = mk_companion_of(&before);
    let after = mk_source("colors", &[("a", "2")]);
    let desired = desired_companion(&after, SUFFIX, &()).unwrap();
    assert_eq!(
        difference(&CachedCopy::of(&actual, &()), &desired, &source_keys()),
        Difference::SourceChanged
    );

    let mut edited = mk_companion_of(&before);
    edited.data = Some(mk_map(&[("a", "1"), ("extra", "by hand")]));
    let desired_before = desired_companion(&before, SUFFIX, &()).unwrap();
    assert_eq!(
        difference(
            &CachedCopy::of(&edited, &()),
            &desired_before,
            &source_keys()
        ),
        Difference::Drifted
    );
}

#[test]
fn edits_to_owned_metadata_count_as_drift() {
    let source = mk_source("colors", &[("a", "1")]);
    let desired = desired_companion(&source, SUFFIX, &()).unwrap();
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
            difference(&CachedCopy::of(&actual, &()), &desired, &source_keys()),
            Difference::Drifted
        );
    }
}

#[test]
fn merge_restores_owned_fields_and_keeps_foreign_metadata() {
    let source = mk_source("colors", &[("a", "1")]);
    let desired = desired_companion(&source, SUFFIX, &()).unwrap();
    let mut actual = mk_companion_of(&source);
    actual.data = Some(mk_map(&[("a", "tampered"), ("extra", "x")]));
    actual.metadata.owner_references = None;
    let labels = actual.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.insert("workshop.io/managed".into(), "true".into());
    labels.insert("keep".into(), "me".into());

    let merged = merge_onto(&CachedCopy::of(&actual, &()), &desired, &source_keys());
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
        difference(&CachedCopy::of(&merged, &()), &desired, &source_keys()),
        Difference::None
    );
}

#[test]
fn an_immutable_companion_with_other_content_must_be_recreated() {
    let mut source = mk_source("colors", &[("a", "1")]);
    source.immutable = Some(true);
    let actual = mk_companion_of(&source);
    source.data = Some(mk_map(&[("a", "2")]));
    let desired = desired_companion(&source, SUFFIX, &()).unwrap();
    assert!(needs_recreate(&CachedCopy::of(&actual, &()), &desired));

    let mut metadata_only = actual.clone();
    metadata_only.metadata.annotations = None;
    let mut unchanged = mk_source("colors", &[("a", "1")]);
    unchanged.immutable = Some(true);
    assert!(!needs_recreate(
        &CachedCopy::of(&metadata_only, &()),
        &desired_companion(&unchanged, SUFFIX, &()).unwrap()
    ));
}

#[test]
fn a_mirror_whose_source_annotations_were_edited_has_drifted() {
    let source = mk_source("colors", &[("a", "1")]);
    let desired = desired_mirror(&source, "team-a", &()).unwrap();
    let mut actual = desired.clone();
    actual
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(MIRROR_OF_UID_ANNOTATION.into(), "forged".into());
    assert_eq!(
        difference(&CachedCopy::of(&actual, &()), &desired, &source_keys()),
        Difference::Drifted
    );
    assert_eq!(
        difference(&CachedCopy::of(&desired, &()), &desired, &source_keys()),
        Difference::None
    );
}
