use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::cache_form::CachedCopy;
use crate::desired::{self, desired_companion};
use crate::ownership::{claimed_source, owner_reference};
use crate::prune::wanted::{mirror_wanted, should_prune};
use crate::selector::Selector;

const SUFFIX: &str = "-synced";

fn mk_source(name: &str, uid: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            uid: Some(uid.into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("key".to_owned(), value.to_owned())])),
        ..ConfigMap::default()
    }
}

fn mk_existing(desired: &ConfigMap) -> ConfigMap {
    let mut existing = desired.clone();
    existing.metadata.uid = Some("companion-uid".into());
    existing.metadata.resource_version = Some("7".into());
    existing
}

fn keys() -> Vec<String> {
    vec!["workshop.io/managed".into()]
}

#[test]
fn a_missing_companion_is_created() {
    let source = mk_source("a", "u1", "v");
    let desired = desired_companion(&source, SUFFIX).unwrap();
    assert_eq!(
        plan(desired.clone(), None, &source, &keys()),
        Ok(Write::Create(desired))
    );
}

#[test]
fn a_companion_in_sync_is_left_alone() {
    let source = mk_source("a", "u1", "v");
    let desired = desired_companion(&source, SUFFIX).unwrap();
    let existing = mk_existing(&desired);
    assert_eq!(
        plan(desired, Some(&CachedCopy::of(&existing)), &source, &keys()),
        Ok(Write::Nothing)
    );
}

#[test]
fn a_changed_source_replaces_the_companion_keeping_its_resource_version() {
    let old = mk_source("a", "u1", "old");
    let existing = mk_existing(&desired_companion(&old, SUFFIX).unwrap());
    let new = mk_source("a", "u1", "new");
    let desired = desired_companion(&new, SUFFIX).unwrap();
    let Ok(Write::Replace {
        copy: companion,
        why,
    }) = plan(desired, Some(&CachedCopy::of(&existing)), &new, &keys())
    else {
        panic!("expected a replace");
    };
    assert_eq!(why, Difference::SourceChanged);
    assert_eq!(companion.data, new.data);
    assert_eq!(companion.metadata.resource_version.as_deref(), Some("7"));
}

#[test]
fn a_recreated_source_takes_over_the_companion_of_its_predecessor() {
    let old = mk_source("a", "u1", "v");
    let existing = mk_existing(&desired_companion(&old, SUFFIX).unwrap());
    let reborn = mk_source("a", "u2", "v");
    let desired = desired_companion(&reborn, SUFFIX).unwrap();
    let Ok(Write::Replace {
        copy: companion, ..
    }) = plan(desired, Some(&CachedCopy::of(&existing)), &reborn, &keys())
    else {
        panic!("expected a replace");
    };
    let owners = companion.metadata.owner_references.unwrap();
    assert_eq!(owners, vec![owner_reference("a", "u2")]);
}

#[test]
fn a_foreign_object_at_the_companion_name_is_never_written() {
    let source = mk_source("a", "u1", "v");
    let desired = desired_companion(&source, SUFFIX).unwrap();
    let stranger = ConfigMap {
        metadata: ObjectMeta {
            name: Some("a-synced".into()),
            namespace: Some("ns".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    assert_eq!(
        plan(desired, Some(&CachedCopy::of(&stranger)), &source, &keys()),
        Err(NameTaken)
    );
}

#[test]
fn an_immutable_companion_with_stale_content_is_deleted_by_uid() {
    let mut old = mk_source("a", "u1", "old");
    old.immutable = Some(true);
    let existing = mk_existing(&desired_companion(&old, SUFFIX).unwrap());
    let mut new = mk_source("a", "u1", "new");
    new.immutable = Some(true);
    let desired = desired_companion(&new, SUFFIX).unwrap();
    assert_eq!(
        plan(
            desired.clone(),
            Some(&CachedCopy::of(&existing)),
            &new,
            &keys()
        ),
        Ok(Write::DeleteToRecreate {
            copy: desired,
            uid: "companion-uid".into()
        })
    );
}

#[test]
fn a_companion_whose_source_is_no_longer_managed_is_pruned() {
    let companion = desired_companion(&mk_source("a", "u1", "v"), SUFFIX).unwrap();
    assert!(should_prune(&companion, SUFFIX, |_| false));
    assert!(!should_prune(&companion, SUFFIX, |name| name == "a"));
}

#[test]
fn a_copy_under_another_name_is_never_pruned() {
    let companion = desired_companion(&mk_source("a", "u1", "v"), "-copy").unwrap();
    assert!(!should_prune(&companion, SUFFIX, |_| false));
    let mut backup = desired_companion(&mk_source("a", "u1", "v"), SUFFIX).unwrap();
    backup.metadata.name = Some("a-backup".into());
    assert!(!should_prune(&backup, SUFFIX, |_| false));
}

#[test]
fn consent_withdrawn_removes_a_mirror_even_while_the_annotation_is_malformed() {
    let consent = Selector::parse("workshop.io/accept-mirrors=true").unwrap();
    let typo = mk_mirror_source("");
    let mirror = desired::desired_mirror(&mk_mirror_source("*"), "team-a").unwrap();
    assert!(mirror_wanted(
        &mirror,
        Some(&typo),
        Some(&consenting()),
        &consent
    ));
    assert!(!mirror_wanted(
        &mirror,
        Some(&typo),
        Some(&BTreeMap::new()),
        &consent
    ));
}

#[test]
fn a_companion_without_a_controlling_owner_is_never_pruned() {
    let mut companion = desired_companion(&mk_source("a", "u1", "v"), SUFFIX).unwrap();
    companion.metadata.owner_references = None;
    assert!(!should_prune(&companion, SUFFIX, |_| false));
    assert_eq!(
        claimed_source(&companion, SUFFIX),
        Some(("ns".into(), "a".into()))
    );
}

fn mk_mirror_source(mirror_to: &str) -> ConfigMap {
    let mut source = mk_source("a", "u1", "v");
    source.metadata.annotations = Some(BTreeMap::from([(
        crate::targets::MIRROR_TO_ANNOTATION.to_owned(),
        mirror_to.to_owned(),
    )]));
    source
}

fn consenting() -> BTreeMap<String, String> {
    BTreeMap::from([("workshop.io/accept-mirrors".to_owned(), "true".to_owned())])
}

#[test]
fn a_mirror_is_wanted_while_its_source_asks_and_its_namespace_consents() {
    let consent = Selector::parse("workshop.io/accept-mirrors=true").unwrap();
    let source = mk_mirror_source("team-*");
    let mirror = desired::desired_mirror(&source, "team-a").unwrap();
    assert!(mirror_wanted(
        &mirror,
        Some(&source),
        Some(&consenting()),
        &consent
    ));
    assert!(
        !mirror_wanted(&mirror, Some(&source), Some(&BTreeMap::new()), &consent),
        "consent withdrawn"
    );
    assert!(
        !mirror_wanted(&mirror, None, Some(&consenting()), &consent),
        "source gone"
    );
    let narrowed = mk_mirror_source("payments");
    assert!(
        !mirror_wanted(&mirror, Some(&narrowed), Some(&consenting()), &consent),
        "not asked any more"
    );
    let typo = mk_mirror_source("team_*");
    assert!(
        mirror_wanted(&mirror, Some(&typo), Some(&consenting()), &consent),
        "kept until fixed"
    );
}

#[test]
fn a_mirror_of_another_source_with_the_same_name_is_never_written() {
    let source = mk_mirror_source("*");
    let mut rival = mk_mirror_source("*");
    rival.metadata.namespace = Some("elsewhere".into());
    let rivals_mirror = desired::desired_mirror(&rival, "team-a").unwrap();
    let desired = desired::desired_mirror(&source, "team-a").unwrap();
    assert_eq!(
        plan(
            desired,
            Some(&CachedCopy::of(&rivals_mirror)),
            &source,
            &keys()
        ),
        Err(NameTaken)
    );
    assert_eq!(
        claimed_source(&rivals_mirror, SUFFIX),
        Some(("elsewhere".into(), "a".into()))
    );
}
