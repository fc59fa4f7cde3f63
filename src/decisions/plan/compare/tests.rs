use super::*;
use crate::contract::{MIRROR_OF_UID_ANNOTATION, SOURCE_SELECTOR_ANNOTATION};
use crate::decisions::cache_form::{copy_from_cache, slim_copy};
use crate::decisions::ownership::{Ownership, ownership};
use crate::kind::secret::SecretDigestKey;
use crate::test_fixtures::{
    colors_id, mk_binary, mk_companion_of, mk_desired_companion, mk_desired_mirror, mk_full_source,
    mk_map, mk_secret_source, mk_source, source_keys,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::{ByteString, api::core::v1::Secret};

#[test]
fn an_up_to_date_companion_needs_no_write() {
    let source = mk_source("colors", &[("a", "1")]);
    let desired = mk_desired_companion(&source, &()).unwrap();
    let mut actual = mk_companion_of(&source);
    actual
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert("added-by-someone".into(), "x".into());
    assert_eq!(
        difference(
            &CachedCopy::of(&actual),
            &desired,
            &colors_id(),
            &source_keys(),
            &()
        ),
        Difference::None
    );
}

#[test]
fn a_changed_source_is_told_apart_from_a_hand_edit() {
    let before = mk_source("colors", &[("a", "1")]);
    let actual = mk_companion_of(&before);
    let after = mk_source("colors", &[("a", "2")]);
    let desired = mk_desired_companion(&after, &()).unwrap();
    assert_eq!(
        difference(
            &CachedCopy::of(&actual),
            &desired,
            &colors_id(),
            &source_keys(),
            &()
        ),
        Difference::SourceChanged
    );

    let mut edited = mk_companion_of(&before);
    edited.data = Some(mk_map(&[("a", "1"), ("extra", "by hand")]));
    let desired_before = mk_desired_companion(&before, &()).unwrap();
    assert_eq!(
        difference(
            &CachedCopy::of(&edited),
            &desired_before,
            &colors_id(),
            &source_keys(),
            &()
        ),
        Difference::Drifted
    );
}

#[test]
fn edits_to_owned_metadata_count_as_drift() {
    let source = mk_source("colors", &[("a", "1")]);
    let desired = mk_desired_companion(&source, &()).unwrap();
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
            difference(
                &CachedCopy::of(&actual),
                &desired,
                &colors_id(),
                &source_keys(),
                &()
            ),
            Difference::Drifted
        );
    }
}

#[test]
fn merge_restores_owned_fields_and_keeps_foreign_metadata() {
    let source = mk_source("colors", &[("a", "1")]);
    let desired = mk_desired_companion(&source, &()).unwrap();
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
        difference(
            &CachedCopy::of(&merged),
            &desired,
            &colors_id(),
            &source_keys(),
            &()
        ),
        Difference::None
    );
}

#[test]
fn an_immutable_companion_with_other_content_must_be_recreated() {
    let mut source = mk_source("colors", &[("a", "1")]);
    source.immutable = Some(true);
    let actual = mk_companion_of(&source);
    source.data = Some(mk_map(&[("a", "2")]));
    let desired = mk_desired_companion(&source, &()).unwrap();
    assert!(needs_recreate(
        &CachedCopy::of(&actual),
        &desired,
        &colors_id(),
        &()
    ));

    let mut metadata_only = actual.clone();
    metadata_only.metadata.annotations = None;
    let mut unchanged = mk_source("colors", &[("a", "1")]);
    unchanged.immutable = Some(true);
    assert!(!needs_recreate(
        &CachedCopy::of(&metadata_only),
        &mk_desired_companion(&unchanged, &()).unwrap(),
        &colors_id(),
        &()
    ));
}

#[test]
fn a_mirror_whose_source_annotations_were_edited_has_drifted() {
    let source = mk_source("colors", &[("a", "1")]);
    let desired = mk_desired_mirror(&source, "team-a", &()).unwrap();
    let mut actual = desired.clone();
    actual
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(MIRROR_OF_UID_ANNOTATION.into(), "forged".into());
    assert_eq!(
        difference(
            &CachedCopy::of(&actual),
            &desired,
            &colors_id(),
            &source_keys(),
            &()
        ),
        Difference::Drifted
    );
    assert_eq!(
        difference(
            &CachedCopy::of(&desired),
            &desired,
            &colors_id(),
            &source_keys(),
            &()
        ),
        Difference::None
    );
}

#[test]
fn a_copy_read_from_the_cache_compares_like_the_full_copy() {
    let source = mk_full_source(&[("a", "1")]);
    let desired = mk_desired_companion(&source, &()).unwrap();
    let mut slim = mk_companion_of(&source);
    slim_copy(&mut slim);
    let cached = copy_from_cache(&slim);
    assert_eq!(
        difference(&cached, &desired, &colors_id(), &source_keys(), &()),
        Difference::None
    );
    assert_eq!(ownership(&cached, &colors_id(), &()), Ownership::Ours);

    let changed = mk_full_source(&[("a", "2")]);
    let desired_changed = mk_desired_companion(&changed, &()).unwrap();
    assert_eq!(
        difference(&cached, &desired_changed, &colors_id(), &source_keys(), &()),
        Difference::SourceChanged
    );
    let merged = merge_onto(&cached, &desired_changed, &source_keys());
    assert_eq!(merged.data, changed.data);
    let keys: Vec<&String> = merged
        .metadata
        .annotations
        .iter()
        .flatten()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        keys,
        [CHECKSUM_ANNOTATION, SOURCE_SELECTOR_ANNOTATION],
        "the digest is never written"
    );
    assert_eq!(merged.metadata.labels, desired.metadata.labels);

    let mut edited = mk_desired_companion(&source, &()).unwrap();
    edited.data = Some(mk_map(&[("a", "tampered")]));
    slim_copy(&mut edited);
    assert_eq!(
        difference(
            &copy_from_cache(&edited),
            &desired,
            &colors_id(),
            &source_keys(),
            &()
        ),
        Difference::Drifted
    );
}

/// A tenant's companion holding `guess` under another source's checksum.
fn forged_companion(desired: &Secret, guess: &str, checksum: &str) -> Secret {
    let mut forged = desired.clone();
    forged.metadata.uid = Some("companion-uid".into());
    forged.data = Some(BTreeMap::from([(
        "password".to_owned(),
        ByteString(guess.as_bytes().to_vec()),
    )]));
    forged
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(CHECKSUM_ANNOTATION.into(), checksum.into());
    forged
}

#[test]
fn another_source_s_checksum_on_a_copy_says_nothing_of_that_source_s_value() {
    let key = SecretDigestKey::from_bytes(&[9; SecretDigestKey::LEN]).unwrap();
    let victim = mk_secret_source("victim", "uid-v", "hunter2");
    let tenant = mk_secret_source("tenant", "uid-t", "mine");
    let victims_checksum = victim.content_digest(&key);
    let desired = mk_desired_companion(&tenant, &key).unwrap();
    let tenant_id = SourceId::of(&tenant.metadata);
    let [right, wrong] = ["hunter2", "wrong guess"].map(|guess| {
        let forged = CachedCopy::of(&forged_companion(&desired, guess, &victims_checksum));
        difference(&forged, &desired, &tenant_id, &source_keys(), &key)
    });
    assert_eq!((right, wrong), (Difference::Drifted, Difference::Drifted));

    // Without its owner reference it claims the tenant's source by name:
    // neither is taken for an untouched copy of it.
    let [right, wrong] = ["hunter2", "wrong guess"].map(|guess| {
        let mut forged = forged_companion(&desired, guess, &victims_checksum);
        forged.metadata.owner_references = None;
        ownership(&CachedCopy::of(&forged), &tenant_id, &key)
    });
    assert_eq!((right, wrong), (Ownership::Foreign, Ownership::Foreign));
}

#[test]
fn a_secret_copy_untouched_since_written_is_told_from_an_edited_one() {
    let key = SecretDigestKey::from_bytes(&[9; SecretDigestKey::LEN]).unwrap();
    let before = mk_secret_source("db", "uid-1", "old");
    let mut written = mk_desired_companion(&before, &key).unwrap();
    written.metadata.uid = Some("companion-uid".into());
    let after = mk_secret_source("db", "uid-1", "new");
    let desired = mk_desired_companion(&after, &key).unwrap();
    let id = SourceId::of(&after.metadata);
    assert_eq!(
        difference(
            &CachedCopy::of(&written),
            &desired,
            &id,
            &source_keys(),
            &key
        ),
        Difference::SourceChanged
    );
    let mut edited = written.clone();
    edited.data = Some(BTreeMap::from([(
        "password".to_owned(),
        ByteString(b"by hand".to_vec()),
    )]));
    assert_eq!(
        difference(
            &CachedCopy::of(&edited),
            &desired,
            &id,
            &source_keys(),
            &key
        ),
        Difference::Drifted
    );
    let mut ownerless = written;
    ownerless.metadata.owner_references = None;
    assert_eq!(
        ownership(&CachedCopy::of(&ownerless), &id, &key),
        Ownership::Adoptable,
        "an untouched copy whose owner reference was removed is taken back"
    );
}

#[test]
fn a_copy_lacking_only_its_deletion_mark_is_told_apart_from_a_drift() {
    let source = mk_source("colors", &[("a", "1")]);
    let actual = mk_companion_of(&source);
    let mut desired = mk_desired_companion(&source, &()).unwrap();
    let mark = crate::decisions::cluster_mirror::DeletionMark {
        policy: crate::api::DeletionPolicy::Delete,
        crd_uid: "crd-1",
    };
    mark.write(
        desired
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new),
    );
    let compared = |actual: &ConfigMap| {
        difference(
            &CachedCopy::of(actual),
            &desired,
            &colors_id(),
            &source_keys(),
            &(),
        )
    };
    assert_eq!(compared(&actual), Difference::DeletionUnmarked);
    let mut marked = actual.clone();
    mark.write(
        marked
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new),
    );
    assert_eq!(compared(&marked), Difference::None);
    let mut edited = actual.clone();
    edited.data = Some(mk_map(&[("a", "edited")]));
    assert_eq!(compared(&edited), Difference::Drifted, "a drift besides");
}
