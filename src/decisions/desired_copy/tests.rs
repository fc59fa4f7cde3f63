//! What the copies of a source should be (its companion, its mirrors and a
//! ClusterMirror's copies, one decision for all three), and which sources
//! get none.

use super::*;
use crate::contract::{
    CARRIED_ANNOTATIONS_ANNOTATION, CARRIED_LABELS_ANNOTATION, COPY_ANNOTATIONS_ANNOTATION,
    COPY_LABELS_ANNOTATION, NeverCarried, content_checksum, mirror_of,
};
use crate::decisions::key_shape::{KeyShape, checksum::CopyForm};
use crate::test_fixtures::{
    SELECTOR, SUFFIX, mk_binary, mk_companion_of, mk_desired_companion, mk_desired_mirror,
    mk_install, mk_map, mk_source, with_annotations,
};
use k8s_openapi::api::core::v1::ConfigMap;

mod chosen_keys;
mod cluster_mirror_copy;

#[test]
fn desired_companion_copies_content_and_immutability_exactly() {
    let mut source = mk_source("colors", &[("a", "1"), ("b", "2")]);
    source.binary_data = Some(mk_binary(&[("blob", &[0, 159, 146, 150, 255])]));
    source.immutable = Some(true);
    let companion = mk_desired_companion(&source, &()).unwrap();
    assert_eq!(companion.metadata.name.as_deref(), Some("colors-synced"));
    assert_eq!(companion.metadata.namespace.as_deref(), Some("ns"));
    assert_eq!(companion.data, source.data);
    assert_eq!(companion.binary_data, source.binary_data);
    assert_eq!(companion.immutable, Some(true));
}

#[test]
fn desired_companion_carries_no_label_or_annotation_of_the_source_unasked() {
    let companion = mk_desired_companion(&mk_source("colors", &[("a", "1")]), &()).unwrap();
    let labels = companion.metadata.labels.unwrap();
    assert_eq!(labels.len(), 1);
    assert_eq!(
        labels.get(MANAGED_BY_LABEL).map(String::as_str),
        Some(MANAGER_NAME)
    );
    let annotations = companion.metadata.annotations.unwrap();
    let keys: Vec<&str> = annotations.keys().map(String::as_str).collect();
    assert_eq!(keys, [CHECKSUM_ANNOTATION, SOURCE_SELECTOR_ANNOTATION]);
    assert_eq!(annotations[SOURCE_SELECTOR_ANNOTATION], SELECTOR);
}

#[test]
fn desired_companion_has_one_controller_reference_to_its_source() {
    let companion = mk_desired_companion(&mk_source("colors", &[]), &()).unwrap();
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
    assert!(mk_desired_companion(&mk_source(&longest_allowed, &[]), &()).is_ok());
    let too_long = "a".repeat(MAX_NAME_LEN - SUFFIX.len() + 1);
    let refusal = mk_desired_companion(&mk_source(&too_long, &[]), &()).unwrap_err();
    assert!(matches!(refusal, Refusal::NameTooLong { len: 254, .. }));
}

#[test]
fn a_companion_is_never_treated_as_a_source() {
    let source = mk_source("colors", &[("a", "1")]);
    let companion = mk_companion_of(&source);
    assert_eq!(
        mk_desired_companion(&companion, &()).unwrap_err(),
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
        mk_desired_companion(&source, &()),
        Err(Refusal::BeingDeleted)
    );
    assert_eq!(
        mk_desired_mirror(&source, "b", &()),
        Err(Refusal::BeingDeleted)
    );
}

#[test]
fn a_mirror_names_its_source_instead_of_an_owner() {
    let source = mk_source("colors", &[("a", "1")]);
    let mirror = mk_desired_mirror(&source, "team-a", &()).unwrap();
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

/// A source (named `colors`) whose lists ask its copies to carry `team`
/// and the source selector's own label, and the annotation `note`.
fn listing_source() -> ConfigMap {
    with_annotations(
        mk_source("colors", &[("a", "1")]),
        &[
            (COPY_LABELS_ANNOTATION, "team,workshop.io/managed"),
            (COPY_ANNOTATIONS_ANNOTATION, "note"),
        ],
    )
}

#[test]
fn a_companion_and_a_mirror_carry_what_the_source_lists_with_a_record_and_the_install_s_mark() {
    let source = listing_source();
    let companion = mk_desired_companion(&source, &()).unwrap();
    let mirror = mk_desired_mirror(&source, "team-a", &()).unwrap();
    for copy in [&companion, &mirror] {
        let meta = &copy.metadata;
        let labels = meta.labels.as_ref().unwrap();
        assert_eq!(labels.get("team").map(String::as_str), Some("blue"));
        assert!(
            !labels.contains_key("workshop.io/managed"),
            "a copy never carries the source selector's keys"
        );
        let annotations = meta.annotations.as_ref().unwrap();
        assert_eq!(annotations["note"], "hi");
        assert_eq!(annotations[CARRIED_LABELS_ANNOTATION], "team");
        assert_eq!(annotations[CARRIED_ANNOTATIONS_ANNOTATION], "note");
        assert_eq!(annotations[SOURCE_SELECTOR_ANNOTATION], SELECTOR);
        assert_eq!(annotations[CHECKSUM_ANNOTATION], content_checksum(&source));
        assert_eq!(copy.data, source.data);
    }
}

#[test]
fn keys_never_carry_adds_are_left_off_every_copy_of_the_label_path() {
    let source = listing_source();
    let install = Install {
        never_carried: NeverCarried::new(&["team".to_owned()]),
        ..mk_install()
    };
    for asked in [CopyRequest::COMPANION, CopyRequest::SOURCE_MIRRORS] {
        let copy = desired(&source, &asked, "team-a", &install, &()).unwrap();
        let labels = copy.metadata.labels.unwrap();
        assert!(!labels.contains_key("team"), "{asked:?}");
        let annotations = copy.metadata.annotations.unwrap();
        assert!(
            !annotations.contains_key(CARRIED_LABELS_ANNOTATION),
            "{asked:?}"
        );
    }
}

#[test]
fn a_malformed_list_refuses_every_copy_of_the_label_path_but_no_name_before_it() {
    let source = with_annotations(
        mk_source("colors", &[]),
        &[(COPY_LABELS_ANNOTATION, "not a key")],
    );
    for asked in [CopyRequest::COMPANION, CopyRequest::SOURCE_MIRRORS] {
        let refusal = desired(&source, &asked, "team-a", &mk_install(), &()).unwrap_err();
        assert!(
            matches!(&refusal, Refusal::InvalidCopyList(why) if why.contains(COPY_LABELS_ANNOTATION)),
            "{refusal:?}"
        );
    }
    let long = "a".repeat(MAX_NAME_LEN);
    let both = with_annotations(
        mk_source(&long, &[]),
        &[(COPY_LABELS_ANNOTATION, "not a key")],
    );
    let refusal = desired(&both, &CopyRequest::COMPANION, "ns", &mk_install(), &()).unwrap_err();
    assert!(
        matches!(refusal, Refusal::NameTooLong { .. }),
        "the name is told first, as before: {refusal:?}"
    );
}

#[test]
fn a_copy_written_takes_its_source_s_content_as_read_now_and_its_checksum() {
    let cached = mk_source("colors", &[("a", "1")]);
    let built = mk_desired_mirror(&cached, "team-a", &()).unwrap();
    let fresh = mk_source("colors", &[("a", "2")]);
    let plan = content_plan(&fresh, &KeyShape::EVERY_KEY, CopyForm::default()).unwrap();
    let written = plan.fill(
        built,
        &fresh,
        &planned_checksum(&plan, &cached.metadata, &()),
    );
    assert_eq!(
        written,
        mk_desired_mirror(&fresh, "team-a", &()).unwrap(),
        "as if built from the source as read now"
    );
}

#[test]
fn mirrors_take_the_name_the_source_gives_them_and_the_companion_keeps_its_own() {
    let source = with_annotations(
        mk_source("colors", &[("a", "1")]),
        &[(crate::contract::MIRROR_NAME_ANNOTATION, "palette")],
    );
    let mirror = mk_desired_mirror(&source, "team-a", &()).unwrap();
    assert_eq!(mirror.metadata.name.as_deref(), Some("palette"));
    assert_eq!(
        mirror_of(&mirror.metadata),
        Some(("ns".to_owned(), "colors".to_owned()))
    );
    let companion = mk_desired_companion(&source, &()).unwrap();
    assert_eq!(companion.metadata.name, Some(format!("colors{SUFFIX}")));
    let malformed = with_annotations(
        mk_source("colors", &[("a", "1")]),
        &[(crate::contract::MIRROR_NAME_ANNOTATION, "Palette")],
    );
    assert!(matches!(
        mk_desired_mirror(&malformed, "team-a", &()),
        Err(Refusal::InvalidMirrorName(_))
    ));
    assert!(mk_desired_companion(&malformed, &()).is_ok());
}

#[test]
fn a_request_answered_once_builds_each_namespace_s_copy() {
    let source = listing_source();
    let (install, request) = (mk_install(), CopyRequest::SOURCE_MIRRORS);
    let keys = shape_keys(&source, request.shape).unwrap();
    let checksum = copies_checksum(&source, &keys, &());
    let resolved = Resolved {
        keys: &keys,
        checksum: &checksum,
    };
    let answered = answered(&source, &request, &install, Ok(resolved)).unwrap();
    for namespace in ["team-a", "team-b"] {
        let built = answered.copy_in(namespace, &install);
        let meta = &built.metadata;
        assert_eq!(meta.namespace.as_deref(), Some(namespace));
        assert_eq!(meta.name.as_deref(), Some("colors"));
        assert_eq!(
            mirror_of(meta),
            Some(("ns".to_owned(), "colors".to_owned()))
        );
        let annotations = meta.annotations.clone().unwrap_or_default();
        assert_eq!(annotations.get(CHECKSUM_ANNOTATION), Some(&checksum));
        assert_eq!(
            annotations.get(SOURCE_SELECTOR_ANNOTATION),
            Some(&install.selector)
        );
        assert!(annotations.contains_key(CARRIED_LABELS_ANNOTATION));
        // The keys are the plan's to fill, from the source read now.
        assert_eq!(built.data, None);
        let whole = desired(&source, &request, namespace, &install, &()).unwrap();
        assert_eq!(&whole.metadata, meta, "{namespace}");
    }
}
