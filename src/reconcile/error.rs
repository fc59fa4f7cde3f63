//! The one error type of the reconcilers: each variant says which condition
//! of the table (`contract::condition`) it is, and its message.

pub use crate::contract::condition::Retry;
use crate::{
    contract::condition::Condition, decisions::desired_copy::Refusal,
    decisions::key_shape::copy_plan::CopyTooLarge,
};

/// Everything a reconcile can fail with: each variant is the [`Condition`]
/// of its name (which says what it means), with the data its message tells.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("companion name {name} is {len} characters long, over the limit of 253")]
    NameTooLong { name: String, len: usize },
    #[error("it is never copied: {reason}")]
    NeverASource { reason: String },
    #[error("{name} already exists and is not controlled by this source; it is left untouched")]
    NameTaken { name: String },
    /// `name` is `namespace/name`.
    #[error(
        "{name} is the name of ClusterMirror {cluster_mirror}'s copy, which outranks a source's own mirror; left to it"
    )]
    NameClaimed {
        name: String,
        cluster_mirror: String,
    },
    /// `names` held by others; `claimed`, each `namespace/name` with the
    /// ClusterMirror that wants it.
    #[error("{}", mirror_names_taken(names, claimed))]
    MirrorNameTaken {
        names: Vec<String>,
        claimed: Vec<(String, String)>,
    },
    #[error("{} is protected and never receives mirrors; remove it from the source's targets", namespaces.join(", "))]
    MirrorNamespaceProtected { namespaces: Vec<String> },
    #[error(
        "{name} is reserved (Kubernetes, istiod or OpenShift publishes a ConfigMap of that name into every namespace, or --reserved-names lists it), so it is never mirrored; mirrors written before are removed"
    )]
    ReservedName { name: String },
    #[error(
        "{name} was rewritten by someone else {times} times within a minute; restoring it slowly from now on"
    )]
    Contested { name: String, times: usize },
    #[error("invalid list of keys to copy: {0}; its copies are left as they are")]
    InvalidCopyList(String),
    #[error(
        "{0}: never carried, since other tools claim, prune or trust objects by them (see the label contract, docs/user/labels.md); the copies are written without them"
    )]
    CopyKeyRefused(String),
    #[error("invalid list of keys to mirror: {0}; its copies are left as they are")]
    InvalidMirrorKeys(String),
    #[error("{0}; its mirrors are left as they are")]
    InvalidMirrorName(String),
    #[error("{0}; its copies are left as they are")]
    KeysBreakType(String),
    #[error(
        "{0}: named by the keys to copy but not in the source; the copies are written without them"
    )]
    KeyMissing(String),
    #[error("{0}")]
    CopyTooLarge(CopyTooLarge),
    #[error("invalid mirror targets: {0}")]
    InvalidTargets(String),
    #[error("the API server refused the copy: {0}")]
    Rejected(String),
    #[error("forbidden: {0}")]
    Forbidden(String),
    #[error("the cache was stale: {0}")]
    Stale(String),
    #[error("the namespace is being terminated")]
    NamespaceTerminating,
    #[error("not the leader")]
    NotLeading,
    #[error("shutting down")]
    ShuttingDown,
    #[error("no digest key can be used yet; copies are written once one can")]
    NoDigestKey,
    #[error("transient API error: {0}")]
    Transient(#[source] kube::Error),
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Several(Vec<Error>),
}

/// The message of [`Error::MirrorNameTaken`]: the names held by others,
/// then those ClusterMirrors want.
fn mirror_names_taken(names: &[String], claimed: &[(String, String)]) -> String {
    let mut parts = Vec::new();
    if !names.is_empty() {
        parts.push(format!(
            "{} already exist(s) and is not a mirror of this source; left untouched",
            names.join(", ")
        ));
    }
    if !claimed.is_empty() {
        let claimed: Vec<String> = claimed
            .iter()
            .map(|(name, cluster_mirror)| format!("{name} (ClusterMirror {cluster_mirror})"))
            .collect();
        parts.push(format!(
            "{} is a ClusterMirror's copy's name, which outranks a source's own mirror; left to it",
            claimed.join(", ")
        ));
    }
    parts.join("; ")
}

impl Error {
    /// What a source is told of a refusal of one of its own copies; None
    /// for a source that is quietly not copied (a copy itself, being
    /// deleted, or not yet stored).
    pub fn of_refusal(refusal: Refusal) -> Option<Error> {
        match refusal {
            Refusal::NameTooLong { name, len } => Some(Error::NameTooLong { name, len }),
            Refusal::InvalidCopyList(why) => Some(Error::InvalidCopyList(why)),
            Refusal::InvalidMirrorKeys(why) => Some(Error::InvalidMirrorKeys(why)),
            Refusal::InvalidMirrorName(why) => Some(Error::InvalidMirrorName(why)),
            Refusal::KeysBreakType(breaks) => {
                Some(Error::KeysBreakType(breaks.label_path_message()))
            }
            Refusal::SourceIsCompanion | Refusal::Incomplete | Refusal::BeingDeleted => None,
        }
    }

    /// Which condition of the table this is.
    pub fn condition(&self) -> Condition {
        match self {
            Error::NameTooLong { .. } => Condition::NameTooLong,
            Error::NeverASource { .. } => Condition::NeverASource,
            Error::NameTaken { .. } => Condition::NameTaken,
            Error::NameClaimed { .. } => Condition::NameClaimed,
            Error::MirrorNameTaken { .. } => Condition::MirrorNameTaken,
            Error::MirrorNamespaceProtected { .. } => Condition::MirrorNamespaceProtected,
            Error::ReservedName { .. } => Condition::ReservedName,
            Error::Contested { .. } => Condition::Contested,
            Error::InvalidCopyList(_) => Condition::InvalidCopyList,
            Error::CopyKeyRefused(_) => Condition::CopyKeyRefused,
            Error::InvalidMirrorKeys(_) => Condition::InvalidMirrorKeys,
            Error::InvalidMirrorName(_) => Condition::InvalidMirrorName,
            Error::KeysBreakType(_) => Condition::KeysBreakType,
            Error::KeyMissing(_) => Condition::KeyMissing,
            Error::CopyTooLarge(_) => Condition::CopyTooLarge,
            Error::InvalidTargets(_) => Condition::InvalidTargets,
            Error::Rejected(_) => Condition::Rejected,
            Error::Forbidden(_) => Condition::Forbidden,
            Error::Stale(_) => Condition::Stale,
            Error::NamespaceTerminating => Condition::NamespaceTerminating,
            Error::NotLeading => Condition::NotLeading,
            Error::ShuttingDown => Condition::ShuttingDown,
            Error::NoDigestKey => Condition::NoDigestKey,
            Error::Transient(_) => Condition::Transient,
            Error::Several(_) => Condition::Several,
        }
    }

    /// A short, fixed label for logs and metrics.
    pub fn metric_label(&self) -> &'static str {
        self.condition().row().metric_label
    }

    /// The reason of the Warning Event, for conditions a person must act on.
    pub fn event_reason(&self) -> Option<&'static str> {
        self.condition().row().reason
    }

    /// The conditions this error stands for: its parts when it is
    /// [`Error::Several`], else itself.
    pub fn parts(&self) -> &[Error] {
        match self {
            Error::Several(parts) => parts,
            error => std::slice::from_ref(error),
        }
    }

    /// Whether this is a terminal error: one that will not go away by
    /// retrying, only when something in the cluster changes.
    pub fn is_terminal(&self) -> bool {
        self.retry() != Retry::Soon
    }

    /// As the table says; several conditions, as the most urgent of them.
    pub fn retry(&self) -> Retry {
        let own = self.condition().row().retry;
        match self {
            Error::Several(parts) => parts
                .iter()
                .map(Error::retry)
                .min_by_key(|retry| retry.urgency())
                .unwrap_or(own),
            _ => own,
        }
    }
}

#[cfg(test)]
mod tests;
