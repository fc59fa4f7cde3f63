use super::*;
use crate::contract::{
    CHECKSUM_ANNOTATION, MIRROR_OF_ANNOTATION, SOURCE_SELECTOR_ANNOTATION, content_checksum,
};
use crate::decisions::plan::compare::merge_onto;
use crate::kind::secret::SecretDigestKey;
use crate::test_fixtures::{
    colors_id, mk_companion_of, mk_desired_companion, mk_full_source, mk_map, source_keys,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::{ByteString, api::core::v1::Secret};

/// What a ConfigMap copy read back from the cache holds, by hash: its
/// checksum, whatever the source (a ConfigMap's is the plain hash).
fn hash_of(copy: &CachedCopy<k8s_openapi::api::core::v1::ConfigMap>) -> String {
    copy.checksum_as_copy_of(&colors_id(), &()).into_owned()
}

#[test]
fn a_cached_source_keeps_what_the_reconcilers_read() {
    let full = mk_full_source(&[("a", "1")]);
    let mut slim = full.clone();
    slim_source(&mut slim);

    assert_eq!(slim.metadata.name, full.metadata.name);
    assert_eq!(slim.metadata.namespace, full.metadata.namespace);
    assert_eq!(slim.metadata.uid, full.metadata.uid);
    assert_eq!(
        slim.metadata.resource_version,
        full.metadata.resource_version
    );
    assert_eq!(slim.data, None, "the content is read when a write needs it");
    assert_eq!(slim.immutable, Some(true));
    assert_eq!(
        slim.metadata.annotations,
        Some(mk_map(&[(MIRROR_TO_ANNOTATION, "team-*")])),
        "the hash is kept aside, not in a map"
    );
    assert_eq!(source_checksum(&slim, &()), content_checksum(&full));
    assert_eq!(slim.metadata.labels, None, "the selector vouches for them");
    assert_eq!(slim.metadata.owner_references, None);
    assert_eq!(slim.metadata.finalizers, None);
    let (from_slim, mut from_full) = (
        mk_desired_companion(&slim, &()).unwrap(),
        mk_desired_companion(&full, &()).unwrap(),
    );
    from_full.drop_content();
    assert_eq!(
        from_slim, from_full,
        "the companion is built alike from either, but for its content"
    );
}

#[test]
fn a_cached_source_still_shows_that_it_is_a_copy() {
    let mut copy_as_source = mk_full_source(&[("a", "1")]);
    copy_as_source
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(MANAGED_BY_LABEL.into(), MANAGER_NAME.into());
    slim_source(&mut copy_as_source);
    assert!(mk_desired_companion(&copy_as_source, &()).is_err());
}

#[test]
fn an_untouched_cached_copy_keeps_only_its_checksum_and_no_map() {
    let full = mk_companion_of(&mk_full_source(&[("a", "1")]));
    let checksum = full.metadata.annotations.as_ref().unwrap()[CHECKSUM_ANNOTATION].clone();
    let mut companion = full.clone();
    slim_copy(&mut companion);
    assert_eq!(companion.data, None);
    assert_eq!(companion.metadata.labels, None);
    assert_eq!(
        companion.metadata.annotations, None,
        "a map would cost a node of half a KiB"
    );
    let read_back = copy_from_cache(&companion);
    assert_eq!(hash_of(&read_back), checksum);
    assert_eq!(
        read_back.object().metadata.annotations,
        full.metadata.annotations,
        "the checksum annotation reads back in its place"
    );
    assert_eq!(read_back.object().metadata.self_link, None);
}

/// A companion as the controller writes it: with the install marker.
fn marked(mut copy: ConfigMap, selector: &str) -> ConfigMap {
    copy.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(SOURCE_SELECTOR_ANNOTATION.into(), selector.into());
    copy
}

#[test]
fn a_companion_keeps_its_install_marker_aside_with_its_checksum_and_no_map() {
    let full = marked(
        mk_companion_of(&mk_full_source(&[("a", "1")])),
        "workshop.io/managed=true",
    );
    let mut companion = full.clone();
    slim_copy(&mut companion);
    assert_eq!(
        companion.metadata.annotations, None,
        "a map for one entry would cost a node of half a KiB"
    );
    let read_back = copy_from_cache(&companion);
    assert_eq!(
        read_back.object().metadata.annotations,
        full.metadata.annotations,
        "both annotations read back in their place"
    );
    assert_eq!(read_back.object().metadata.self_link, None);
}

#[test]
fn an_install_marker_that_could_not_be_told_apart_keeps_its_map() {
    let full = marked(mk_companion_of(&mk_full_source(&[("a", "1")])), "a=b\nc=d");
    let mut companion = full.clone();
    slim_copy(&mut companion);
    assert!(companion.metadata.annotations.is_some());
    assert_eq!(
        copy_from_cache(&companion).object().metadata.annotations,
        full.metadata.annotations
    );
    let mut edited = marked(
        mk_companion_of(&mk_full_source(&[("a", "1")])),
        "workshop.io/managed=true",
    );
    edited
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(CHECKSUM_ANNOTATION.into(), "x\ny".into());
    let full = edited.clone();
    slim_copy(&mut edited);
    assert_eq!(
        copy_from_cache(&edited).object().metadata.annotations,
        full.metadata.annotations,
        "a checksum edited to hold the separator reads back as it was"
    );
}

#[test]
fn a_companion_without_a_checksum_keeps_its_marker_in_its_map() {
    let mut full = marked(
        mk_companion_of(&mk_full_source(&[("a", "1")])),
        "workshop.io/managed=true",
    );
    if let Some(annotations) = full.metadata.annotations.as_mut() {
        annotations.remove(CHECKSUM_ANNOTATION);
    }
    let mut companion = full.clone();
    slim_copy(&mut companion);
    let read_back = copy_from_cache(&companion);
    let annotations = read_back.object().metadata.annotations.clone().unwrap();
    assert_eq!(
        annotations
            .get(SOURCE_SELECTOR_ANNOTATION)
            .map(String::as_str),
        Some("workshop.io/managed=true")
    );
    assert!(
        !annotations.contains_key(CHECKSUM_ANNOTATION),
        "no checksum appears"
    );
}

#[test]
fn a_cached_mirror_keeps_its_other_annotations_in_place() {
    let mut mirror = mk_companion_of(&mk_full_source(&[("a", "1")]));
    let annotations = mirror
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new);
    annotations.insert(MIRROR_OF_ANNOTATION.into(), "ns/src".into());
    let full = mirror.clone();
    slim_copy(&mut mirror);
    assert_eq!(
        mirror.metadata.annotations,
        Some(mk_map(&[
            (MIRROR_OF_ANNOTATION, "ns/src"),
            (SOURCE_SELECTOR_ANNOTATION, "workshop.io/managed=true")
        ]))
    );
    assert_eq!(
        copy_from_cache(&mirror).object().metadata.annotations,
        full.metadata.annotations
    );
}

#[test]
fn an_edited_cached_copy_keeps_the_hash_of_what_it_holds() {
    let source = mk_full_source(&[("a", "1")]);
    let mut edited = mk_desired_companion(&source, &()).unwrap();
    edited.data = Some(mk_map(&[("a", "tampered")]));
    let held = content_checksum(&edited);
    slim_copy(&mut edited);
    assert_eq!(edited.data, None);
    assert_eq!(hash_of(&copy_from_cache(&edited)), held);
}

#[test]
fn a_cached_copy_reads_back_with_its_label_and_other_peoples_labels() {
    let mut companion = mk_desired_companion(&mk_full_source(&[("a", "1")]), &()).unwrap();
    let labels = companion.metadata.labels.as_mut().unwrap();
    labels.insert("team".into(), "blue".into());
    let full = companion.clone();
    slim_copy(&mut companion);
    assert_eq!(companion.metadata.labels, Some(mk_map(&[("team", "blue")])));

    let read_back = copy_from_cache(&companion);
    assert_eq!(read_back.object().metadata.labels, full.metadata.labels);
    assert_eq!(hash_of(&read_back), content_checksum(&full));
    assert!(
        read_back
            .object()
            .metadata
            .annotations
            .iter()
            .flatten()
            .all(|(key, _)| key != CACHED_HASH_KEY),
        "the hash stays in the cache"
    );
}

#[test]
fn a_cached_companion_keeps_its_owner_aside() {
    let full = mk_companion_of(&mk_full_source(&[("a", "1")]));
    let mut companion = full.clone();
    slim_copy(&mut companion);
    assert_eq!(
        companion.metadata.owner_references, None,
        "a list of one reference costs four strings more than its uid and name"
    );

    let read_back = copy_from_cache(&companion);
    let object = &read_back.object().metadata;
    assert_eq!(object.owner_references, full.metadata.owner_references);
    assert_eq!(object.generate_name, None);
}

#[test]
fn owner_references_not_written_by_us_are_cached_as_they_are() {
    let source = mk_full_source(&[("a", "1")]);
    let mut not_controller = mk_companion_of(&source);
    for owner in not_controller
        .metadata
        .owner_references
        .iter_mut()
        .flatten()
    {
        owner.controller = Some(false);
    }
    let mut two_owners = mk_companion_of(&source);
    let extra = a_deployment_reference();
    two_owners
        .metadata
        .owner_references
        .get_or_insert_with(Vec::new)
        .push(extra);
    let mut user_generate_name = mk_companion_of(&source);
    user_generate_name.metadata.owner_references = None;
    user_generate_name.metadata.generate_name = Some("uid-1 colors".into());

    for full in [not_controller, two_owners, user_generate_name] {
        let mut slim = full.clone();
        slim_copy(&mut slim);
        assert_eq!(
            slim.metadata.owner_references,
            full.metadata.owner_references
        );
        let read_back = copy_from_cache(&slim);
        assert_eq!(
            read_back.object().metadata.owner_references,
            full.metadata.owner_references,
            "an edited or foreign reference reads back exactly, and a name to generate is never taken for one"
        );
    }
}

fn a_deployment_reference() -> OwnerReference {
    OwnerReference {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: "web".into(),
        uid: "deployment-uid".into(),
        ..Default::default()
    }
}

#[test]
fn a_copy_read_from_the_cache_keeps_its_version_so_a_replace_is_a_compare_and_swap() {
    let source = mk_full_source(&[("a", "1")]);
    let full = mk_companion_of(&source);
    let mut slim = full.clone();
    slim_copy(&mut slim);
    let changed = mk_desired_companion(&mk_full_source(&[("a", "2")]), &()).unwrap();
    let merged = merge_onto(&copy_from_cache(&slim), &changed, &source_keys());
    assert_eq!(
        merged.metadata.resource_version, full.metadata.resource_version,
        "without it the replace would overwrite whatever changed meanwhile"
    );
}

fn secret_source(value: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some("password".into()),
            namespace: Some("ns".into()),
            uid: Some("uid-1".into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            "password".to_owned(),
            ByteString(value.as_bytes().to_vec()),
        )])),
        ..Secret::default()
    }
}

fn key(byte: u8) -> SecretDigestKey {
    SecretDigestKey::from_bytes(&[byte; SecretDigestKey::LEN]).unwrap()
}

#[test]
fn what_is_cached_of_a_secret_needs_no_key_and_gives_each_key_its_checksums() {
    let source = secret_source("hunter2");
    let mut slim_source_secret = source.clone();
    slim_source(&mut slim_source_secret);
    let mut companion = mk_desired_companion(&source, &key(1)).unwrap();
    companion.metadata.uid = Some("companion-uid".into());
    let mut slim = companion.clone();
    slim_copy(&mut slim);
    let cached = copy_from_cache(&slim);
    let id = SourceId::of(&source.metadata);
    for k in [key(1), key(2)] {
        assert_eq!(
            source_checksum(&slim_source_secret, &k),
            source.content_digest(&k)
        );
        assert_eq!(
            cached.checksum_as_copy_of(&id, &k),
            source.content_digest(&k)
        );
    }
    assert_ne!(
        source.content_digest(&key(1)),
        source.content_digest(&key(2))
    );
    assert_eq!(
        cached.object().metadata.annotations.as_ref().unwrap()[CHECKSUM_ANNOTATION],
        source.content_digest(&key(1)),
        "the checksum annotation reads back as written"
    );
    assert_eq!((slim.data, slim_source_secret.data), (None, None));
}

#[test]
fn a_cached_source_still_shows_that_it_is_a_helm_release_record() {
    let mut record = mk_full_source(&[("a", "1")]);
    let mut team = record.clone();
    let mut tiller = record.clone();
    for (source, (key, owner)) in [
        (&mut record, ("owner", "helm")),
        (&mut tiller, ("OWNER", "TILLER")),
        (&mut team, ("owner", "team-a")),
    ] {
        let labels = source.metadata.labels.get_or_insert_with(BTreeMap::new);
        labels.insert(key.into(), owner.into());
        slim_source(source);
    }
    assert!(crate::decisions::desired_copy::never_a_source(&record, &()).is_some());
    assert!(crate::decisions::desired_copy::never_a_source(&tiller, &()).is_some());
    let owner = team
        .metadata
        .labels
        .and_then(|labels| labels.get("owner").cloned());
    assert_eq!(owner, None, "only Helm's value is worth keeping");
}

#[test]
fn a_cached_source_keeps_the_name_of_its_mirrors() {
    let mut full = mk_full_source(&[("a", "1")]);
    full.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(MIRROR_NAME_ANNOTATION.into(), "palette".into());
    let mut slim = full.clone();
    slim_source(&mut slim);
    assert_eq!(
        crate::decisions::mirror_name::mirror_name(&slim.metadata),
        Ok("palette")
    );
}
