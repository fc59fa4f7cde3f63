//! Whether a source read fresh from the API server still decides what its
//! cached form decided. A reconcile chooses the copies to write (which
//! namespaces, which carried labels and annotations) from the cache, and
//! writes the fresh content into them: if the source changed in between,
//! the fresh content must not go where only the older source sent it (nor
//! under a name only the older source gave its mirrors). Pure.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{
    contract::is_managed_by_us, decisions::carried, decisions::selector::Selector,
    decisions::source_asks::SourceAsks,
};

/// Why `fresh` no longer decides as `cached` did, if it does not.
pub fn changed_decision(
    cached: &ObjectMeta,
    fresh: &ObjectMeta,
    source_selector: &Selector,
) -> Option<&'static str> {
    if cached.resource_version.is_some() && cached.resource_version == fresh.resource_version {
        return None;
    }
    if !source_selector.matches(fresh.labels.as_ref().unwrap_or(&Default::default())) {
        return Some("it no longer matches the source selector");
    }
    if is_managed_by_us(fresh) {
        return Some("it now carries the label of a copy");
    }
    if fresh.deletion_timestamp.is_some() {
        return Some("it is being deleted");
    }
    let asks = SourceAsks::of(fresh);
    if let Some(changed) = asks.changed_from(&SourceAsks::of(cached)) {
        return Some(changed);
    }
    let lists = asks.lists.unwrap_or_default();
    if carried::selected_of(fresh, &lists) != carried::selected_of(cached, &lists) {
        return Some("the labels or annotations its copies carry changed");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{
        COPY_LABELS_ANNOTATION, MANAGED_BY_LABEL, MANAGER_NAME, MIRROR_KEYS_ANNOTATION,
        MIRROR_NAME_ANNOTATION,
    };
    use crate::decisions::targets::MIRROR_TO_ANNOTATION;
    use crate::test_fixtures::{mk_map, mk_mirrored_source};

    fn selector() -> Selector {
        Selector::parse("workshop.io/managed=true").unwrap()
    }

    fn source(version: &str) -> ObjectMeta {
        let mut meta = mk_mirrored_source("team-*").metadata;
        meta.resource_version = Some(version.into());
        meta
    }

    #[test]
    fn the_same_version_or_a_change_of_content_only_decides_alike() {
        let cached = source("1");
        assert_eq!(changed_decision(&cached, &source("1"), &selector()), None);
        assert_eq!(changed_decision(&cached, &source("2"), &selector()), None);
    }

    #[test]
    fn a_source_that_lost_its_label_or_retargeted_decides_otherwise() {
        let cached = source("1");
        let mut unlabeled = source("2");
        unlabeled.labels = None;
        assert!(changed_decision(&cached, &unlabeled, &selector()).is_some());
        let mut retargeted = source("2");
        retargeted
            .annotations
            .get_or_insert_with(Default::default)
            .insert(MIRROR_TO_ANNOTATION.into(), "payments".into());
        assert!(changed_decision(&cached, &retargeted, &selector()).is_some());
        let mut copy = source("2");
        copy.labels
            .get_or_insert_with(Default::default)
            .insert(MANAGED_BY_LABEL.into(), MANAGER_NAME.into());
        assert!(changed_decision(&cached, &copy, &selector()).is_some());
    }

    #[test]
    fn a_change_of_a_carried_label_decides_otherwise() {
        let mut cached = source("1");
        cached
            .annotations
            .get_or_insert_with(Default::default)
            .insert(COPY_LABELS_ANNOTATION.into(), "team".into());
        cached
            .labels
            .get_or_insert_with(Default::default)
            .extend(mk_map(&[("team", "a")]));
        let mut fresh = cached.clone();
        fresh.resource_version = Some("2".into());
        assert_eq!(changed_decision(&cached, &fresh, &selector()), None);
        fresh
            .labels
            .get_or_insert_with(Default::default)
            .insert("team".into(), "b".into());
        assert!(changed_decision(&cached, &fresh, &selector()).is_some());
    }

    #[test]
    fn a_change_of_the_keys_to_mirror_decides_otherwise() {
        let cached = source("1");
        let mut fresh = source("2");
        fresh
            .annotations
            .get_or_insert_with(Default::default)
            .insert(MIRROR_KEYS_ANNOTATION.into(), "a".into());
        assert!(changed_decision(&cached, &fresh, &selector()).is_some());
    }

    #[test]
    fn a_change_of_the_mirrors_name_decides_otherwise() {
        let cached = source("1");
        let mut fresh = source("2");
        fresh
            .annotations
            .get_or_insert_with(Default::default)
            .insert(MIRROR_NAME_ANNOTATION.into(), "palette".into());
        assert!(changed_decision(&cached, &fresh, &selector()).is_some());
    }
}
