//! What every copy of one reconcile takes from its source's content,
//! decided once from the content read now, before any copy is built: the
//! keys it holds, its checksum's hash, and its size, so that a copy the API
//! server would refuse for its size is never built.
//!
//! Pure.

use std::collections::BTreeMap;

use super::{
    CopiedKey, KeyShape, SourceKey,
    checksum::{CopyForm, key_digest, keys_hash},
    secret_type::{KeysBreakType, copy_type},
};
use crate::contract::CHECKSUM_ANNOTATION;
use crate::kind::{KeyValue, MirroredKind, entries_cost};

/// The most bytes the API server accepts in a ConfigMap's `data` and
/// `binaryData` together, or in a Secret's `data`: `MaxSecretSize`, which
/// `ValidateConfigMap` and `ValidateSecret` (Kubernetes'
/// `pkg/apis/core/validation`) compare with the sum of the values'
/// lengths, decoded; keys are not counted.
pub const MAX_CONTENT_BYTES: usize = 1024 * 1024;
/// What every copy of one reconcile takes from its source's content,
/// decided once before any is built: which of the source's keys it holds,
/// under which names, its type, the hash its checksum covers, and its size
/// as the API server counts it. So a shape that names one large key many
/// times is refused by its size, not by the API server once built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentPlan {
    /// The keys held, each by its place among the source's keys; None for
    /// the source's content as it is.
    copied: Option<Vec<CopiedKey<usize>>>,
    /// The type asked for a Secret copy in place of its source's.
    copy_type: Option<String>,
    /// The hash the copy's checksum is computed from.
    pub hash: String,
    /// The bytes of the copy's values: a key copied under several names
    /// counts once per name.
    pub size: usize,
    /// What the copy costs in memory while it is written, about: each key
    /// it holds at `kind::decoded_entry_cost`, so that a copy of many empty
    /// keys counts for them.
    pub cost: u64,
}

/// The plan of a copy of `source` (a full object) under `shape` and `form`;
/// an error when it would leave out a key its Secret type requires. Its
/// hash is `shaped_copy_hash_of`'s, from the digests of the keys copied
/// alone.
pub fn content_plan<K: MirroredKind>(
    source: &K,
    shape: &KeyShape,
    form: CopyForm<'_>,
) -> Result<ContentPlan, KeysBreakType> {
    let keys = source.content_keys();
    if shape.is_every_key() && form == CopyForm::default() {
        return Ok(ContentPlan {
            copied: None,
            copy_type: None,
            hash: source.content_hash(),
            size: keys.iter().map(|key| key.value.len()).sum(),
            cost: entries_cost(keys.iter().map(|key| (key.name, key.value.len()))),
        });
    }
    let shaped = shape.shape(keys.iter().enumerate().map(|(at, key)| SourceKey {
        field: key.field,
        key: key.name,
        value: at,
    }));
    let source_type = source.content_type();
    let type_ = match (form.as_configmap, source_type) {
        (false, Some(source_type)) => Some(copy_type(source_type, form.copy_type, &shaped.copied)?),
        _ => None,
    };
    let as_is = shaped.holds_every_key_as_is();
    let hash = match !form.as_configmap && type_ == source_type && as_is {
        true => source.content_hash(),
        false => {
            let digests: Vec<String> = (shaped.copied.iter())
                .map(|key| key_digest(&keys[key.value]))
                .collect();
            let names = shaped.copied.iter().map(|key| key.name.as_str());
            keys_hash(type_, names.zip(digests.iter().map(String::as_str)))
        }
    };
    let size = (shaped.copied.iter())
        .map(|key| keys[key.value].value.len())
        .sum();
    let cost = entries_cost(
        (shaped.copied.iter()).map(|key| (key.name.as_str(), keys[key.value].value.len())),
    );
    let same_content = as_is && (form.copy_type.is_none() || form.copy_type == source_type);
    Ok(ContentPlan {
        copied: (!same_content).then_some(shaped.copied),
        copy_type: form.copy_type.map(str::to_owned),
        hash,
        size,
        cost,
    })
}

impl ContentPlan {
    /// The content of the copy, from the `source` it was planned from.
    pub fn content<K: MirroredKind>(&self, source: &K) -> K {
        let Some(copied) = &self.copied else {
            return K::content_of(source);
        };
        let keys = source.content_keys();
        let copied = copied.iter().filter_map(|key| {
            let value = keys.get(key.value)?.value;
            Some(KeyValue {
                field: key.field,
                name: &key.name,
                value,
            })
        });
        K::content_from_keys(source, copied, self.copy_type.as_deref())
    }

    /// `copy`, which `desired_copy` built from a cached source (which
    /// keeps its content's hash, not its content), holding what this plan
    /// takes of `source` as read now, and recording `checksum`, that
    /// content's, as `desired_copy::planned_checksum` says once for every
    /// copy. A newer source only makes the copy newer.
    pub fn fill<K: MirroredKind>(&self, mut copy: K, source: &K, checksum: &str) -> K {
        let mut meta = std::mem::take(copy.meta_mut());
        let annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
        annotations.insert(CHECKSUM_ANNOTATION.into(), checksum.to_owned());
        let mut copy = self.content(source);
        *copy.meta_mut() = meta;
        copy
    }

    /// Why the API server would refuse the copy, a `kind` (as Kubernetes
    /// names it): over its size; None when it would not.
    pub fn too_large(&self, kind: &str) -> Option<CopyTooLarge> {
        (self.size > MAX_CONTENT_BYTES).then(|| CopyTooLarge {
            size: self.size,
            kind: kind.to_owned(),
        })
    }
}

/// A copy the API server would refuse for its size: it is never built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyTooLarge {
    pub size: usize,
    /// The copy's kind, as Kubernetes names it.
    pub kind: String,
}

impl std::fmt::Display for CopyTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the copy would hold {} bytes, over the API server's limit of {} bytes for a {}'s \
             data; it is not written until the source changes",
            grouped(self.size),
            grouped(MAX_CONTENT_BYTES),
            self.kind
        )
    }
}

/// `n` with its thousands grouped: 1,048,576.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (at, digit) in digits.chars().enumerate() {
        if at > 0 && (digits.len() - at).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests;
