use std::collections::BTreeMap;

use super::*;
use crate::contract::MIRROR_OF_ANNOTATION;
use crate::test_fixtures::{mk_companion_of, mk_desired_mirror, mk_map, mk_source};
use k8s_openapi::api::core::v1::ConfigMap;

/// What a mirror for a source's own request is compared with: a desired
/// copy without a ClusterMirror's label.
fn own_request() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
    Default::default()
}

#[test]
fn a_companion_controlled_by_the_source_is_ours() {
    let source = mk_source("colors", &[]);
    assert_eq!(
        ownership(
            &CachedCopy::of(&mk_companion_of(&source)),
            &SourceId {
                namespace: "ns",
                name: "colors",
                uid: "uid-1"
            },
            &()
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
            &SourceId {
                namespace: "ns",
                name: "colors",
                uid: "uid-2"
            },
            &()
        ),
        Ownership::Adoptable
    );
}

#[test]
fn a_companion_whose_owner_reference_was_removed_by_hand_is_adoptable() {
    let mut companion = mk_companion_of(&mk_source("colors", &[]));
    companion.metadata.owner_references = None;
    assert_eq!(
        ownership(
            &CachedCopy::of(&companion),
            &SourceId {
                namespace: "ns",
                name: "colors",
                uid: "uid-1"
            },
            &()
        ),
        Ownership::Adoptable
    );
}

#[test]
fn a_companion_edited_by_hand_and_without_owner_is_not_adopted() {
    let mut companion = mk_companion_of(&mk_source("colors", &[("a", "1")]));
    companion.metadata.owner_references = None;
    companion.data = Some(mk_map(&[("a", "forged")]));
    assert_eq!(
        ownership(
            &CachedCopy::of(&companion),
            &SourceId {
                namespace: "ns",
                name: "colors",
                uid: "uid-1"
            },
            &()
        ),
        Ownership::Foreign
    );
}

#[test]
fn a_mirror_is_never_a_companion_and_a_companion_never_a_mirror() {
    let tenant_source = mk_source("app-synced", &[("k", "evil")]);
    let mut mirror = mk_desired_mirror(&tenant_source, "b", &()).unwrap();
    mirror.metadata.namespace = Some("b".into());
    assert_eq!(
        ownership(
            &CachedCopy::of(&mirror),
            &SourceId {
                namespace: "ns",
                name: "app",
                uid: "uid-b"
            },
            &()
        ),
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
        mirror_ownership(
            &CachedCopy::of(&companion),
            &source.metadata,
            &own_request()
        ),
        Ownership::Foreign
    );
}

#[test]
fn an_unrelated_configmap_with_the_companion_name_is_foreign() {
    let mut stranger = mk_source("colors-synced", &[]);
    stranger.metadata.labels = None;
    assert_eq!(
        ownership(
            &CachedCopy::of(&stranger),
            &SourceId {
                namespace: "ns",
                name: "colors",
                uid: "uid-1"
            },
            &()
        ),
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
        ownership(
            &CachedCopy::of(&companion),
            &SourceId {
                namespace: "ns",
                name: "colors",
                uid: "uid-1"
            },
            &()
        ),
        Ownership::Foreign
    );
}

#[test]
fn a_mirror_is_ours_only_for_the_source_it_names() {
    let source = mk_source("colors", &[]);
    let mirror = mk_desired_mirror(&source, "team-a", &()).unwrap();
    assert_eq!(
        mirror_ownership(&CachedCopy::of(&mirror), &source.metadata, &own_request()),
        Ownership::Ours
    );

    let mut reborn = source.clone();
    reborn.metadata.uid = Some("uid-2".into());
    assert_eq!(
        mirror_ownership(&CachedCopy::of(&mirror), &reborn.metadata, &own_request()),
        Ownership::Adoptable
    );

    let mut same_name_elsewhere = source.clone();
    same_name_elsewhere.metadata.namespace = Some("other".into());
    assert_eq!(
        mirror_ownership(
            &CachedCopy::of(&mirror),
            &same_name_elsewhere.metadata,
            &own_request()
        ),
        Ownership::Foreign
    );

    let mut stranger = mk_source("colors", &[]);
    stranger.metadata.labels = None;
    assert_eq!(
        mirror_ownership(&CachedCopy::of(&stranger), &source.metadata, &own_request()),
        Ownership::Foreign
    );
}

#[test]
fn an_object_with_a_plain_owner_reference_to_the_source_is_foreign() {
    let source = mk_source("colors", &[]);
    let mut theirs = mk_companion_of(&source);
    for owner in theirs.metadata.owner_references.iter_mut().flatten() {
        owner.controller = None;
    }
    for uid in ["uid-1", "uid-2"] {
        assert_eq!(
            ownership(
                &CachedCopy::of(&theirs),
                &SourceId {
                    namespace: "ns",
                    name: "colors",
                    uid
                },
                &()
            ),
            Ownership::Foreign,
            "{uid}"
        );
    }
}

#[test]
fn a_copy_claims_the_source_its_owner_reference_or_mirror_annotations_name() {
    let source = mk_source("colors", &[]);
    let companion = mk_companion_of(&source);
    assert_eq!(
        claimed_identity::<ConfigMap>(&companion.metadata),
        Some(SourceId {
            namespace: "ns",
            name: "colors",
            uid: "uid-1"
        })
    );
    let mut ownerless = companion;
    ownerless.metadata.owner_references = None;
    assert_eq!(claimed_identity::<ConfigMap>(&ownerless.metadata), None);

    let mirror = mk_desired_mirror(&source, "team-a", &()).unwrap();
    assert_eq!(
        claimed_identity::<ConfigMap>(&mirror.metadata),
        Some(SourceId {
            namespace: "ns",
            name: "colors",
            uid: "uid-1"
        })
    );
    let mut without_uid = mirror;
    without_uid
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .remove(crate::contract::MIRROR_OF_UID_ANNOTATION);
    assert_eq!(claimed_identity::<ConfigMap>(&without_uid.metadata), None);
}
