use std::collections::BTreeMap;

use k8s_openapi::{
    ByteString,
    api::core::v1::{ConfigMap, Secret},
};

use super::*;
use crate::decisions::key_shape::{checksum::shaped_copy_hash_of, content::shaped_content};
use crate::test_fixtures::{mk_full_source, mk_secret_source};

fn shape(text: &str) -> KeyShape {
    KeyShape::parse_annotation(text).unwrap()
}

fn configmap(data: &[(&str, &str)]) -> ConfigMap {
    let mut source = mk_full_source(data);
    source.binary_data = Some(BTreeMap::from([("logo".into(), ByteString(vec![0xff, 0]))]));
    source
}

fn tls_secret() -> Secret {
    let mut secret = mk_secret_source("corp-tls", "uid-9", "hunter2");
    secret.type_ = Some("kubernetes.io/tls".into());
    let data = secret.data.get_or_insert_with(BTreeMap::new);
    for (name, value) in [("ca.crt", "CA"), ("tls.crt", "CRT"), ("tls.key", "KEY")] {
        data.insert(name.into(), ByteString(value.as_bytes().to_vec()));
    }
    secret
}

/// The plan gives the hash and the content the shape gives, whatever the
/// shape and form.
fn agrees<K: MirroredKind>(source: &K, shape: &KeyShape, form: CopyForm<'_>) {
    let plan = content_plan(source, shape, form).unwrap();
    let hash = match shape.is_every_key() && form == CopyForm::default() {
        true => source.content_hash(),
        false => shaped_copy_hash_of(source, shape, form).unwrap().hash,
    };
    assert_eq!(plan.hash, hash, "{shape:?} {form:?}");
    let (content, _) = shaped_content(source, shape, form.copy_type);
    assert_eq!(plan.content(source), content, "{shape:?} {form:?}");
    let size: usize = (content.content_keys().iter())
        .map(|key| key.value.len())
        .sum();
    assert_eq!(plan.size, size, "{shape:?} {form:?}");
}

#[test]
fn a_plan_gives_what_shaping_the_content_gives() {
    let source = configmap(&[("a", "1"), ("b", "22")]);
    for text in ["*", "a", "a,a=c,logo=brand", "!b", "*,!logo", "b=a,a=b"] {
        agrees(&source, &shape(text), CopyForm::default());
    }
    agrees(&source, &KeyShape::EVERY_KEY, CopyForm::default());
    let secret = tls_secret();
    agrees(&secret, &KeyShape::EVERY_KEY, CopyForm::default());
    agrees(&secret, &shape("tls.*"), CopyForm::default());
    let opaque = CopyForm {
        as_configmap: false,
        copy_type: Some("Opaque"),
    };
    agrees(&secret, &shape("ca.crt"), opaque);
    agrees(&secret, &shape("*"), opaque);
    let refused = content_plan(&secret, &shape("ca.crt"), CopyForm::default());
    assert_eq!(refused.unwrap_err().missing, ["tls.crt", "tls.key"]);
}

#[test]
fn a_key_copied_under_many_names_counts_once_per_name_and_is_refused_over_the_limit() {
    let value = "x".repeat(1_000_000);
    let source = configmap(&[("a", &value)]);
    let names: Vec<String> = (1..100).map(|at| format!("a=b{at}")).collect();
    let hostile = shape(&format!("a,{}", names.join(",")));
    let plan = content_plan(&source, &hostile, CopyForm::default()).unwrap();
    assert_eq!(plan.size, 100_000_000);
    let refused = plan.too_large("ConfigMap").unwrap();
    assert_eq!(
        refused.to_string(),
        "the copy would hold 100,000,000 bytes, over the API server's limit of 1,048,576 bytes \
         for a ConfigMap's data; it is not written until the source changes"
    );
}

#[test]
fn a_copy_at_the_limit_is_accepted_and_one_byte_over_it_is_not() {
    let at_limit = "x".repeat(MAX_CONTENT_BYTES - 2);
    let source = configmap(&[("a", &at_limit)]);
    let every = content_plan(&source, &KeyShape::EVERY_KEY, CopyForm::default()).unwrap();
    assert_eq!(
        every.size, MAX_CONTENT_BYTES,
        "the logo's two bytes count too"
    );
    assert_eq!(every.too_large("ConfigMap"), None);
    let once = content_plan(&source, &shape("a,logo=brand"), CopyForm::default()).unwrap();
    assert_eq!(once.too_large("ConfigMap"), None);
    let over = content_plan(&source, &shape("a,logo,logo=brand"), CopyForm::default()).unwrap();
    assert_eq!(over.size, MAX_CONTENT_BYTES + 2);
    assert!(over.too_large("ConfigMap").is_some());
}

#[test]
fn sizes_are_told_with_their_thousands_grouped() {
    assert_eq!(grouped(0), "0");
    assert_eq!(grouped(999), "999");
    assert_eq!(grouped(1_000), "1,000");
    assert_eq!(grouped(104_857_700), "104,857,700");
}
