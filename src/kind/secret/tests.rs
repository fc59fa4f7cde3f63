use std::collections::BTreeMap;

use k8s_openapi::{ByteString, api::core::v1::Secret};
use sha2::{Digest, Sha256};

use super::*;
use crate::kind::SourceId;

fn secret(type_: Option<&str>, data: &[(&str, &str)]) -> Secret {
    Secret {
        type_: type_.map(str::to_owned),
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).to_owned(), ByteString(v.as_bytes().to_vec())))
                .collect::<BTreeMap<_, _>>(),
        ),
        ..Secret::default()
    }
}

fn key(byte: u8) -> SecretDigestKey {
    SecretDigestKey::from_bytes(&[byte; SecretDigestKey::LEN]).unwrap()
}

#[test]
fn two_keys_give_two_digests_of_one_value_and_neither_is_a_plain_hash() {
    let password = secret(None, &[("password", "hunter2")]);
    let (a, b) = (
        password.content_digest(&key(1)),
        password.content_digest(&key(2)),
    );
    assert_ne!(a, b);
    let plain = hex::encode(Sha256::digest(b"hunter2"));
    for digest in [&a, &b] {
        assert!(digest.starts_with("hmac-sha256:"), "{digest}");
        assert!(!digest.contains(&plain));
        assert!(!digest.contains("hunter2"));
    }
}

#[test]
fn the_same_content_and_key_give_the_same_digest() {
    let one = secret(Some("Opaque"), &[("a", "1"), ("b", "2")]);
    let mut other = secret(None, &[("b", "2"), ("a", "1")]);
    other.string_data = Some(BTreeMap::from([("ignored".into(), "write-only".into())]));
    assert_eq!(one.content_digest(&key(7)), other.content_digest(&key(7)));
}

#[test]
fn the_type_is_content() {
    let opaque = secret(Some("Opaque"), &[("tls.crt", "c"), ("tls.key", "k")]);
    let tls = secret(
        Some("kubernetes.io/tls"),
        &[("tls.crt", "c"), ("tls.key", "k")],
    );
    assert_ne!(opaque.content_digest(&key(3)), tls.content_digest(&key(3)));
}

#[test]
fn a_change_of_type_needs_a_recreate() {
    let actual = secret(Some("Opaque"), &[]);
    let mut desired = secret(Some("kubernetes.io/basic-auth"), &[]);
    desired.metadata.annotations = Some(BTreeMap::from([(
        crate::contract::CHECKSUM_ANNOTATION.to_owned(),
        desired.content_digest(&key(1)),
    )]));
    let actual_digest = actual.content_digest(&key(1));
    assert!(Secret::needs_recreate(&actual, &actual_digest, &desired));
    assert!(!Secret::needs_recreate(&desired, &actual_digest, &desired));
}

#[test]
fn service_account_tokens_are_never_sources() {
    let none = SecretSourceRules::default();
    let token = secret(Some(SERVICE_ACCOUNT_TOKEN_TYPE), &[("token", "t")]);
    assert!(token.source_refusal(&none).is_some());
    assert!(
        secret(Some("kubernetes.io/tls"), &[])
            .source_refusal(&none)
            .is_none()
    );
}

#[test]
fn bootstrap_tokens_and_helm_release_records_are_never_sources() {
    let none = SecretSourceRules::default();
    for type_ in ["bootstrap.kubernetes.io/token", "helm.sh/release.v1"] {
        let why = secret(Some(type_), &[]).source_refusal(&none);
        assert!(why.is_some_and(|why| why.contains(type_)), "{type_}");
    }
    for type_ in [
        "kubernetes.io/dockerconfigjson",
        "kubernetes.io/tls",
        "Opaque",
    ] {
        assert_eq!(secret(Some(type_), &[]).source_refusal(&none), None);
    }
    assert_eq!(secret(None, &[]).source_refusal(&none), None);
}

#[test]
fn the_configured_types_are_refused_too() {
    let refused = SecretSourceRules::new(&[" example.com/kubeconfig".into(), String::new()]);
    let why = secret(Some("example.com/kubeconfig"), &[]).source_refusal(&refused);
    assert_eq!(
        why.as_deref(),
        Some("its type is example.com/kubeconfig, which --refused-secret-types lists")
    );
    assert_eq!(secret(Some("Opaque"), &[]).source_refusal(&refused), None);
}

#[test]
fn the_slim_form_keeps_the_type_and_drops_every_value() {
    let mut copy = secret(Some("kubernetes.io/tls"), &[("tls.key", "k")]);
    copy.string_data = Some(BTreeMap::from([("x".into(), "y".into())]));
    copy.drop_content();
    assert_eq!(copy.type_.as_deref(), Some("kubernetes.io/tls"));
    assert_eq!((copy.data, copy.string_data), (None, None));
}

#[test]
fn the_key_is_never_printed() {
    assert_eq!(format!("{:?}", key(0x41)), "SecretDigestKey(..)");
    assert!(SecretDigestKey::from_bytes(&[0; 31]).is_none());
}

fn stored(namespace: &str, name: &str, uid: &str, value: &str) -> Secret {
    let mut secret = secret(None, &[("password", value)]);
    secret.metadata.namespace = Some(namespace.into());
    secret.metadata.name = Some(name.into());
    secret.metadata.uid = Some(uid.into());
    secret
}

#[test]
fn two_sources_of_one_value_have_different_checksums() {
    let one = stored("team-a", "db", "uid-1", "hunter2");
    let checksums: Vec<String> = [
        stored("team-b", "db", "uid-1", "hunter2"),
        stored("team-a", "web", "uid-1", "hunter2"),
        stored("team-a", "db", "uid-2", "hunter2"),
    ]
    .iter()
    .map(|other| other.content_digest(&key(1)))
    .collect();
    for other in &checksums {
        assert_ne!(&one.content_digest(&key(1)), other);
    }
    assert_eq!(
        one.content_digest(&key(1)),
        stored("team-a", "db", "uid-1", "hunter2").content_digest(&key(1))
    );
}

#[test]
fn the_source_s_identity_is_length_prefixed() {
    let checksum = |namespace, name| {
        Secret::checksum(
            "hash",
            &SourceId {
                namespace,
                name,
                uid: "u",
            },
            &key(1),
        )
        .into_owned()
    };
    assert_ne!(checksum("ab", "c"), checksum("a", "bc"));
}

#[test]
fn what_is_cached_needs_no_key_and_is_never_a_checksum() {
    let source = stored("ns", "db", "uid-1", "hunter2");
    let hash = source.content_hash();
    let id = SourceId::of(&source.metadata);
    for byte in [1, 2] {
        let checksum = Secret::checksum(&hash, &id, &key(byte));
        assert_eq!(checksum, source.content_digest(&key(byte)));
        assert!(!checksum.contains(&hash));
    }
    let mut other_key_same_content = source.clone();
    other_key_same_content.metadata.uid = Some("uid-2".into());
    assert_eq!(other_key_same_content.content_hash(), hash);
}

#[test]
fn a_shared_key_tells_a_change_only_once() {
    let shared = SharedDigestKey::default();
    assert_eq!(shared.current(), None);
    let mut changes = shared.changes();
    assert!(shared.set(Some(key(1))));
    assert!(!shared.set(Some(key(1))), "the same key is no change");
    assert!(changes.has_changed().unwrap());
    assert_eq!(*changes.borrow_and_update(), Some(key(1)));
    assert!(shared.set(None));
    assert_eq!(shared.current(), None);
    assert_eq!(format!("{shared:?}"), "SharedDigestKey(..)");
}

#[test]
fn the_install_s_own_secret_is_never_a_source() {
    let rules = SecretSourceRules::new(&[]).with_own_secret(("home".into(), "key".into()));
    let mut key = secret(Some("Opaque"), &[]);
    key.metadata.namespace = Some("home".into());
    key.metadata.name = Some("key".into());
    let why = key.source_refusal(&rules).unwrap();
    assert!(why.contains("digest key"), "{why}");
    key.metadata.namespace = Some("team-a".into());
    assert_eq!(key.source_refusal(&rules), None, "the same name elsewhere");
}
