use std::collections::BTreeMap;

use k8s_openapi::{ByteString, api::core::v1::Secret};
use sha2::{Digest, Sha256};

use super::*;

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
    let none = RefusedSecretTypes::default();
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
    let none = RefusedSecretTypes::default();
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
    let refused = RefusedSecretTypes::new(&[" example.com/kubeconfig".into(), String::new()]);
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
