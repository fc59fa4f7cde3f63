//! Which keys a copy of chosen keys holds, and why the source's others are
//! not there, in words: for a source's row (its `workshop.io/mirror-keys`)
//! and a ClusterMirror's copies (`spec.target.keys`). Names only: never a
//! value.

use super::warned;
use crate::{
    contract::condition::Condition,
    decisions::key_shape::{
        KeyShape, LeftOut,
        checksum::CopyForm,
        content::source_keys,
        copy_plan::{CopyTooLarge, content_plan},
    },
    kind::{Field, MirroredKind},
};

/// Why the API server would refuse every copy of `source` (a full object)
/// under `shape` and `form` for its size, as the controller tells it; None
/// when it would not.
pub(super) fn too_large<K: MirroredKind>(
    source: &K,
    shape: &KeyShape,
    form: CopyForm<'_>,
) -> Option<CopyTooLarge> {
    content_plan(source, shape, form)
        .ok()?
        .too_large(&K::kind(&()))
}

/// What a copy of `source` under `shape` holds of its keys; and the exact
/// keys it names that the source lacks. None for a copy of every key.
pub(super) fn keys_held<K: MirroredKind>(
    source: &K,
    shape: &KeyShape,
    form: CopyForm<'_>,
) -> Option<(String, Vec<String>)> {
    if shape.is_every_key() && form == CopyForm::default() {
        return None;
    }
    let shaped = shape.shape_naming_left_out(source_keys(source));
    let held: Vec<String> = (shaped.copied.iter())
        .map(|key| {
            let from = key.renamed_from.as_deref();
            let field = (key.field == Field::BinaryData).then_some(Field::BinaryData.as_str());
            match (from, field) {
                (Some(from), Some(field)) => format!("{} (from {from}, {field})", key.name),
                (Some(from), None) => format!("{} (from {from})", key.name),
                (None, Some(field)) => format!("{} ({field})", key.name),
                (None, None) => key.name.clone(),
            }
        })
        .collect();
    let left_out: Vec<String> = (shaped.left_out.iter())
        .map(|(key, why)| match why {
            LeftOut::NotNamed => format!("{key} (not named)"),
            LeftOut::Excluded(glob) => format!("{key} (excluded by !{glob})"),
            LeftOut::NameTaken { by } => format!("{key} (its name is {by}'s copy's)"),
        })
        .collect();
    let mut said = match held.is_empty() {
        true => "its copies hold no key".to_owned(),
        false => format!("its copies hold {}", held.join(", ")),
    };
    if !left_out.is_empty() {
        said.push_str(&format!("; left out: {}", left_out.join(", ")));
    }
    if !shaped.missing.is_empty() {
        said.push_str(&format!(
            "; not in the source: {} ({})",
            shaped.missing.join(", "),
            warned(Condition::KeyMissing)
        ));
    }
    // As the copy is written: of the type it asks for, else its source's.
    if let Some(type_) = form.copy_type.or(source.content_type()) {
        said.push_str(&format!("; of type {type_}"));
    }
    Some((said, shaped.missing))
}
