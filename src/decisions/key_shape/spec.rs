//! A ClusterMirror's key shape and copy form, from its spec: the same
//! shape type and checks as `workshop.io/mirror-keys`, so that a spec the
//! CRD's rules did not check (stored under an older CRD) is refused alike.
//!
//! Pure.

use super::{Include, KeyShape, checksum::CopyForm};
use crate::api::{ClusterMirrorSpec, SourceKind, Target};
use crate::decisions::patterns::Glob;

/// The key shape of `target.keys` and `target.excludeKeys`; an error says
/// which entry is wrong and why (an `InvalidSpec`).
pub fn key_shape(target: &Target) -> Result<KeyShape, String> {
    let includes = target.keys.iter().map(|entry| match &entry.copy_as {
        None if entry.key.contains('*') => Include::Glob(Glob::new(&entry.key)),
        copy_as => Include::Exact {
            key: entry.key.clone(),
            copy_as: copy_as.clone(),
        },
    });
    KeyShape::new(includes.collect(), target.exclude_keys.clone())
        .map_err(|why| format!("spec.target.keys: {why}"))
}

/// What the copies are besides their keys; an error for a kind and type
/// the CRD's rules refuse.
pub fn copy_form(spec: &ClusterMirrorSpec) -> Result<CopyForm<'static>, String> {
    let target = &spec.target;
    let as_configmap = match (spec.source.kind, target.kind) {
        (_, None) | (SourceKind::Secret, Some(SourceKind::Secret)) => false,
        (SourceKind::Secret, Some(SourceKind::ConfigMap)) => true,
        (SourceKind::ConfigMap, Some(_)) => {
            return Err("spec.target.kind is for a Secret source only".into());
        }
    };
    let secret_copy = spec.source.kind == SourceKind::Secret && !as_configmap;
    if target.type_.is_some() && !secret_copy {
        return Err("spec.target.type is for a Secret copy only".into());
    }
    if as_configmap && !key_shape(target)?.names_exact_keys_only() {
        return Err(
            "spec.target.kind ConfigMap publishes only exact keys named in spec.target.keys".into(),
        );
    }
    Ok(CopyForm {
        as_configmap,
        copy_type: target.type_.map(|type_| type_.as_str()),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::decisions::key_shape::MAX_KEY_ENTRIES;

    fn spec(source_kind: &str, target: serde_json::Value) -> ClusterMirrorSpec {
        let mut target = target;
        target["namespaceSelector"] = json!({});
        serde_json::from_value(json!({
            "source": {"kind": source_kind, "namespace": "platform", "name": "corp-tls"},
            "target": target,
        }))
        .unwrap()
    }

    #[test]
    fn keys_and_exclusions_read_as_the_annotation_s_entries() {
        let spec = spec(
            "Secret",
            json!({"keys": [{"key": "ca.crt", "as": "root.pem"}, {"key": "tls.*"}],
                   "excludeKeys": ["*.key"]}),
        );
        let expected = KeyShape::parse_annotation("ca.crt=root.pem,tls.*,!*.key").unwrap();
        assert_eq!(key_shape(&spec.target), Ok(expected));
        assert_eq!(
            key_shape(&self::spec("ConfigMap", json!({})).target),
            Ok(KeyShape::EVERY_KEY)
        );
    }

    #[test]
    fn a_spec_the_crd_s_rules_would_refuse_is_refused_alike() {
        let renamed_glob = spec("Secret", json!({"keys": [{"key": "tls.*", "as": "x"}]}));
        assert!(key_shape(&renamed_glob.target).is_err());
        let two_into_one = spec(
            "Secret",
            json!({"keys": [{"key": "a", "as": "c"}, {"key": "b", "as": "c"}]}),
        );
        assert!(key_shape(&two_into_one.target).is_err());
        for refused in [
            spec("ConfigMap", json!({"kind": "ConfigMap"})),
            spec(
                "Secret",
                json!({"kind": "ConfigMap", "keys": [{"key": "ca.*"}]}),
            ),
            spec("Secret", json!({"kind": "ConfigMap"})),
            spec(
                "Secret",
                json!({"kind": "ConfigMap", "type": "Opaque", "keys": [{"key": "a"}]}),
            ),
            spec("ConfigMap", json!({"type": "Opaque"})),
        ] {
            assert!(copy_form(&refused).is_err(), "{:?}", refused.target);
        }
    }

    #[test]
    fn each_list_may_hold_as_many_entries_as_the_crd_allows_it() {
        let entries = |prefix: &str, count: usize| -> Vec<String> {
            (0..count).map(|n| format!("{prefix}{n}")).collect()
        };
        let keys = |count| -> serde_json::Value {
            entries("k", count)
                .iter()
                .map(|key| json!({"key": key}))
                .collect()
        };
        let both_full = spec(
            "Secret",
            json!({"keys": keys(MAX_KEY_ENTRIES), "excludeKeys": entries("x", MAX_KEY_ENTRIES)}),
        );
        assert!(key_shape(&both_full.target).is_ok());
        let keys_over = spec("Secret", json!({"keys": keys(MAX_KEY_ENTRIES + 1)}));
        let error = key_shape(&keys_over.target).unwrap_err();
        assert!(error.contains("in keys, over the limit"), "{error}");
        let excludes_over = spec(
            "Secret",
            json!({"excludeKeys": entries("x", MAX_KEY_ENTRIES + 1)}),
        );
        let error = key_shape(&excludes_over.target).unwrap_err();
        assert!(error.contains("in excludeKeys, over the limit"), "{error}");
        let half = MAX_KEY_ENTRIES / 2 + 10;
        let annotation = [entries("k", half), entries("!x", half)].concat().join(",");
        let error = KeyShape::parse_annotation(&annotation).unwrap_err();
        assert!(error.contains("over the limit of 100"), "{error}");
    }

    #[test]
    fn the_copy_form_says_a_configmap_of_a_secret_and_an_opaque_copy() {
        let public = spec(
            "Secret",
            json!({"kind": "ConfigMap", "keys": [{"key": "ca.crt"}]}),
        );
        assert_eq!(
            copy_form(&public),
            Ok(CopyForm {
                as_configmap: true,
                copy_type: None
            })
        );
        let opaque = spec(
            "Secret",
            json!({"type": "Opaque", "keys": [{"key": "ca.crt"}]}),
        );
        assert_eq!(
            copy_form(&opaque).map(|form| form.copy_type),
            Ok(Some("Opaque"))
        );
        assert_eq!(
            copy_form(&spec("Secret", json!({}))),
            Ok(CopyForm::default())
        );
    }
}
