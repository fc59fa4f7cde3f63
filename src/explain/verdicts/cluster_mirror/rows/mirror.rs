//! The rows only a Mirror has: a namespace it names that refuses it, how
//! a selected one consents, and a name a ClusterMirror claims from it.

use super::*;

/// The row of a namespace a Mirror names exactly that refuses it: a
/// failure, counted as selected as the controller counts it (and listed
/// among the failures unless the whole request is blocked).
pub(super) fn refused<K: Explained>(
    request: &Request,
    namespace: &str,
    why: &NamedRefusal,
    counted: bool,
    blocked: Option<&Blocked>,
    tally: &mut Tally,
) -> Row {
    tally.selected += usize::from(counted);
    if blocked.is_none() {
        tally.failures.push(Failure {
            namespace: namespace.to_owned(),
            reason: why.reason(),
            message: why.message(),
            retried: false,
        });
    }
    let verdict = match why {
        NamedRefusal::Protected => Verdict::Protected,
        NamedRefusal::NotConsenting => Verdict::NotConsenting,
    };
    let detail = format!(
        "{} (named exactly in spec.target.namespaces: a failure, {})",
        why.message(),
        why.reason()
    );
    namespace_row::<K>(request, namespace, verdict, detail)
}

/// A selected namespace's row, saying how it consents to a Mirror's
/// copies: by its labels, or by which MirrorGrant.
pub(super) fn consented(mut row: Row, admission: Option<&Admission>) -> Row {
    match admission {
        None => {}
        Some(Admission::ByLabels) => row.detail.push_str("; it consents by its labels"),
        Some(Admission::ByGrant(grant)) => {
            row.detail
                .push_str(&format!("; it consents by MirrorGrant {grant}"));
        }
    }
    row
}

/// The ClusterMirror among `outranking` that claims the Mirror's copies'
/// name in `namespace`, as the controller decides it
/// (`Request::claims`): it selects the namespace and holds the name, or
/// is not suspended (explain does not tell whether its writes are blocked
/// or failing, which the controller counts as not writing).
pub(super) fn claimant<'a, K: Explained>(
    request: &Request,
    outranking: &'a [Request],
    namespace: &NamespaceFacts,
    at: Option<&K>,
    rules: &Rules,
) -> Option<&'a Request> {
    if request.origin == Origin::ClusterMirror {
        return None;
    }
    outranking.iter().find(|claimant| {
        let holds = at.is_some_and(|object| claimant.key().marks(object.meta()));
        claimant.claims(namespace, &rules.cluster_consent, true, holds)
    })
}

/// The row of a namespace where ClusterMirror `claimant` claims the
/// Mirror's copies' name: a `NameTaken` failure, in the controller's
/// words (listed unless the whole request is blocked: `told`).
pub(super) fn claimed<K: Explained>(
    request: &Request,
    namespace: &str,
    claimant: &Request,
    told: bool,
    tally: &mut Tally,
) -> Row {
    let message = format!(
        "{} is claimed by ClusterMirror {}, which outranks a Mirror",
        request.target_name, claimant.name
    );
    if told {
        tally.failures.push(Failure {
            namespace: namespace.to_owned(),
            reason: crate::api::cluster_mirror::reason::NAME_TAKEN,
            message: message.clone(),
            retried: false,
        });
    }
    namespace_row::<K>(request, namespace, Verdict::NameTaken, message)
}

/// The row of a namespace whose grants explain could not read, where a
/// Mirror's copies need them.
pub(super) fn undecided<K: Explained>(request: &Request, namespace: &str) -> Row {
    namespace_row::<K>(
        request,
        namespace,
        Verdict::GrantsNotKnown,
        "its labels do not let the copies in, and its MirrorGrants cannot be read (as \
         you: list on mirrorgrants is needed): whether it consents is not known here, \
         nor what the controller counts"
            .into(),
    )
}

/// The rows of the namespaces a Mirror names exactly that are not there
/// (when every namespace was looked at): each fails as one that does not
/// consent.
pub(super) fn absent<K: Explained>(
    request: &Request,
    seen: &Seen<'_, K>,
    counted: bool,
    blocked: Option<&Blocked>,
    tally: &mut Tally,
) -> Vec<Row> {
    let absent = (request.named().iter()).filter(|name| {
        seen.every_namespace
            && **name != request.source_namespace
            && !seen.namespaces.iter().any(|ns| &ns.name == *name)
    });
    let why = NamedRefusal::NotConsenting;
    absent
        .map(|name| refused::<K>(request, name, &why, counted, blocked, tally))
        .collect()
}
