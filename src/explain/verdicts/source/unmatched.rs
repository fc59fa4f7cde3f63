//! A source's rows for what it asks for that no namespace read answers.

use super::*;

/// Rows for what the source asks for that no namespace read answers: a
/// name or glob matching no namespace, a selector matching none, and the
/// namespaces that could not be read.
pub(super) fn unmatched_rows<K: Explained>(
    meta: &ObjectMeta,
    targets: &Targets,
    scene: &SourceScene<K>,
    asked: &BTreeSet<String>,
    name: &str,
) -> Vec<Row> {
    let source_key = object_key(meta);
    let at = |namespace: &str, verdict, detail| {
        row_at::<K>(
            What::Mirror,
            namespace,
            name,
            Some(source_key.clone()),
            verdict,
            detail,
        )
    };
    let mut rows = Vec::new();
    for (namespace, why) in &scene.namespaces.unreadable {
        // Its own namespace needs no reading to be told apart.
        rows.push(
            match Some(namespace.as_str()) == meta.namespace.as_deref() {
                true => at(
                    namespace,
                    Verdict::SourceNamespace,
                    "the source's own namespace: it holds the companion".into(),
                ),
                false => at(
                    namespace,
                    Verdict::CannotRead,
                    format!("cannot read the namespace: {why}"),
                ),
            },
        );
    }
    if let Some(why) = &scene.namespaces.list_error {
        let asks_more = targets.exact_names().is_none();
        if asks_more {
            rows.push(at(
                "*",
                Verdict::CannotRead,
                format!("cannot list the namespaces, so those its globs or selector match are unknown: {why}"),
            ));
        }
    }
    let patterns = annotation(meta, MIRROR_TO_ANNOTATION)
        .and_then(|text| patterns::parse_patterns(MIRROR_TO_ANNOTATION, text).ok())
        .unwrap_or_default();
    for pattern in patterns {
        let matched = asked.iter().any(|ns| pattern.matches(ns));
        let unknown = scene.namespaces.unreadable.contains_key(pattern.as_str())
            || (pattern.has_star() && scene.namespaces.list_error.is_some());
        if !matched && !unknown {
            rows.push(at(
                pattern.as_str(),
                Verdict::NoSuchNamespace,
                format!("{MIRROR_TO_ANNOTATION} names {pattern}, which matches no namespace"),
            ));
        }
    }
    if let Some(selector) = annotation(meta, MIRROR_TO_SELECTOR_ANNOTATION) {
        let matched = scene
            .namespaces
            .known
            .iter()
            .any(|ns| Selector::parse(selector).is_ok_and(|s| s.matches(&ns.labels)));
        if !matched && scene.namespaces.list_error.is_none() {
            rows.push(at(
                "",
                Verdict::NoSuchNamespace,
                format!("{MIRROR_TO_SELECTOR_ANNOTATION} {selector} matches no namespace"),
            ));
        }
    }
    rows
}
