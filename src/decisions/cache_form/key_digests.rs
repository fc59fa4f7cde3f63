//! What a cached source keeps of its keys when its copies may hold chosen
//! keys (see `decisions::key_shape::checksum`): each key's name, field and
//! digest, after its content hash in the aside, one line each:
//! `<hash>\n<tag><name> <digest>\n...`, the tag `d` or `b` for the field.
//! Neither a hash, a digest nor a key (`[-._a-zA-Z0-9]`) holds a space or
//! a line break. A source whose digests are kept has a line break after its
//! hash even when it has no key, so that "no keys" and "not kept" differ.
//!
//! Only the caches of ClusterMirror sources keep them (they cannot know
//! which ClusterMirror shapes an object, and hold only the few namespaces
//! an administrator allows); a label-path source keeps what its own
//! annotation's copies hold instead, in a size that does not follow its
//! number of keys ([`super::copy_keys`]).

use super::copy_keys;
use crate::{
    decisions::key_shape::{
        KeyShape,
        checksum::{CopyForm, CopyKeys, KeyDigest, key_digests, shaped_copy_hash},
        secret_type::KeysBreakType,
    },
    kind::{Field, MirroredKind},
};

/// `hash` and the digests of `content`'s keys, in the aside's form.
pub(super) fn with_digests<K: MirroredKind>(hash: String, content: &K) -> String {
    aside_of(hash, &key_digests(content))
}

/// `hash` and `digests`, in the aside's form.
fn aside_of(hash: String, digests: &[KeyDigest]) -> String {
    let mut aside = hash;
    aside.push('\n');
    for (at, key) in digests.iter().enumerate() {
        if at > 0 {
            aside.push('\n');
        }
        aside.push(key.field.tag() as char);
        aside.push_str(&key.name);
        aside.push(' ');
        aside.push_str(&key.digest);
    }
    aside
}

/// `source`'s aside (its cached form) keeping the digests of the keys
/// `keep` names alone; None for a source cached without digests, or not
/// cached (a full object keeps no aside).
pub fn aside_keeping<K: MirroredKind>(source: &K, keep: impl Fn(&str) -> bool) -> Option<String> {
    let aside = source.meta().self_link.as_deref()?;
    let digests = digests_in(aside)?;
    let kept: Vec<KeyDigest> = digests.into_iter().filter(|d| keep(&d.name)).collect();
    Some(aside_of(hash_part(aside).to_owned(), &kept))
}

/// The content hash in an aside, without the digests, or what a
/// label-path source's copies hold, after it.
pub(super) fn hash_part(aside: &str) -> &str {
    let ends = |c: char| c == '\n' || copy_keys::ends_hash(c);
    aside.split_once(ends).map_or(aside, |(hash, _)| hash)
}

/// The digests an aside keeps; None when it keeps none.
fn digests_in(aside: &str) -> Option<Vec<KeyDigest>> {
    let (_, lines) = aside.split_once('\n')?;
    let lines = lines.split('\n').filter(|line| !line.is_empty());
    let digest = |line: &str| {
        let field = match line.as_bytes().first()? {
            b'd' => Field::Data,
            b'b' => Field::BinaryData,
            _ => return None,
        };
        let (name, digest) = line.get(1..)?.split_once(' ')?;
        Some(KeyDigest {
            field,
            name: name.to_owned(),
            digest: digest.to_owned(),
        })
    };
    lines.map(digest).collect()
}

/// The content hash and key digests of `source`: as its cached form keeps
/// them, or computed from a full object. None for a cached source that
/// keeps no digests (a label-path source without `workshop.io/mirror-keys`,
/// whose copies hold every key: see `source_checksum`).
pub fn source_digests<K: MirroredKind>(source: &K) -> Option<(String, Vec<KeyDigest>)> {
    match &source.meta().self_link {
        Some(kept) => Some((hash_part(kept).to_owned(), digests_in(kept)?)),
        None => Some((source.content_hash(), key_digests(source))),
    }
}

/// What a copy of `source` (cached or full) under `shape` and `form`
/// holds, by the hash its checksum is computed from
/// ([`shaped_copy_hash`]; the checksum is [`MirroredKind::checksum`] of it
/// under the source's kind). None when `source` is cached without what
/// that needs. The same from the cached form as from the full object.
pub fn source_copy_keys<K: MirroredKind>(
    source: &K,
    shape: &KeyShape,
    form: CopyForm<'_>,
) -> Option<Result<CopyKeys, KeysBreakType>> {
    if let Some(kept) = copy_keys::kept(source, shape, form) {
        return Some(kept);
    }
    let (hash, digests) = source_digests(source)?;
    let shaped = shaped_copy_hash(&hash, source.content_type(), &digests, shape, form);
    Some(shaped.map(CopyKeys::from))
}
