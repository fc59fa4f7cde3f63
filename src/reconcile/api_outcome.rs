//! What a failed API call means for the reconcile that made it.

use kube::core::Status;

use crate::{
    cluster::{api_client, relayed},
    kind::MirroredKind,
    reconcile::error::Error,
};

/// What a failed API call means for the reconcile that made it.
#[derive(Debug)]
pub enum ApiOutcome {
    /// The namespace is being deleted: nothing to do, and nothing to report.
    NamespaceTerminating,
    Failed(Error),
}

/// Sorts a failed call about an object of kind `K` into the kinds above.
/// What the API server said is kept only as it may be told (`relayed`).
pub fn classify<K: MirroredKind>(err: kube::Error) -> ApiOutcome {
    let status = match err {
        kube::Error::Api(status) => status,
        // A response it could not parse (a faulty proxy): serde's message
        // quotes what it found, which may be the object's content.
        kube::Error::SerdeError(parse) => {
            let what = api_client::unparsed(&parse);
            return ApiOutcome::Failed(Error::Transient(kube::Error::Service(what.into())));
        }
        err => return ApiOutcome::Failed(Error::Transient(err)),
    };
    if is_namespace_terminating(&status) {
        return ApiOutcome::NamespaceTerminating;
    }
    let status = relayed::relayable(*status, K::CONFIDENTIAL);
    let message = status.message.clone();
    let failed = if status.is_conflict() || status.is_already_exists() || status.is_not_found() {
        Error::Stale(message)
    } else if status.is_forbidden() {
        Error::Forbidden(message)
    } else if status.is_invalid() || matches!(status.code, 400 | 413) {
        Error::Rejected(message)
    } else {
        Error::Transient(kube::Error::Api(Box::new(status)))
    };
    ApiOutcome::Failed(failed)
}

fn is_namespace_terminating(status: &Status) -> bool {
    let by_cause = status
        .details
        .as_ref()
        .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating"));
    by_cause || (status.is_forbidden() && status.message.contains("being terminated"))
}

#[cfg(test)]
mod tests;
