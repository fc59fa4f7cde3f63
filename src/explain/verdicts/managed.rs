//! Whether the install manages a source, as the controller decides it:
//! selected, with lists it can read, a source at all, and its companion
//! built (or why it can have none).

use super::*;

/// Whether the install manages a source, as the controller decides it.
pub(super) enum Managed<K> {
    /// Not a source of this install: nothing of it is written.
    No(Verdict, String),
    /// A source: its finished companion, or why it can have none (its
    /// mirrors are written anyway).
    Yes { companion: Result<K, String> },
}

pub(super) fn managed<K: Explained>(
    source: &K,
    rules: &Rules,
    key: &dyn ChecksumKey<K>,
) -> Managed<K> {
    let meta = source.meta();
    if !rules.install.source_selector.matches(labels(meta)) {
        return Managed::No(
            Verdict::NotSelected,
            format!(
                "its labels do not match the source selector {}: this install ignores it",
                rules.install.selector
            ),
        );
    }
    if let Err(why) = Lists::of(meta) {
        return invalid_copy_list(why);
    }
    if let Some(reason) = never_a_source(source, &K::source_rules(rules)) {
        return Managed::refused(Condition::NeverASource, format!("{reason}: never copied"));
    }
    let namespace = meta.namespace.as_deref().unwrap_or_default();
    match desired(
        source,
        &CopyRequest::COMPANION,
        namespace,
        &rules.install,
        key,
    ) {
        Ok(companion) => within_size(source, companion),
        Err(Refusal::NameTooLong { name, len }) => Managed::Yes {
            companion: Err(format!(
                "its companion's name {name} would be {len} characters long, over the limit of 253: it has no companion ({}); its mirrors are written",
                warned(Condition::NameTooLong)
            )),
        },
        Err(Refusal::SourceIsCompanion) => Managed::No(
            Verdict::IsACopy,
            format!(
                "it carries {MANAGED_BY_LABEL}={MANAGER_NAME}, the label of a copy: a copy is never a source"
            ),
        ),
        Err(Refusal::BeingDeleted) => Managed::No(
            Verdict::BeingDeleted,
            "it is being deleted: no copy is written for it".into(),
        ),
        Err(Refusal::Incomplete) => Managed::No(Verdict::NotFound, "it is not stored yet".into()),
        Err(Refusal::InvalidCopyList(why)) => invalid_copy_list(why),
        Err(Refusal::InvalidMirrorKeys(why)) => Managed::refused(
            Condition::InvalidMirrorKeys,
            format!("{why}: its copies are left as they are until it is fixed"),
        ),
        Err(Refusal::KeysBreakType(breaks)) => {
            Managed::refused(Condition::KeysBreakType, breaks.label_path_message())
        }
        // Never for a companion, which keeps `<name><suffix>`.
        Err(Refusal::InvalidMirrorName(why)) => {
            let (verdict, why) = invalid_mirror_name(&why);
            Managed::No(verdict, why)
        }
    }
}

/// A source whose companion can be built, unless its copies would hold more
/// than the API server accepts: then none is written.
fn within_size<K: Explained>(source: &K, companion: K) -> Managed<K> {
    let shape = annotated_shape(source.meta()).unwrap_or_default();
    match keys::too_large(source, &shape, CopyForm::default()) {
        Some(too_large) => Managed::refused(Condition::CopyTooLarge, too_large),
        None => Managed::Yes {
            companion: Ok(companion),
        },
    }
}

/// A source whose list of keys to carry is malformed.
fn invalid_copy_list<K>(why: String) -> Managed<K> {
    Managed::refused(
        Condition::InvalidCopyList,
        format!("{why}: nothing of it is written until it is fixed"),
    )
}

impl<K> Managed<K> {
    /// Not managed, for `condition`, as the table tells of it.
    fn refused(condition: Condition, why: impl std::fmt::Display) -> Managed<K> {
        let (verdict, why) = Verdict::told(condition, why);
        Managed::No(verdict, why)
    }
}
