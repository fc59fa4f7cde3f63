//! Why a namespace a source asks for holds no mirror of it.

use super::*;

/// Why a namespace that a source asks for receives no mirror, in the
/// words of a row; None when it should hold one.
pub(super) fn refusal<K: Explained>(
    targets: &Targets,
    source: &ObjectMeta,
    namespace: &NamespaceFacts,
    rules: &Rules,
) -> Option<(Verdict, String)> {
    let consent = K::consent(rules);
    let source_namespace = source.namespace.as_deref().unwrap_or_default();
    if wants_mirror(targets, source_namespace, namespace, consent) {
        return None;
    }
    Some(match consent.verdict(source_namespace, namespace) {
        Err(NamespaceRefusal::SourceNamespace) => (
            Verdict::SourceNamespace,
            "the source's own namespace: it holds the companion".into(),
        ),
        Err(NamespaceRefusal::Protected) => (
            Verdict::Protected,
            format!(
                "{}; never mirrored into ({} on the source when its labels consent)",
                NamespaceRefusal::Protected,
                warned(Condition::MirrorNamespaceProtected)
            ),
        ),
        Err(NamespaceRefusal::NotConsenting)
            if K::other_consent(rules).selector.matches(&namespace.labels) =>
        {
            (
                Verdict::KindNotAccepted,
                format!(
                    "it accepts {} mirrors only: {} mirrors need labels matching {}",
                    K::OTHER,
                    K::NAME,
                    consent.selector
                ),
            )
        }
        Err(NamespaceRefusal::NotConsenting) => (
            Verdict::NotConsenting,
            format!(
                "it does not consent: {} mirrors need labels matching {}",
                K::NAME,
                consent.selector
            ),
        ),
        Err(NamespaceRefusal::SourceNamespaceNotAccepted) => (
            Verdict::SourceNamespaceNotAccepted,
            format!(
                "its {ACCEPT_MIRRORS_FROM_ANNOTATION} ({}) does not name {source_namespace}",
                namespace.accept_from.as_deref().unwrap_or_default()
            ),
        ),
        Err(NamespaceRefusal::MalformedAcceptFrom(why)) => (
            Verdict::InvalidAcceptMirrorsFrom,
            format!(
                "it accepts nothing until fixed: {why} (Warning {} on the Namespace)",
                warning::INVALID_ACCEPT_MIRRORS_FROM
            ),
        ),
        Err(NamespaceRefusal::GrantsNotKnown) => (
            Verdict::GrantsNotKnown,
            format!(
                "its labels do not match {}, and its MirrorGrants cannot be read: \
                 nothing is written there or removed until they can",
                consent.selector
            ),
        ),
        Ok(()) => (
            Verdict::NotConsenting,
            "it does not take this source's mirror".into(),
        ),
    })
}

/// Why the install manages a source, and what of it its copies never carry
/// that its lists ask for (as the controller's Warning says it).
pub(super) fn managed_detail(source: &ObjectMeta, rules: &Rules) -> String {
    let matches = format!("it matches the source selector {}", rules.install.selector);
    let lists = Lists::of(source).unwrap_or_default();
    let carried = crate::decisions::carried::Carried::Listed {
        source,
        lists: &lists,
    };
    match carried.refused(&rules.install.never_carried) {
        Some(keys) => format!(
            "{matches}; {keys}: never carried ({})",
            warned(Condition::CopyKeyRefused)
        ),
        None => matches,
    }
}
