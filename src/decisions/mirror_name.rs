//! The name a source's mirrors in other namespaces bear: its
//! `workshop.io/mirror-name`, or its own name. Pure.
//!
//! Only the mirrors take it: the companion keeps `<name><suffix>` in the
//! source's namespace, and a ClusterMirror names its copies itself. A name
//! ending in the companion suffix is allowed: a mirror is never a source
//! (it carries the managed-by label), and an object already at that name
//! (a companion of a source of that namespace, say) keeps it, as any name
//! held stays with its holder; so no chain can grow from it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{
    contract::{HELM_RELEASE_NAME_PREFIX, MAX_NAME_LEN, MIRROR_NAME_ANNOTATION, annotation},
    decisions::names::is_dns_subdomain,
};

/// The name `source`'s mirrors bear, or why its `workshop.io/mirror-name`
/// cannot be one (then no mirror is written until it is fixed, and the
/// prune loop keeps them under any name).
/// Reserved names are the install's to refuse (`Install::reserved_names`).
pub fn mirror_name(source: &ObjectMeta) -> Result<&str, String> {
    let Some(asked) = annotation(source, MIRROR_NAME_ANNOTATION) else {
        return Ok(source.name.as_deref().unwrap_or_default());
    };
    let refused = |why: String| Err(format!("invalid {MIRROR_NAME_ANNOTATION}: {why}"));
    if asked.is_empty() {
        return refused("it is empty (remove it to name mirrors as the source)".into());
    }
    let len = asked.chars().count();
    if len > MAX_NAME_LEN {
        return refused(format!(
            "it is {len} characters long, over the limit of {MAX_NAME_LEN}"
        ));
    }
    if asked.chars().any(char::is_whitespace) {
        return refused(format!("{asked:?} holds whitespace"));
    }
    if !is_dns_subdomain(asked) {
        return refused(format!(
            "{asked:?} is not an object name (lowercase letters, digits, '-' and '.', \
             starting and ending with a letter or digit)"
        ));
    }
    if asked.starts_with(HELM_RELEASE_NAME_PREFIX) {
        return refused(format!(
            "{asked:?} is named as a Helm release record ({HELM_RELEASE_NAME_PREFIX}*), which \
             Helm would trust as one"
        ));
    }
    Ok(asked)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn source(asked: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: Some("colors".into()),
            namespace: Some("app".into()),
            annotations: asked
                .map(|name| BTreeMap::from([(MIRROR_NAME_ANNOTATION.to_owned(), name.to_owned())])),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn mirrors_bear_the_source_name_unless_the_annotation_names_another() {
        assert_eq!(mirror_name(&source(None)), Ok("colors"));
        assert_eq!(mirror_name(&source(Some("palette"))), Ok("palette"));
        assert_eq!(mirror_name(&source(Some("a.b-c.d"))), Ok("a.b-c.d"));
        assert_eq!(
            mirror_name(&source(Some("colors-synced"))),
            Ok("colors-synced")
        );
    }

    #[test]
    fn a_name_kubernetes_or_helm_would_refuse_or_misread_is_refused_with_why() {
        let long = "a".repeat(254);
        let cases = [
            ("", "empty"),
            (" palette", "whitespace"),
            ("palette\n", "whitespace"),
            ("pal ette", "whitespace"),
            ("Palette", "not an object name"),
            ("pal_ette", "not an object name"),
            ("-palette", "not an object name"),
            ("palette.", "not an object name"),
            ("a..b", "not an object name"),
            (long.as_str(), "254 characters long"),
            ("sh.helm.release.v1.web.v1", "Helm release record"),
        ];
        for (asked, why) in cases {
            let refused = mirror_name(&source(Some(asked))).unwrap_err();
            assert!(refused.contains(why), "{asked:?}: {refused}");
            assert!(refused.contains(MIRROR_NAME_ANNOTATION), "{refused}");
        }
        assert!(mirror_name(&source(Some(&"a".repeat(253)))).is_ok());
    }

    #[test]
    fn a_name_s_length_is_told_in_characters() {
        // 130 characters, 260 bytes: short enough, but no object name.
        let accented = "é".repeat(130);
        let refused = mirror_name(&source(Some(&accented))).unwrap_err();
        assert!(refused.contains("not an object name"), "{refused}");
        let refused = mirror_name(&source(Some(&"é".repeat(254)))).unwrap_err();
        assert!(refused.contains("254 characters long"), "{refused}");
    }
}
