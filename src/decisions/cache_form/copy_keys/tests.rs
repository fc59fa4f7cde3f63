use std::collections::BTreeMap;

use k8s_openapi::{
    ByteString,
    api::core::v1::{ConfigMap, Secret},
};

use super::*;
use crate::contract::MIRROR_KEYS_ANNOTATION;
use crate::decisions::cache_form::{key_digests::source_copy_keys, slim_source};
use crate::decisions::key_shape::checksum::shaped_copy_hash_of;
use crate::test_fixtures::{mk_full_source, mk_secret_source};

/// A source of `count` empty keys (`k0`, `k1`, ...) whose copies hold
/// what `keys` says.
fn source_of(count: usize, keys: &str) -> ConfigMap {
    let mut source = mk_full_source(&[]);
    source.data = Some(
        (0..count)
            .map(|at| (format!("k{at}"), String::new()))
            .collect(),
    );
    let annotations = source
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new);
    annotations.insert(MIRROR_KEYS_ANNOTATION.into(), keys.into());
    source
}

fn slim(mut source: ConfigMap) -> ConfigMap {
    slim_source(&mut source);
    source
}

fn aside(source: &ConfigMap) -> &str {
    source.metadata.self_link.as_deref().unwrap()
}

/// `k0` and 99 exclusions of 250 characters, a star between every two.
fn hostile_keys() -> String {
    let exclusion = format!("!*{}1*", "q*".repeat(123));
    assert_eq!(exclusion.len(), 250);
    std::iter::once("k0".to_owned())
        .chain(std::iter::repeat_n(exclusion, 99))
        .collect::<Vec<_>>()
        .join(",")
}

#[test]
fn what_a_cached_source_keeps_of_its_copies_does_not_grow_with_its_keys() {
    for keys in ["k0,k1=renamed,!k2*,gone", "*,!k1*", "k*", &hostile_keys()] {
        let few = slim(source_of(10, keys));
        let many = slim(source_of(60_000, keys));
        assert_eq!(
            aside(&few).len(),
            aside(&many).len(),
            "{keys:.40}: the same few bytes for 10 keys or 60,000"
        );
        assert!(aside(&many).len() < 200, "{}", aside(&many).len());
        assert_eq!(few.data, None);
    }
}

#[test]
fn an_annotation_that_cannot_be_read_keeps_nothing_extra() {
    for keys in ["", "a,,b", "a=b,c=b", "!a=b", &"a,".repeat(200)] {
        let full = source_of(1_000, keys);
        let hash = full.content_hash();
        assert_eq!(aside(&slim(full)), hash, "{keys:.40}");
    }
    let full = source_of(1_000, "*");
    let mut unannotated = full.clone();
    unannotated.metadata.annotations = None;
    assert_eq!(aside(&slim(unannotated)), full.content_hash());
}

#[test]
fn the_cached_form_gives_what_the_full_source_gives() {
    for keys in [
        "k0,k1=renamed,!k2*,gone,also-gone",
        "*,!k1*",
        "k1,k0",
        &hostile_keys(),
    ] {
        let full = source_of(30, keys);
        let shape = KeyShape::parse_annotation(keys).unwrap();
        let form = CopyForm::default();
        let expected = shaped_copy_hash_of(&full, &shape, form).map(CopyKeys::from);
        assert_eq!(
            source_copy_keys(&slim(full.clone()), &shape, form),
            Some(expected),
            "{keys:.40}"
        );
    }
    let kept = source_copy_keys(
        &slim(source_of(3, "k0,gone,also-gone")),
        &KeyShape::EVERY_KEY,
        CopyForm::default(),
    );
    assert_eq!(kept, None, "kept for the source's own shape only");
}

#[test]
fn a_secret_whose_copies_would_break_its_type_keeps_that_and_no_value() {
    let mut secret: Secret = mk_secret_source("corp-tls", "uid-9", "hunter2");
    secret.type_ = Some("kubernetes.io/tls".into());
    let data = secret.data.get_or_insert_with(BTreeMap::new);
    data.insert("tls.crt".into(), ByteString(b"CRT".to_vec()));
    data.insert("tls.key".into(), ByteString(b"KEY".to_vec()));
    let annotations = secret
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new);
    annotations.insert(MIRROR_KEYS_ANNOTATION.into(), "tls.crt,password".into());
    let shape = KeyShape::parse_annotation("tls.crt,password").unwrap();
    let expected = shaped_copy_hash_of(&secret, &shape, CopyForm::default()).unwrap_err();
    assert_eq!(expected.missing, ["tls.key"]);
    let mut cached = secret.clone();
    crate::decisions::cache_form::slim_source(&mut cached);
    let kept = cached.metadata.self_link.clone().unwrap();
    assert!(!kept.contains("hunter2") && !kept.contains("KEY"), "{kept}");
    assert_eq!(
        source_copy_keys(&cached, &shape, CopyForm::default()),
        Some(Err(expected))
    );
}
