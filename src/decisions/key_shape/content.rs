//! A copy's content from its source's full content and a key shape: the
//! keys chosen, renamed, each in its field; a Secret's keys published as a
//! ConfigMap. Only the values copied are cloned.
//!
//! Pure.

#[cfg(test)]
use super::KeyShape;
use super::{CopiedKey, Shaped, SourceKey};
#[cfg(test)]
use crate::kind::KeyValue;
use crate::kind::MirroredKind;

/// The keys of a content as a shape reads them, values borrowed.
pub fn source_keys<K: MirroredKind>(content: &K) -> impl Iterator<Item = SourceKey<'_, &[u8]>> {
    content.content_keys().into_iter().map(|key| SourceKey {
        field: key.field,
        key: key.name,
        value: key.value,
    })
}

/// A copied key, borrowed as a content holds it.
#[cfg(test)]
fn as_key_value<'a>(key: &'a CopiedKey<&'a [u8]>) -> KeyValue<'a> {
    KeyValue {
        field: key.field,
        name: &key.name,
        value: key.value,
    }
}

/// What a shape made of a content, once the values are in the copy.
pub fn without_values<V>(shaped: Shaped<V>) -> Shaped<()> {
    Shaped {
        copied: (shaped.copied.into_iter())
            .map(|key| CopiedKey {
                field: key.field,
                name: key.name,
                renamed_from: key.renamed_from,
                value: (),
            })
            .collect(),
        missing: shaped.missing,
        left_out: shaped.left_out,
        leaves_any_out: shaped.leaves_any_out,
    }
}

/// The content of a copy of `source` (a full object) under `shape`, of the
/// source's kind, of type `copy_type` when given (a Secret's `Opaque`),
/// and what the shape made of its keys. A copy of every key as it is, of
/// the source's type, is exactly today's copy ([`MirroredKind::content_of`]).
///
/// Copies take their content from their write's plan
/// (`copy_plan::ContentPlan`), which keeps the keys by place rather than
/// by value; this shapes the content itself, so that the tests hold the
/// plan to what the shape says.
#[cfg(test)]
pub fn shaped_content<K: MirroredKind>(
    source: &K,
    shape: &KeyShape,
    copy_type: Option<&str>,
) -> (K, Shaped<()>) {
    let shaped = shape.shape(source_keys(source));
    let same_type = copy_type.is_none() || copy_type == source.content_type();
    let content = match shaped.holds_every_key_as_is() && same_type {
        true => K::content_of(source),
        false => K::content_from_keys(source, shaped.copied.iter().map(as_key_value), copy_type),
    };
    (content, without_values(shaped))
}
