//! Whose an object at a copy's name is, and a copy's row once compared.

use super::*;

/// Whose an object at a copy's name is, in words.
pub fn whose(meta: &ObjectMeta, rules: &Rules) -> String {
    match labels(meta).get(MANAGED_BY_LABEL) {
        None => format!("an object of someone else (no {MANAGED_BY_LABEL} label)"),
        Some(manager) if manager != MANAGER_NAME => {
            format!("an object of another tool ({MANAGED_BY_LABEL}={manager})")
        }
        Some(_) => match annotation(meta, SOURCE_SELECTOR_ANNOTATION) {
            Some(selector) if selector != rules.install.selector => {
                format!("a copy of another install (source selector {selector})")
            }
            _ => match (RequestKey::of_copy(meta), mirror_of(meta)) {
                (Some(asker), _) => format!("the copy of {}", asker.said()),
                (None, Some((namespace, name))) => format!("the mirror of {namespace}/{name}"),
                (None, None) => match meta.owner_references.iter().flatten().next() {
                    Some(owner) => format!("an object owned by {} {}", owner.kind, owner.name),
                    None => "a copy whose source cannot be proven".into(),
                },
            },
        },
    }
}

/// A copy's row once compared, with a recent contest said.
pub(super) fn copy_row<K: Explained>(
    what: What,
    namespace: &str,
    name: &str,
    source: &ObjectMeta,
    (verdict, detail): (Verdict, String),
    contested: &BTreeSet<String>,
) -> Row {
    let copy_key = format!("{namespace}/{name}");
    let (verdict, detail) = match (contested.contains(&copy_key), verdict.ok()) {
        (true, false) => (
            Verdict::Contested,
            format!(
                "someone else keeps rewriting it ({}): the controller restores it slowly; {detail}",
                warning::COPY_CONTESTED
            ),
        ),
        (true, true) => (
            verdict,
            format!(
                "{detail}; it was contested recently ({})",
                warning::COPY_CONTESTED
            ),
        ),
        (false, _) => (verdict, detail),
    };
    row_at::<K>(
        what,
        namespace,
        name,
        Some(object_key(source)),
        verdict,
        detail,
    )
}
