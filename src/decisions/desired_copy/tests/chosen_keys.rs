//! Copies of chosen keys: what `workshop.io/mirror-keys` asks of every copy
//! of a source, decided from the cached source as from the fresh one.

use super::*;
use crate::contract::MIRROR_KEYS_ANNOTATION;
use crate::decisions::cache_form::slim_source;
use crate::decisions::key_shape::{annotated_shape, copy_plan::content_plan};
use crate::test_fixtures::mk_desired_companion;
use k8s_openapi::api::core::v1::Secret;

fn shaped(keys: &str) -> ConfigMap {
    with_annotations(
        mk_source("colors", &[("a", "1"), ("b", "2"), ("c", "3")]),
        &[(MIRROR_KEYS_ANNOTATION, keys)],
    )
}

#[test]
fn a_copy_holds_the_keys_the_annotation_chooses_under_their_names() {
    let companion = mk_desired_companion(&shaped("a,b=bee"), &()).unwrap();
    assert_eq!(
        companion.data,
        Some(mk_map(&[("a", "1"), ("bee", "2")])),
        "c is not named"
    );
    let checksum = &companion.metadata.annotations.unwrap()[CHECKSUM_ANNOTATION];
    assert!(checksum.starts_with(crate::contract::KEYS_CHECKSUM_PREFIX));
}

#[test]
fn the_checksum_decided_from_the_cache_is_the_one_written_from_the_fresh_source() {
    let fresh = shaped("a,b=bee");
    let mut cached = fresh.clone();
    slim_source(&mut cached);
    let built = mk_desired_mirror(&cached, "team-a", &()).unwrap();
    let from_cache = built.metadata.annotations.as_ref().unwrap()[CHECKSUM_ANNOTATION].clone();
    let shape = annotated_shape(&fresh.metadata).unwrap();
    let plan = content_plan(&fresh, &shape, CopyForm::default()).unwrap();
    let written = plan.fill(
        built,
        &fresh,
        &planned_checksum(&plan, &cached.metadata, &()),
    );
    assert_eq!(
        written.metadata.annotations.unwrap()[CHECKSUM_ANNOTATION],
        from_cache
    );
    assert_eq!(written.data, Some(mk_map(&[("a", "1"), ("bee", "2")])));
}

#[test]
fn a_change_of_a_key_no_copy_holds_leaves_the_checksum_as_it_was() {
    let before = mk_desired_companion(&shaped("a"), &()).unwrap();
    let mut changed = shaped("a");
    changed.data = Some(mk_map(&[("a", "1"), ("b", "changed"), ("c", "3")]));
    let after = mk_desired_companion(&changed, &()).unwrap();
    assert_eq!(before, after);
}

#[test]
fn a_malformed_annotation_or_a_broken_type_is_refused() {
    let refusal = mk_desired_companion(&shaped("a,,b"), &()).unwrap_err();
    assert!(
        matches!(refusal, Refusal::InvalidMirrorKeys(_)),
        "{refusal:?}"
    );
    let mut tls = Secret {
        metadata: shaped("tls.crt").metadata,
        type_: Some("kubernetes.io/tls".into()),
        ..Secret::default()
    };
    tls.data = Some(
        [("tls.crt", "c"), ("tls.key", "k")]
            .into_iter()
            .map(|(k, v)| (k.into(), k8s_openapi::ByteString(v.into())))
            .collect(),
    );
    let key = crate::kind::secret::SecretDigestKey::from_bytes(&[7; 32]).unwrap();
    let refusal = desired(&tls, &CopyRequest::COMPANION, "ns", &mk_install(), &key).unwrap_err();
    let Refusal::KeysBreakType(breaks) = refusal else {
        panic!("{refusal:?}");
    };
    assert_eq!(breaks.missing, vec!["tls.key".to_owned()]);
}

#[test]
fn every_key_is_the_copy_of_before() {
    let plain = mk_source("colors", &[("a", "1")]);
    let every = with_annotations(plain.clone(), &[(MIRROR_KEYS_ANNOTATION, "*")]);
    let copy = mk_desired_companion(&every, &()).unwrap();
    assert_eq!(
        copy.metadata.annotations.unwrap()[CHECKSUM_ANNOTATION],
        mk_desired_companion(&plain, &())
            .unwrap()
            .metadata
            .annotations
            .unwrap()[CHECKSUM_ANNOTATION],
        "a shape that leaves nothing out keeps the checksum of a whole copy"
    );
}
