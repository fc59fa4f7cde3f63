//! What every copy of one reconcile holds of its source, resolved once
//! for all of them: which keys, in which form, and the checksum they
//! record, from the cached source for building each copy, and from the
//! source as read now for writing it.
//!
//! Pure.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::Refusal;
use crate::{
    decisions::cache_form::{key_digests::source_copy_keys, source_checksum},
    decisions::copy_request::ShapeAsked,
    decisions::key_shape::{
        KeyShape, annotated_shape,
        checksum::{CopyForm, CopyKeys},
        copy_plan::ContentPlan,
    },
    kind::{ChecksumKey, MirroredKind, SourceId},
};

/// What every copy of one reconcile holds of its source: its keys, and
/// the checksum they record.
#[derive(Debug, Clone, Copy)]
pub struct Resolved<'r, 'a> {
    pub keys: &'r ShapeKeys<'a>,
    pub checksum: &'r str,
}

/// The checksum every copy of `source` holding `keys` records, under the
/// key of where the content came from.
pub fn copies_checksum<K: MirroredKind>(
    source: &K,
    keys: &ShapeKeys<'_>,
    key: &dyn ChecksumKey<K>,
) -> String {
    match &keys.keys {
        None => source_checksum(source, key),
        Some(keys) => K::checksum(&keys.hash, &SourceId::of(source.meta()), key).into_owned(),
    }
}

/// Which keys the copies of a source hold, in which form, and by what hash
/// (None for a copy of every key, as it is): the same for every copy of
/// one reconcile, so decided once for all of them.
#[derive(Debug, Clone)]
pub struct ShapeKeys<'a> {
    pub shape: Cow<'a, KeyShape>,
    pub form: CopyForm<'a>,
    pub keys: Option<CopyKeys>,
}

/// [`ShapeKeys`] of the copies `shape` asks of `source`.
pub fn shape_keys<'a, K: MirroredKind>(
    source: &K,
    shape: ShapeAsked<'a>,
) -> Result<ShapeKeys<'a>, Refusal> {
    let (shape, form) = shape_asked(source.meta(), shape).map_err(Refusal::InvalidMirrorKeys)?;
    let keys = copy_keys(source, &shape, form)?;
    Ok(ShapeKeys { shape, form, keys })
}

/// Which keys the copies `asked` of `source` hold, and in which form: a
/// spec says, or the source's `workshop.io/mirror-keys` (absent: every
/// key, as it is); an error says why that annotation cannot be read.
pub fn shape_asked<'a>(
    source: &ObjectMeta,
    asked: ShapeAsked<'a>,
) -> Result<(Cow<'a, KeyShape>, CopyForm<'a>), String> {
    match asked {
        ShapeAsked::Given { shape, form } => Ok((Cow::Borrowed(shape), form)),
        ShapeAsked::Annotated => Ok((Cow::Owned(annotated_shape(source)?), CopyForm::default())),
    }
}

/// What a copy of `source` (cached or full) under `shape` and `form`
/// holds of its keys, and the hash its checksum covers; None for a copy
/// of every key, as it is, whose checksum is the source's as ever.
pub fn copy_keys<K: MirroredKind>(
    source: &K,
    shape: &KeyShape,
    form: CopyForm<'_>,
) -> Result<Option<CopyKeys>, Refusal> {
    if shape.is_every_key() && form == CopyForm::default() {
        return Ok(None);
    }
    match source_copy_keys(source, shape, form) {
        Some(shaped) => shaped.map(Some).map_err(Refusal::KeysBreakType),
        // Never for a stored source: a source's cached form keeps what its
        // copies hold whenever its annotation can be read, a ClusterMirror
        // source's its keys' digests always.
        None => Err(Refusal::Incomplete),
    }
}

/// The checksum every copy of a source read now records, as `plan` (made
/// from it once for every copy of the reconcile) holds its content: under
/// the identity the copies name (`named`: for a ClusterMirror's copies,
/// bound to the ClusterMirror too), and the key of where the content came
/// from.
pub fn planned_checksum<K: MirroredKind>(
    plan: &ContentPlan,
    named: &ObjectMeta,
    key: &dyn ChecksumKey<K>,
) -> String {
    K::checksum(&plan.hash, &SourceId::of(named), key).into_owned()
}
