use std::collections::BTreeMap;

use k8s_openapi::{ByteString, apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry};

use super::*;
use crate::decisions::cache_form::slim_cluster_source;
use crate::test_fixtures::{mk_map, mk_secret_source};

/// A cert-manager-style TLS Secret applied with kubectl: its annotation
/// holds every value, its key a binary one.
fn tls_secret() -> Secret {
    let mut secret = mk_secret_source("corp-tls", "uid-9", "hunter2");
    secret.type_ = Some("kubernetes.io/tls".into());
    secret.immutable = Some(true);
    let data = secret.data.get_or_insert_with(BTreeMap::new);
    data.insert("ca.crt".into(), ByteString(b"CA".to_vec()));
    data.insert("tls.crt".into(), ByteString(b"CRT".to_vec()));
    data.insert("tls.key".into(), ByteString(vec![0xff, 0x00, 0x42]));
    secret.metadata.annotations = Some(mk_map(&[(
        "kubectl.kubernetes.io/last-applied-configuration",
        r#"{"data":{"tls.key":"/wBC"}}"#,
    )]));
    secret.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
    secret.metadata.resource_version = Some("17".into());
    secret
}

fn shape(text: &str) -> KeyShape {
    KeyShape::parse_annotation(text).unwrap()
}

#[test]
fn a_published_secret_holds_the_keys_copied_and_only_its_identity() {
    let secret = tls_secret();
    let published = secret_published(&secret, &shape("ca.crt=root.pem"));
    assert_eq!(published.data, Some(mk_map(&[("ca.crt", "CA")])));
    assert_eq!(published.binary_data, None);
    assert_eq!(published.immutable, Some(true));
    let meta = &published.metadata;
    assert_eq!(
        (
            meta.name.as_deref(),
            meta.namespace.as_deref(),
            meta.uid.as_deref()
        ),
        (Some("corp-tls"), Some("ns"), Some("uid-9"))
    );
    assert_eq!(meta.resource_version.as_deref(), Some("17"));
    assert_eq!(meta.labels, secret.metadata.labels, "what decides a source");
    assert_eq!(meta.annotations, None, "last-applied holds every value");
    assert_eq!(meta.managed_fields, None);
}

#[test]
fn a_cached_published_secret_keeps_only_the_copied_keys_digests() {
    let mut cached = tls_secret();
    slim_cluster_source(&mut cached);
    let kept = cached.metadata.self_link.clone().unwrap();
    assert_eq!(kept.lines().count(), 5, "a hash, then a digest per key");
    let published = secret_published(&cached, &shape("ca.crt"));
    assert_eq!(published.data, None, "a cached Secret has no values");
    let aside = published.metadata.self_link.unwrap();
    let lines: Vec<&str> = aside.lines().collect();
    assert_eq!(lines.len(), 2, "{aside}");
    assert_eq!(lines[0], kept.lines().next().unwrap(), "the hash stays");
    assert!(lines[1].starts_with("dca.crt "), "{aside}");
}

#[test]
fn explain_s_form_names_the_other_keys_without_their_values() {
    let published = secret_published_naming_the_rest(&tls_secret(), &shape("ca.crt"));
    assert_eq!(
        published.data,
        Some(mk_map(&[
            ("ca.crt", "CA"),
            ("password", ""),
            ("tls.crt", ""),
            ("tls.key", "")
        ]))
    );
    assert_eq!(published.binary_data, None);
}
