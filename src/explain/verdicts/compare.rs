//! A copy compared with what it should be, in the words of the controller's
//! plan.

use super::*;
use crate::kind::ChecksumKey;
use crate::{
    contract::KEYED_KEYS_CHECKSUM_PREFIX, decisions::key_shape::checksum::copy_content_hash,
};

/// How the copy `actual` compares with the `desired` copy of `source`:
/// what the controller's plan would write, in words.
pub(super) fn compare<K: Explained>(
    desired: K,
    actual: &K,
    source: &ObjectMeta,
    rules: &Rules,
    key: &dyn ChecksumKey<K>,
) -> (Verdict, String) {
    // A ConfigMap that publishes a Secret's keys is keyed as the Secret's
    // copies are.
    let keyed = K::KEYED.or_else(|| {
        annotation(desired.meta(), CHECKSUM_ANNOTATION)
            .is_some_and(|checksum| checksum.starts_with(KEYED_KEYS_CHECKSUM_PREFIX))
            .then_some(KEYED_KEYS_CHECKSUM_PREFIX)
    });
    let actual = match keyed {
        Some(prefix) => with_checksum_assumed(actual, source, prefix, key),
        None => actual.clone(),
    };
    let copy = CachedCopy::of(&actual);
    let content_same = Some(
        copy.checksum_as_copy_of(&SourceId::of(source), key)
            .as_ref(),
    ) == annotation(desired.meta(), CHECKSUM_ANNOTATION);
    match plan::plan(desired, Some(&copy), source, &rules.install.source_label_keys, key) {
        Err(NameTaken) => (
            Verdict::NameTaken,
            format!("the name is taken by {}; it is left untouched", whose(actual.meta(), rules)),
        ),
        Ok(Write::Nothing) if keyed.is_some() => (
            Verdict::InSyncUnverified,
            "in sync: unknown (keyed): its content and metadata are the source's; its checksum is keyed with the install's digest key, which explain does not read".into(),
        ),
        Ok(Write::Nothing) => (
            Verdict::InSync,
            "its content and checksum are the source's".into(),
        ),
        Ok(Write::Replace {
            why: Difference::TakenOver,
            ..
        }) => (
            Verdict::TakenOver,
            format!(
                "it is {}, which the ClusterMirror outranks: the controller takes it over",
                source_s_own_mirror(actual.meta())
            ),
        ),
        Ok(Write::Replace { why, .. }) => match (keyed.is_some(), content_same, why) {
            (true, false, _) => (
                Verdict::Differs,
                "its content is not the source's".into(),
            ),
            (_, _, Difference::SourceChanged) => (
                Verdict::SourceChanged,
                "it holds an earlier content of the source: the controller updates it".into(),
            ),
            _ => (
                Verdict::Drifted,
                "it was edited (its content, or the labels, annotations or owner the controller sets): the controller restores it".into(),
            ),
        },
        Ok(Write::DeleteToRecreate { copy, .. })
            if outranked_mirror(actual.meta(), copy.meta()) =>
        {
            (
                Verdict::TakenOver,
                format!(
                    "it is {}, which the ClusterMirror outranks: the controller deletes it (it is immutable) and writes its own copy",
                    source_s_own_mirror(actual.meta())
                ),
            )
        }
        Ok(Write::DeleteToRecreate { .. }) => (
            Verdict::MustRecreate,
            "its content must change and the API server refuses that in place (immutable, or another type): the controller deletes and recreates it".into(),
        ),
        Ok(Write::Create(_)) => (Verdict::Missing, "it does not exist".into()),
    }
}

/// "the mirror of <source>'s own request", as a taken-over mirror names it.
fn source_s_own_mirror(mirror: &ObjectMeta) -> String {
    match (RequestKey::of_copy(mirror), mirror_of(mirror)) {
        (Some(asker), _) => format!("the copy of {}", asker.said()),
        (None, Some((namespace, name))) => {
            format!("the mirror of {namespace}/{name}'s own request")
        }
        (None, None) => "a source's own mirror".into(),
    }
}

/// `copy` with its checksum annotation, when it has the keyed form, taken
/// for right: recomputed under explain's own key.
pub(super) fn with_checksum_assumed<K: MirroredKind>(
    copy: &K,
    source: &ObjectMeta,
    prefix: &str,
    key: &dyn ChecksumKey<K>,
) -> K {
    let mut copy = copy.clone();
    let hash = copy_content_hash(&copy);
    let digest = K::checksum(&hash, &SourceId::of(source), key).into_owned();
    if let Some(checksum) = copy
        .meta_mut()
        .annotations
        .as_mut()
        .and_then(|annotations| annotations.get_mut(CHECKSUM_ANNOTATION))
        && (checksum.starts_with(prefix) || checksum.starts_with(KEYED_KEYS_CHECKSUM_PREFIX))
    {
        *checksum = digest;
    }
    copy
}
