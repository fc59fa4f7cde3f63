use std::collections::BTreeMap;

use k8s_openapi::{
    ByteString,
    api::core::v1::{ConfigMap, Secret},
};

use super::*;
use crate::contract::{MIRROR_KEYS_ANNOTATION, content_checksum};
use crate::decisions::cache_form::{
    CachedCopy, copy_from_cache, key_digests::source_copy_keys, slim_cluster_source, slim_copy,
    slim_source, source_checksum,
};
use crate::decisions::key_shape::content::shaped_content;
use crate::decisions::secret_published::secret_published;
use crate::kind::{SourceId, secret::SecretDigestKey};
use crate::test_fixtures::{mk_full_source, mk_map, mk_secret_source};

fn key() -> SecretDigestKey {
    SecretDigestKey::from_bytes(&[9; SecretDigestKey::LEN]).unwrap()
}

fn shape(text: &str) -> KeyShape {
    KeyShape::parse_annotation(text).unwrap()
}

/// A ConfigMap source whose copies hold `keys`, with text and binary keys.
fn configmap(keys: &str, data: &[(&str, &str)]) -> ConfigMap {
    let mut source = mk_full_source(data);
    source.binary_data = Some(BTreeMap::from([("logo".into(), ByteString(vec![0xff, 0]))]));
    let annotations = source
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new);
    annotations.insert(MIRROR_KEYS_ANNOTATION.into(), keys.into());
    source
}

fn tls_secret(type_: &str, key_value: &str) -> Secret {
    let mut secret = mk_secret_source("corp-tls", "uid-9", "hunter2");
    secret.type_ = Some(type_.into());
    let data = secret.data.get_or_insert_with(BTreeMap::new);
    for (name, value) in [("ca.crt", "CA"), ("tls.crt", "CRT"), ("tls.key", key_value)] {
        data.insert(name.into(), ByteString(value.as_bytes().to_vec()));
    }
    secret
}

fn hash_of<K: MirroredKind>(source: &K, shape: &KeyShape, form: CopyForm<'_>) -> String {
    shaped_copy_hash_of(source, shape, form).unwrap().hash
}

/// `content` as a built copy of `source` records it: its checksum.
fn as_copy<K: MirroredKind>(mut content: K, checksum: String) -> K {
    content.meta_mut().annotations = Some(mk_map(&[(CHECKSUM_ANNOTATION, &checksum)]));
    content
}

#[test]
fn a_copy_without_a_shape_keeps_today_s_checksum() {
    let source = configmap("*", &[("a", "1"), ("b", "2")]);
    let today = content_checksum(&source);
    for shape in [KeyShape::EVERY_KEY, shape("*"), shape("a,b,logo")] {
        assert_eq!(
            hash_of(&source, &shape, CopyForm::default()),
            today,
            "{shape:?}"
        );
    }
    let secret = tls_secret("kubernetes.io/tls", "KEY");
    let hash = hash_of(&secret, &KeyShape::EVERY_KEY, CopyForm::default());
    assert_eq!(hash, secret.content_hash());
    let id = SourceId::of(&secret.metadata);
    let checksum = Secret::checksum(&hash, &id, &key());
    assert_eq!(checksum, secret.content_digest(&key()));
    assert!(checksum.starts_with("hmac-sha256:"), "{checksum}");
}

#[test]
fn a_source_without_mirror_keys_is_cached_exactly_as_before() {
    let full = mk_full_source(&[("a", "1")]);
    let mut slim = full.clone();
    slim_source(&mut slim);
    assert_eq!(slim.metadata.self_link, Some(full.content_hash()));
    assert_eq!(
        source_copy_keys(&slim, &KeyShape::EVERY_KEY, CopyForm::default()),
        None
    );
}

#[test]
fn the_cached_form_gives_what_the_full_source_gives() {
    let source = configmap("a,logo=brand", &[("a", "1"), ("b", "2")]);
    let shape = shape("a,logo=brand");
    let mut slim = source.clone();
    slim_source(&mut slim);
    assert_eq!(slim.data, None);
    let cached = source_copy_keys(&slim, &shape, CopyForm::default());
    let full = shaped_copy_hash_of(&source, &shape, CopyForm::default()).map(CopyKeys::from);
    assert_eq!(cached, Some(full));
    assert_eq!(
        source_checksum(&slim, &()),
        content_checksum(&source),
        "the plain one too"
    );
    let secret = tls_secret("kubernetes.io/tls", "KEY");
    let mut slim = secret.clone();
    slim_cluster_source(&mut slim);
    let form = CopyForm {
        as_configmap: true,
        copy_type: None,
    };
    let exact = self::shape("ca.crt");
    let cached = source_copy_keys(&slim, &exact, form).unwrap().unwrap();
    let full = shaped_copy_hash_of(&secret, &exact, form).unwrap();
    assert_eq!(cached, CopyKeys::from(full));
    assert!(!slim.metadata.self_link.unwrap().contains("KEY"));
}

#[test]
fn a_change_of_a_key_not_copied_changes_nothing() {
    let shape = shape("a,logo");
    let before = hash_of(
        &configmap("", &[("a", "1"), ("b", "2")]),
        &shape,
        CopyForm::default(),
    );
    let after = hash_of(
        &configmap("", &[("a", "1"), ("b", "3")]),
        &shape,
        CopyForm::default(),
    );
    assert_eq!(before, after);
    assert!(before.starts_with("keys-sha256:"), "{before}");
    let exact = self::shape("ca.crt");
    let (old, new) = (
        tls_secret("kubernetes.io/tls", "K1"),
        tls_secret("kubernetes.io/tls", "K2"),
    );
    let opaque = CopyForm {
        as_configmap: false,
        copy_type: Some("Opaque"),
    };
    assert_eq!(hash_of(&old, &exact, opaque), hash_of(&new, &exact, opaque));
}

#[test]
fn a_change_of_a_copied_key_or_of_what_the_shape_copies_changes_it() {
    let base = hash_of(
        &configmap("", &[("a", "1"), ("b", "2")]),
        &shape("a"),
        CopyForm::default(),
    );
    let source = configmap("", &[("a", "1"), ("b", "2")]);
    for other in [
        hash_of(
            &configmap("", &[("a", "9"), ("b", "2")]),
            &shape("a"),
            CopyForm::default(),
        ),
        hash_of(&source, &shape("a=z"), CopyForm::default()),
        hash_of(&source, &shape("a,b"), CopyForm::default()),
        hash_of(&source, &shape("a,logo"), CopyForm::default()),
    ] {
        assert_ne!(base, other);
    }
    let secret = tls_secret("kubernetes.io/tls", "KEY");
    let kept = hash_of(&secret, &shape("tls.*"), CopyForm::default());
    let opaque = CopyForm {
        as_configmap: false,
        copy_type: Some("Opaque"),
    };
    assert_ne!(
        kept,
        hash_of(&secret, &shape("tls.*"), opaque),
        "the type is content"
    );
}

#[test]
fn a_key_moved_between_data_and_binary_data_changes_its_digest() {
    let value = b"same";
    let [text, binary] = [Field::Data, Field::BinaryData].map(|field| {
        key_digest(&KeyValue {
            field,
            name: "k",
            value,
        })
    });
    assert_ne!(text, binary);
}

#[test]
fn a_shape_that_breaks_the_type_is_refused_unless_the_copy_is_opaque() {
    let secret = tls_secret("kubernetes.io/tls", "KEY");
    let broken = shaped_copy_hash_of(&secret, &shape("ca.crt"), CopyForm::default()).unwrap_err();
    assert_eq!(broken.missing, ["tls.crt", "tls.key"]);
    let opaque = CopyForm {
        as_configmap: false,
        copy_type: Some("Opaque"),
    };
    let shaped = shaped_copy_hash_of(&secret, &shape("ca.crt"), opaque).unwrap();
    assert_eq!(shaped.copy_type.as_deref(), Some("Opaque"));
}

#[test]
fn a_key_renamed_onto_one_the_type_requires_is_refused() {
    let secret = tls_secret("kubernetes.io/tls", "KEY");
    let form = CopyForm::default();
    let onto = shaped_copy_hash_of(&secret, &shape("ca.crt=tls.crt,tls.key"), form).unwrap_err();
    assert_eq!(onto.missing, ["tls.crt"]);
    let away = shaped_copy_hash_of(&secret, &shape("tls.crt=cert.pem,tls.key"), form).unwrap_err();
    assert_eq!(away.missing, ["tls.crt"]);
}

/// Written and read back through the copies' cache, a built copy compares
/// in sync with the checksum its source's cached form gives.
#[test]
fn a_shaped_copy_compares_in_sync_from_the_caches() {
    let source = configmap("a,logo=brand", &[("a", "1"), ("b", "2")]);
    let shape = shape("a,logo=brand");
    let (content, shaped) = shaped_content(&source, &shape, None);
    assert_eq!(shaped.names().collect::<Vec<_>>(), ["a", "brand"]);
    assert_eq!(
        content.binary_data.as_ref().unwrap().len(),
        1,
        "a key keeps its field"
    );
    let mut slim_source_form = source.clone();
    slim_source(&mut slim_source_form);
    let hash = source_copy_keys(&slim_source_form, &shape, CopyForm::default());
    let checksum = hash.unwrap().unwrap().hash;
    let copy = as_copy(content, checksum.clone());
    assert_eq!(
        copy_content_hash(&copy),
        checksum,
        "the cache hashes it by key"
    );
    let mut slim = copy.clone();
    slim_copy(&mut slim);
    let id = SourceId::of(&source.metadata);
    assert_eq!(
        copy_from_cache(&slim).checksum_as_copy_of(&id, &()),
        checksum
    );
    assert_eq!(
        CachedCopy::of(&copy).checksum_as_copy_of(&id, &()),
        checksum
    );
    let mut edited = copy.clone();
    edited.data = Some(mk_map(&[("a", "edited")]));
    assert_ne!(
        CachedCopy::of(&edited).checksum_as_copy_of(&id, &()),
        checksum
    );
}

#[test]
fn a_secret_s_shaped_copy_stays_keyed_and_bound_and_compares_in_sync() {
    let secret = tls_secret("kubernetes.io/tls", "KEY");
    let id = SourceId::of(&secret.metadata);
    let shape = shape("tls.*");
    let (content, _) = shaped_content(&secret, &shape, None);
    let hash = hash_of(&secret, &shape, CopyForm::default());
    let checksum = Secret::checksum(&hash, &id, &key()).into_owned();
    assert!(checksum.starts_with("keys-hmac-sha256:"), "{checksum}");
    assert!(!checksum.contains(&hash["keys-sha256:".len()..]));
    let copy = as_copy(content, checksum.clone());
    let mut slim = copy.clone();
    slim_copy(&mut slim);
    assert_eq!(
        copy_from_cache(&slim).checksum_as_copy_of(&id, &key()),
        checksum
    );
    let other = SourceId {
        uid: "uid-other",
        ..id
    };
    assert_ne!(
        Secret::checksum(&hash, &other, &key()),
        checksum,
        "bound to its source"
    );
}

#[test]
fn a_secret_s_public_part_as_a_configmap_is_keyed_and_compares_in_sync() {
    let secret = tls_secret("kubernetes.io/tls", "KEY");
    let id = SourceId::of(&secret.metadata);
    let shape = shape("ca.crt=root.pem");
    let form = CopyForm {
        as_configmap: true,
        copy_type: None,
    };
    let published = secret_published(&secret, &shape);
    assert_eq!(published.data, Some(mk_map(&[("ca.crt", "CA")])));
    assert_eq!(published.binary_data, None, "no other key is held");
    assert_eq!(published.metadata, secret.metadata);
    let (content, shaped) = shaped_content(&published, &shape, None);
    assert_eq!(content.data, Some(mk_map(&[("root.pem", "CA")])));
    assert_eq!(shaped.names().collect::<Vec<_>>(), ["root.pem"]);
    // The cached Secret's digests give the hash the full one does.
    let hash = hash_of(&published, &shape, form);
    let mut cached = secret.clone();
    slim_cluster_source(&mut cached);
    let cached_view = secret_published(&cached, &shape);
    assert_eq!(cached_view.data, None, "a cached Secret has no values");
    let from_cache = source_copy_keys(&cached_view, &shape, form).unwrap();
    assert_eq!(from_cache.unwrap().hash, hash);
    let key = key();
    let checksum = ConfigMap::checksum(&hash, &id, &key).into_owned();
    assert!(checksum.starts_with("keys-hmac-sha256:"), "{checksum}");
    let copy = as_copy(content, checksum.clone());
    let mut slim = copy.clone();
    slim_copy(&mut slim);
    assert_eq!(
        copy_from_cache(&slim).checksum_as_copy_of(&id, &key),
        checksum
    );
    assert_ne!(
        copy_from_cache(&slim).checksum_as_copy_of(&id, &()),
        checksum,
        "unkeyed, it differs"
    );
}
