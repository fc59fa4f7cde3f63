//! The rows of a ClusterMirror's namespaces: one per namespace it selects
//! or asks for, and one per copy it holds elsewhere.

use super::*;
use crate::decisions::cluster_mirror::{NamedRefusal, Origin, Selection};
use crate::decisions::consent::{Admission, NamespaceRefusal};
use crate::decisions::copy_verdict::{PruneRules, Seen as SeenBy};
use crate::kind::ChecksumKey;

/// What was read of the namespaces a ClusterMirror may copy into.
pub(super) struct Seen<'a, K> {
    pub(super) namespaces: &'a [NamespaceFacts],
    pub(super) at_name: &'a [K],
    pub(super) copies: &'a [K],
    pub(super) every_namespace: bool,
    /// For a Mirror: the ClusterMirrors served that ask for copies of its
    /// kind and name, which outrank it.
    pub(super) outranking: &'a [Request],
}

mod mirror;

/// One row per namespace the request selects or asks for, and per copy it
/// holds elsewhere, by namespace name; counted as the controller counts.
/// `bound` is the source as copied, when nothing blocks it.
pub(super) fn namespace_rows<K: Explained>(
    request: &Request,
    bound: Option<&K>,
    blocked: Option<&Blocked>,
    seen: Seen<'_, K>,
    rules: &Rules,
    key: &dyn ChecksumKey<K>,
) -> (Tally, Vec<Row>) {
    let mut tally = Tally::default();
    let mut rows = Vec::new();
    let mut sorted: Vec<&NamespaceFacts> = seen.namespaces.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let consent = request.consent(&rules.cluster_consent, K::consent(rules));
    let counted = blocked.is_none_or(Blocked::counts_selected);
    for namespace in sorted {
        let here = |object: &&K| object.meta().namespace.as_deref() == Some(&namespace.name);
        let at = seen
            .at_name
            .iter()
            .filter(here)
            .find(|object| object.meta().name.as_deref() == Some(&request.target_name));
        let selection = request.selection(namespace, consent);
        // Where a Mirror's consent is not known, its copy is kept.
        let selected = selection.keeps();
        match selection {
            Selection::Selected(admission) => {
                tally.selected += usize::from(counted);
                let claimant = mirror::claimant(request, seen.outranking, namespace, at, rules);
                let row = match (claimant, bound) {
                    (Some(claimant), _) => {
                        let told = blocked.is_none();
                        mirror::claimed::<K>(request, &namespace.name, claimant, told, &mut tally)
                    }
                    (None, Some(bound)) => {
                        selected_row(request, bound, namespace, at, rules, key, &mut tally)
                    }
                    (None, None) => not_copied(request, blocked, namespace, at, rules),
                };
                rows.push(mirror::consented(row, admission.as_ref()));
            }
            Selection::Refused(why) => {
                rows.push(mirror::refused::<K>(
                    request,
                    &namespace.name,
                    &why,
                    counted,
                    blocked,
                    &mut tally,
                ));
            }
            Selection::Undecided => rows.push(mirror::undecided::<K>(request, &namespace.name)),
            Selection::NotSelected if request.asks_for(namespace) => {
                rows.push(never_written::<K>(request, namespace, consent));
            }
            Selection::NotSelected => {}
        }
        for copy in seen.copies.iter().filter(here) {
            let at_target = copy.meta().name.as_deref() == Some(&request.target_name);
            if !(selected && at_target) {
                rows.push(held(request, copy, namespace, rules));
            }
        }
    }
    rows.extend(mirror::absent::<K>(
        request, &seen, counted, blocked, &mut tally,
    ));
    (tally, rows)
}

/// The row of one selected namespace, compared as the controller's plan
/// compares it; counted in `tally` as synced or failed as the controller
/// counts it.
fn selected_row<K: Explained>(
    request: &Request,
    bound: &K,
    namespace: &NamespaceFacts,
    actual: Option<&K>,
    rules: &Rules,
    key: &dyn ChecksumKey<K>,
    tally: &mut Tally,
) -> Row {
    let copy_request = request.copy_request(None);
    let desired = desired(bound, &copy_request, &namespace.name, &rules.install, key);
    let too_large = (desired.is_ok())
        .then(|| super::super::keys::too_large(bound, &request.shape, request.form))
        .flatten();
    let (verdict, detail) = match (desired, actual) {
        (Err(refusal), _) => (
            Verdict::NotCopied,
            format!("its copy cannot be built ({refusal:?}): nothing is written"),
        ),
        (Ok(_), _) if too_large.is_some() => (
            Verdict::CopyTooLarge,
            too_large.iter().map(ToString::to_string).collect(),
        ),
        (Ok(_), None) => (
            Verdict::Missing,
            "it does not exist: the controller writes it".into(),
        ),
        (Ok(desired), Some(actual)) => compare(desired, actual, bound.meta(), rules, key),
    };
    let keys = super::super::keys::keys_held(bound, &request.shape, request.form);
    let (held, missing) = keys.unwrap_or_default();
    match (verdict.ok(), missing.is_empty()) {
        (true, true) => tally.synced += 1,
        // Written without them, as the controller counts it: failed.
        (true, false) => tally.failures.push(Failure {
            namespace: namespace.name.clone(),
            reason: crate::api::cluster_mirror::reason::KEY_MISSING,
            message: format!(
                "{}: named by the keys to copy but not in the source; the copies are written without them",
                missing.join(", ")
            ),
            retried: false,
        }),
        (false, _) => {}
    }
    let detail = match held.is_empty() {
        true => detail,
        false => format!("{detail}; {held}"),
    };
    if verdict == Verdict::NameTaken {
        // The controller's words, so that the status is the one it writes.
        tally.failures.push(Failure {
            namespace: namespace.name.clone(),
            reason: crate::api::cluster_mirror::reason::NAME_TAKEN,
            message: format!(
                "{}/{} already exists and was not written by this {}; it is left untouched",
                namespace.name,
                request.target_name,
                request.key().kind().name()
            ),
            retried: false,
        });
    }
    if let Some(too_large) = too_large {
        tally.failures.push(Failure {
            namespace: namespace.name.clone(),
            reason: crate::api::cluster_mirror::reason::COPY_TOO_LARGE,
            message: too_large.to_string(),
            retried: false,
        });
    }
    let detail = match request.suspend && !verdict.ok() && verdict != Verdict::NameTaken {
        true => format!("{detail}; but it is suspended: nothing is written until it resumes"),
        false => detail,
    };
    namespace_row::<K>(request, &namespace.name, verdict, detail)
}

/// The row of a selected namespace while the ClusterMirror copies nothing.
fn not_copied<K: Explained>(
    request: &Request,
    blocked: Option<&Blocked>,
    namespace: &NamespaceFacts,
    at: Option<&K>,
    rules: &Rules,
) -> Row {
    let why = blocked.map_or_else(|| "its source cannot be read".into(), Blocked::message);
    let here = match at {
        None => "there is no copy here".to_owned(),
        Some(object) if request.key().marks(object.meta()) => {
            match !request.suspend && rules.install.reserved_names.contains(&request.target_name) {
                true => "its copy here is removed: the name is reserved".into(),
                false => "its copy here is kept as it is".into(),
            }
        }
        Some(object) => format!("the name is held by {}", whose(object.meta(), rules)),
    };
    namespace_row::<K>(
        request,
        &namespace.name,
        Verdict::NotCopied,
        format!("{why}; {here}"),
    )
}

/// The row of a namespace the spec asks for that it does not write into:
/// the source's own, a protected one, or for a Mirror one it reaches by a
/// glob or its selector that does not consent (which is no failure).
fn never_written<K: Explained>(
    request: &Request,
    namespace: &NamespaceFacts,
    consent: &Consent,
) -> Row {
    let protected = match request.origin {
        Origin::ClusterMirror => {
            "protected (or a namespace ClusterMirror sources may come from): never written, even when selected, and not counted as selected"
        }
        Origin::Mirror { .. } => "protected: never written, and not counted as selected",
    };
    let (verdict, detail) = match consent.admission(&request.source_namespace, namespace) {
        _ if namespace.name == request.source_namespace => (
            Verdict::ProtectedNamespace,
            "the source's own namespace: never written, and not counted as selected".to_owned(),
        ),
        _ if request.origin == Origin::ClusterMirror => {
            (Verdict::ProtectedNamespace, protected.to_owned())
        }
        Err(NamespaceRefusal::Protected) => (Verdict::ProtectedNamespace, protected.to_owned()),
        Err(refusal) => (
            Verdict::DoesNotAccept,
            format!(
                "reached by a glob or the selector, and {refusal}: not selected, and not counted"
            ),
        ),
        Ok(_) => (Verdict::ProtectedNamespace, protected.to_owned()),
    };
    namespace_row::<K>(request, &namespace.name, verdict, detail)
}

/// The row of a copy carrying the ClusterMirror's label that is not its
/// copy in a selected namespace: another install's, or one the prune loop
/// removes (or keeps, while suspended).
fn held<K: Explained>(
    request: &Request,
    copy: &K,
    namespace: &NamespaceFacts,
    rules: &Rules,
) -> Row {
    let meta = copy.meta();
    let prune_rules = PruneRules {
        kind: K::SOURCE_KIND,
        install: &rules.install,
        consent: request.consent(&rules.cluster_consent, K::consent(rules)),
    };
    let seen = SeenBy {
        listed: true,
        exists: true,
        request: Some(request),
        deletion: None,
    };
    let fate = copy_fate(meta, Some(namespace), &prune_rules, &seen);
    let asker = request.key().kind().name();
    let (verdict, detail) = match fate {
        _ if !crate::contract::written_under(meta, &rules.install.selector) => (
            Verdict::OtherInstall,
            format!("{}: this install leaves it alone", whose(meta, rules)),
        ),
        CopyVerdict::Keep => (
            Verdict::Unwanted,
            format!(
                "not wanted here any more, but the {asker} is suspended: kept until it resumes"
            ),
        ),
        CopyVerdict::Unwanted(_)
        | CopyVerdict::UnwantedIfSourceGone(..)
        | CopyVerdict::ClusterMirrorDeleted(_)
        | CopyVerdict::Orphaned => (
            Verdict::Unwanted,
            format!(
                "the {asker} no longer selects this namespace (or it no longer consents), or copies another source or name, or the name is reserved: the controller removes it"
            ),
        ),
    };
    let mut row = namespace_row::<K>(request, &namespace.name, verdict, detail);
    row.name = meta.name.clone().unwrap_or_default();
    row
}

pub(super) fn namespace_row<K: Explained>(
    request: &Request,
    namespace: &str,
    verdict: Verdict,
    detail: String,
) -> Row {
    let key = request.key();
    Row {
        what: What::copy_of_request(&key),
        kind: K::NAME,
        namespace: namespace.to_owned(),
        name: request.target_name.clone(),
        source: Some(source_key(request)),
        request: Some(key),
        verdict,
        detail,
    }
}
