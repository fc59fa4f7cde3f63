use super::*;
use crate::decisions::cache_form::CachedCopy;
use crate::decisions::owner_ref::owner_reference;
use crate::decisions::ownership::claimed_source;
use crate::test_fixtures::{
    SUFFIX, mk_companion_of, mk_configmap, mk_desired_companion, mk_desired_mirror,
    mk_mirrored_source, mk_source, source_keys,
};
use k8s_openapi::api::core::v1::ConfigMap;

#[test]
fn a_missing_companion_is_created() {
    let source = mk_source("a", &[("key", "v")]);
    let desired = mk_desired_companion(&source, &()).unwrap();
    assert_eq!(
        plan(desired.clone(), None, &source.metadata, &source_keys(), &()),
        Ok(Write::Create(desired))
    );
}

#[test]
fn a_companion_in_sync_is_left_alone() {
    let source = mk_source("a", &[("key", "v")]);
    let desired = mk_desired_companion(&source, &()).unwrap();
    let existing = mk_companion_of(&source);
    assert_eq!(
        plan(
            desired,
            Some(&CachedCopy::of(&existing)),
            &source.metadata,
            &source_keys(),
            &()
        ),
        Ok(Write::Nothing)
    );
}

#[test]
fn a_changed_source_replaces_the_companion_keeping_its_resource_version() {
    let old = mk_source("a", &[("key", "old")]);
    let existing = mk_companion_of(&old);
    let new = mk_source("a", &[("key", "new")]);
    let desired = mk_desired_companion(&new, &()).unwrap();
    let Ok(Write::Replace {
        copy: companion,
        why,
    }) = plan(
        desired,
        Some(&CachedCopy::of(&existing)),
        &new.metadata,
        &source_keys(),
        &(),
    )
    else {
        panic!("expected a replace");
    };
    assert_eq!(why, Difference::SourceChanged);
    assert_eq!(companion.data, new.data);
    assert_eq!(companion.metadata.resource_version.as_deref(), Some("42"));
}

#[test]
fn a_recreated_source_takes_over_the_companion_of_its_predecessor() {
    let old = mk_source("a", &[("key", "v")]);
    let existing = mk_companion_of(&old);
    let mut reborn = old.clone();
    reborn.metadata.uid = Some("uid-2".into());
    let desired = mk_desired_companion(&reborn, &()).unwrap();
    let Ok(Write::Replace {
        copy: companion, ..
    }) = plan(
        desired,
        Some(&CachedCopy::of(&existing)),
        &reborn.metadata,
        &source_keys(),
        &(),
    )
    else {
        panic!("expected a replace");
    };
    let owners = companion.metadata.owner_references.unwrap();
    assert_eq!(owners, vec![owner_reference::<ConfigMap>("a", "uid-2")]);
}

#[test]
fn a_foreign_object_at_the_companion_name_is_never_written() {
    let source = mk_source("a", &[("key", "v")]);
    let desired = mk_desired_companion(&source, &()).unwrap();
    let stranger = mk_configmap("ns", "a-synced");
    assert_eq!(
        plan(
            desired,
            Some(&CachedCopy::of(&stranger)),
            &source.metadata,
            &source_keys(),
            &()
        ),
        Err(NameTaken)
    );
}

#[test]
fn an_immutable_companion_with_stale_content_is_deleted_by_uid() {
    let mut old = mk_source("a", &[("key", "old")]);
    old.immutable = Some(true);
    let existing = mk_companion_of(&old);
    let mut new = mk_source("a", &[("key", "new")]);
    new.immutable = Some(true);
    let desired = mk_desired_companion(&new, &()).unwrap();
    assert_eq!(
        plan(
            desired.clone(),
            Some(&CachedCopy::of(&existing)),
            &new.metadata,
            &source_keys(),
            &()
        ),
        Ok(Write::DeleteToRecreate {
            copy: desired,
            seen: SeenVersion {
                uid: "companion-uid".into(),
                resource_version: "42".into(),
            }
        })
    );
}

#[test]
fn a_mirror_of_another_source_with_the_same_name_is_never_written() {
    let source = mk_mirrored_source("*");
    let mut rival = mk_mirrored_source("*");
    rival.metadata.namespace = Some("elsewhere".into());
    let rivals_mirror = mk_desired_mirror(&rival, "team-a", &()).unwrap();
    let desired = mk_desired_mirror(&source, "team-a", &()).unwrap();
    assert_eq!(
        plan(
            desired,
            Some(&CachedCopy::of(&rivals_mirror)),
            &source.metadata,
            &source_keys(),
            &()
        ),
        Err(NameTaken)
    );
    assert_eq!(
        claimed_source::<ConfigMap>(&rivals_mirror.metadata, SUFFIX),
        Some(("elsewhere".into(), "colors".into()))
    );
}
