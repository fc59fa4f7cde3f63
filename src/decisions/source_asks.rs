//! What a labelled source asks of its copies, each of its annotations read
//! by its own parser: where its mirrors go (`targets`), which keys its
//! copies hold (`key_shape`), the name its mirrors bear (`mirror_name`),
//! and which of its labels and annotations they carry (`carried`). Two
//! versions of a source that ask alike decide alike, whatever else of
//! their annotations differs. Pure.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::decisions::{
    carried::Lists,
    key_shape::{KeyShape, annotated_shape},
    mirror_name::mirror_name,
    targets::Targets,
};

/// What one source asks, as its parsers read it: a value that cannot be
/// read is kept as the parser's refusal, which tells one unreadable value
/// from another.
#[derive(Debug, PartialEq)]
pub struct SourceAsks<'a> {
    pub targets: Result<Option<Targets>, String>,
    pub shape: Result<KeyShape, String>,
    pub mirror_name: Result<&'a str, String>,
    pub lists: Result<Lists, String>,
}

impl<'a> SourceAsks<'a> {
    pub fn of(source: &'a ObjectMeta) -> SourceAsks<'a> {
        SourceAsks {
            targets: Targets::of(source),
            shape: annotated_shape(source),
            mirror_name: mirror_name(source),
            lists: Lists::of(source),
        }
    }

    /// What `self` asks otherwise than `before` did, as a person is told
    /// it; None when they ask alike.
    pub fn changed_from(&self, before: &SourceAsks<'_>) -> Option<&'static str> {
        if self.targets != before.targets {
            return Some("the namespaces it asks for changed");
        }
        if self.shape != before.shape {
            return Some("the keys its copies hold changed");
        }
        if self.mirror_name != before.mirror_name {
            return Some("the name of its mirrors changed");
        }
        if self.lists != before.lists {
            return Some("its lists of keys to carry changed");
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{COPY_LABELS_ANNOTATION, MIRROR_KEYS_ANNOTATION, MIRROR_NAME_ANNOTATION};
    use crate::decisions::targets::MIRROR_TO_ANNOTATION;
    use crate::test_fixtures::mk_mirrored_source;

    fn asking(annotations: &[(&str, &str)]) -> ObjectMeta {
        let mut meta = mk_mirrored_source("team-*").metadata;
        let written = meta.annotations.get_or_insert_with(Default::default);
        for (key, value) in annotations {
            written.insert((*key).into(), (*value).into());
        }
        meta
    }

    fn changed(before: &[(&str, &str)], after: &[(&str, &str)]) -> Option<&'static str> {
        let (before, after) = (asking(before), asking(after));
        SourceAsks::of(&after).changed_from(&SourceAsks::of(&before))
    }

    #[test]
    fn each_ask_changed_is_named() {
        let cases = [
            (MIRROR_TO_ANNOTATION, "payments", "namespaces"),
            (MIRROR_KEYS_ANNOTATION, "a", "keys its copies hold"),
            (MIRROR_NAME_ANNOTATION, "palette", "name of its mirrors"),
            (COPY_LABELS_ANNOTATION, "team", "lists of keys to carry"),
        ];
        for (key, value, said) in cases {
            let why = changed(&[], &[(key, value)]);
            assert!(why.is_some_and(|why| why.contains(said)), "{key}: {why:?}");
        }
    }

    #[test]
    fn values_read_alike_ask_alike() {
        assert_eq!(changed(&[], &[]), None);
        // Written otherwise, read the same: no decision changes.
        assert_eq!(
            changed(
                &[(MIRROR_KEYS_ANNOTATION, "a,b")],
                &[(MIRROR_KEYS_ANNOTATION, "a, b")]
            ),
            None
        );
        assert_eq!(changed(&[("note", "1")], &[("note", "2")]), None);
    }

    #[test]
    fn one_unreadable_value_is_told_from_another() {
        let before = [(MIRROR_NAME_ANNOTATION, "Not A Name")];
        let after = [(MIRROR_NAME_ANNOTATION, "Not_A_Name")];
        assert!(changed(&before, &after).is_some());
    }
}
