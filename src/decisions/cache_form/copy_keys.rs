//! What a label-path source's cached form keeps of the keys its copies
//! hold, when its `workshop.io/mirror-keys` can be read: not its keys, but
//! what a resync compares, computed once as it is cached from the full
//! object and the shape its own annotation gives. That is the hash its
//! copies' checksum covers ([`CopyKeys`]), and the exact keys named that
//! it lacks; or, when the copies would break its Secret type, that type
//! and the keys it requires. So its size does not follow its number of
//! keys: the names it holds are the annotation's, which is kept too.
//!
//! After the content hash in the aside, each part after a tab (neither a
//! hash, a key nor a Secret type the API server requires keys of holds
//! one): `<hash>\t<copy hash>\t<missing key>...`, or
//! `<hash>\t!<type>\t<required key>...`. A source whose annotation
//! cannot be read, or that has none, keeps its hash alone.
//!
//! The copy hash is computed from the same per-key digests as before
//! (`key_shape::checksum`), so the checksum of every copy is unchanged.
//! It is a hash of the digests the cache used to keep, so it tells no more
//! of the values than they did.

use crate::{
    decisions::key_shape::{
        self, KeyShape,
        checksum::{CopyForm, CopyKeys, shaped_copy_hash_of},
        secret_type::KeysBreakType,
    },
    kind::MirroredKind,
};

const PART: char = '\t';
const BREAKS: char = '!';

/// The aside of a label-path source (a full object): its content hash,
/// and what its copies hold when its annotation can be read.
pub(super) fn aside_of<K: MirroredKind>(source: &K) -> String {
    let mut aside = source.content_hash();
    let Some(shape) = annotated(source) else {
        return aside;
    };
    let (head, names) = match shaped_copy_hash_of(source, &shape, CopyForm::default()) {
        Ok(shaped) => {
            let keys = CopyKeys::from(shaped);
            (keys.hash, keys.missing)
        }
        Err(breaks) => (format!("{BREAKS}{}", breaks.type_), breaks.missing),
    };
    for part in std::iter::once(head).chain(names) {
        aside.push(PART);
        aside.push_str(&part);
    }
    aside
}

/// The shape a source's own annotation gives; None when it has none or it
/// cannot be read.
fn annotated<K: MirroredKind>(source: &K) -> Option<KeyShape> {
    key_shape::annotated(source.meta())?.ok()
}

/// What the copies of a cached source hold under `shape` and `form`, as its
/// aside keeps it; None when it keeps nothing of it, or kept it for
/// another shape than that (only its own, as its label-path copies ask).
pub(super) fn kept<K: MirroredKind>(
    source: &K,
    shape: &KeyShape,
    form: CopyForm<'_>,
) -> Option<Result<CopyKeys, KeysBreakType>> {
    let aside = source.meta().self_link.as_deref()?;
    let (_, summary) = aside.split_once(PART)?;
    if form != CopyForm::default() || annotated(source).as_ref() != Some(shape) {
        return None;
    }
    let mut parts = summary.split(PART);
    let head = parts.next()?;
    let names = parts.map(str::to_owned).collect();
    Some(match head.strip_prefix(BREAKS) {
        Some(type_) => Err(KeysBreakType {
            type_: type_.to_owned(),
            missing: names,
        }),
        None => Ok(CopyKeys {
            hash: head.to_owned(),
            missing: names,
        }),
    })
}

/// Where the content hash ends in an aside of this form.
pub(super) fn ends_hash(c: char) -> bool {
    c == PART
}

#[cfg(test)]
mod tests;
