//! The one error type of the reconcilers, and how each kind is retried.

use crate::{contract::warning, decisions::key_shape::copy_plan::CopyTooLarge};

/// Everything a reconcile can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `<source><suffix>` is longer than a Kubernetes name may be.
    #[error("companion name {name} is {len} characters long, over the limit of 253")]
    NameTooLong { name: String, len: usize },

    /// The object is of a sort that is never copied, whatever its labels.
    #[error("it is never copied: {reason}")]
    NeverASource { reason: String },

    /// An object not made for this source already has the companion's name.
    #[error("{name} already exists and is not controlled by this source; it is left untouched")]
    NameTaken { name: String },

    /// A ClusterMirror wants `name` (`namespace/name`) for its copy: a
    /// source's own mirror never takes or keeps that name, whatever is there.
    #[error(
        "{name} is the name of ClusterMirror {cluster_mirror}'s copy, which outranks a source's own mirror; left to it"
    )]
    NameClaimed {
        name: String,
        cluster_mirror: String,
    },

    /// Mirrors could not be written where objects not made for this source
    /// already have the source's name (`names`), or where a ClusterMirror
    /// wants that name for its copy (`claimed`, each `namespace/name` with
    /// the ClusterMirror's name).
    #[error("{}", mirror_names_taken(names, claimed))]
    MirrorNameTaken {
        names: Vec<String>,
        claimed: Vec<(String, String)>,
    },

    /// The source asks for protected namespaces that consent: they never
    /// receive mirrors, whatever their labels say.
    #[error("{} is protected and never receives mirrors; remove it from the source's targets", namespaces.join(", "))]
    MirrorNamespaceProtected { namespaces: Vec<String> },

    /// The source's name is reserved: published into every namespace by
    /// Kubernetes or a common platform component (a mirror would fight its
    /// publisher), or listed by `--reserved-names`.
    #[error(
        "{name} is reserved (Kubernetes, istiod or OpenShift publishes a ConfigMap of that name into every namespace, or --reserved-names lists it), so it is never mirrored; mirrors written before are removed"
    )]
    ReservedName { name: String },

    /// Someone else keeps rewriting a copy: restoring it at once each time
    /// would be an endless fight.
    #[error(
        "{name} was rewritten by someone else {times} times within a minute; restoring it slowly from now on"
    )]
    Contested { name: String, times: usize },

    /// The source's lists of labels or annotations to carry cannot be
    /// understood; nothing is written until they are fixed.
    #[error("invalid list of keys to copy: {0}; its copies are left as they are")]
    InvalidCopyList(String),

    /// The source's lists ask for keys that are never carried; its copies
    /// are written without them.
    #[error(
        "{0}: never carried, since other tools claim, prune or trust objects by them (see the label contract, docs/user/labels.md); the copies are written without them"
    )]
    CopyKeyRefused(String),

    /// The source's `workshop.io/mirror-keys` cannot be understood; its
    /// copies are left as they are until it is fixed.
    #[error("invalid list of keys to mirror: {0}; its copies are left as they are")]
    InvalidMirrorKeys(String),

    /// The source's `workshop.io/mirror-name` is no name a mirror can
    /// have; its mirrors are left as they are until it is fixed.
    #[error("{0}; its mirrors are left as they are")]
    InvalidMirrorName(String),

    /// The keys copied would break the Secret's type; nothing is written.
    #[error("{0}; its copies are left as they are")]
    KeysBreakType(String),

    /// Exact keys to copy that the source lacks; the copies are written
    /// without them.
    #[error(
        "{0}: named by the keys to copy but not in the source; the copies are written without them"
    )]
    KeyMissing(String),

    /// The copy would hold more than the API server accepts: never built.
    #[error("{0}")]
    CopyTooLarge(CopyTooLarge),

    /// The source's mirror annotations cannot be understood.
    #[error("invalid mirror targets: {0}")]
    InvalidTargets(String),

    /// The API server refused the object itself (invalid, too large, or
    /// denied by an admission policy). Writing it again cannot help until
    /// something changes.
    #[error("the API server refused the copy: {0}")]
    Rejected(String),

    /// RBAC or an admission webhook denied the request.
    #[error("forbidden: {0}")]
    Forbidden(String),

    /// The cache was behind the API server (409 on create, stale
    /// resourceVersion on update). Reconciling again from newer state fixes it.
    #[error("the cache was stale: {0}")]
    Stale(String),

    /// The namespace is being deleted, and everything in it with it.
    #[error("the namespace is being terminated")]
    NamespaceTerminating,

    /// This replica is not (or no longer) the leader: it must not write.
    #[error("not the leader")]
    NotLeading,

    /// The process is stopping; the reconcile gave up waiting for the caches.
    #[error("shutting down")]
    ShuttingDown,

    /// The kind's checksums need a key, and none can be used now (`/readyz`
    /// and the log say why). Copies are written once it can: its arrival
    /// compares every source again.
    #[error("no digest key can be used yet; copies are written once one can")]
    NoDigestKey,

    /// Anything the API server or the network may get over by itself.
    #[error("transient API error: {0}")]
    Transient(#[source] kube::Error),

    /// Several conditions a person must act on, found by one reconcile
    /// (a mirror name taken and a protected namespace asked for): each is
    /// told, none hides another.
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

/// How soon, and how loudly, a failed reconcile is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Soon, with exponential backoff from a fraction of a second.
    Soon,
    /// Slowly, with exponential backoff from tens of seconds: the condition
    /// needs a person, and the source heals by itself once it is fixed.
    Slowly,
    /// Not until the source changes.
    OnChange,
}

impl Retry {
    /// Lower is sooner.
    pub(crate) fn urgency(self) -> u8 {
        match self {
            Retry::Soon => 0,
            Retry::Slowly => 1,
            Retry::OnChange => 2,
        }
    }
}

impl Error {
    /// A short, fixed label for logs and metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::NameTooLong { .. } => "name_too_long",
            Error::NeverASource { .. } => "never_a_source",
            Error::NameTaken { .. } => "name_taken",
            Error::NameClaimed { .. } | Error::MirrorNameTaken { .. } => "mirror_name_taken",
            Error::MirrorNamespaceProtected { .. } => "mirror_namespace_protected",
            Error::InvalidTargets(_) => "invalid_targets",
            Error::InvalidCopyList(_) => "invalid_copy_list",
            Error::CopyKeyRefused(_) => "copy_key_refused",
            Error::InvalidMirrorKeys(_) => "invalid_mirror_keys",
            Error::InvalidMirrorName(_) => "invalid_mirror_name",
            Error::KeysBreakType(_) => "keys_break_type",
            Error::KeyMissing(_) => "key_missing",
            Error::CopyTooLarge(_) => "copy_too_large",
            Error::ReservedName { .. } => "reserved_name",
            Error::Contested { .. } => "contested",
            Error::Rejected(_) => "rejected",
            Error::Forbidden(_) => "forbidden",
            Error::Stale(_) => "stale_cache",
            Error::NamespaceTerminating => "namespace_terminating",
            Error::ShuttingDown => "shutting_down",
            Error::NoDigestKey => "no_digest_key",
            Error::NotLeading => "not_leading",
            Error::Transient(_) => "transient",
            Error::Several(_) => "several_conditions",
        }
    }

    /// The reason of the Warning Event, for conditions a person must act on.
    pub fn event_reason(&self) -> Option<&'static str> {
        match self {
            Error::NameTooLong { .. } => Some(warning::COMPANION_NAME_TOO_LONG),
            Error::NeverASource { .. } => Some(warning::SOURCE_NOT_COPYABLE),
            Error::NameTaken { .. } => Some(warning::COMPANION_NAME_TAKEN),
            Error::NameClaimed { .. } | Error::MirrorNameTaken { .. } => {
                Some(warning::MIRROR_NAME_TAKEN)
            }
            Error::MirrorNamespaceProtected { .. } => Some(warning::MIRROR_NAMESPACE_PROTECTED),
            Error::InvalidTargets(_) => Some(warning::INVALID_MIRROR_TARGETS),
            Error::InvalidCopyList(_) => Some(warning::INVALID_COPY_LIST),
            Error::CopyKeyRefused(_) => Some(warning::COPY_KEY_REFUSED),
            Error::InvalidMirrorKeys(_) => Some(warning::INVALID_MIRROR_KEYS),
            Error::InvalidMirrorName(_) => Some(warning::INVALID_MIRROR_NAME),
            Error::KeysBreakType(_) => Some(warning::KEYS_BREAK_TYPE),
            Error::KeyMissing(_) => Some(warning::KEY_MISSING),
            Error::CopyTooLarge(_) => Some(warning::COPY_TOO_LARGE),
            Error::ReservedName { .. } => Some(warning::MIRROR_NAME_RESERVED),
            Error::Contested { .. } => Some(warning::COPY_CONTESTED),
            Error::Rejected(_) => Some(warning::COMPANION_REJECTED),
            Error::Forbidden(_) => Some(warning::COMPANION_FORBIDDEN),
            Error::Stale(_)
            | Error::Transient(_)
            | Error::NamespaceTerminating
            | Error::ShuttingDown
            | Error::NotLeading
            | Error::NoDigestKey
            | Error::Several(_) => None,
        }
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

    pub fn retry(&self) -> Retry {
        match self {
            Error::NameTooLong { .. }
            | Error::NeverASource { .. }
            | Error::NamespaceTerminating
            | Error::InvalidTargets(_)
            | Error::InvalidCopyList(_)
            | Error::CopyKeyRefused(_)
            | Error::InvalidMirrorKeys(_)
            | Error::InvalidMirrorName(_)
            | Error::KeysBreakType(_)
            | Error::KeyMissing(_)
            | Error::CopyTooLarge(_)
            | Error::ReservedName { .. }
            | Error::ShuttingDown
            | Error::NotLeading
            | Error::NoDigestKey => Retry::OnChange,
            Error::NameTaken { .. }
            | Error::NameClaimed { .. }
            | Error::MirrorNameTaken { .. }
            | Error::MirrorNamespaceProtected { .. }
            | Error::Contested { .. }
            | Error::Rejected(_)
            | Error::Forbidden(_) => Retry::Slowly,
            Error::Stale(_) | Error::Transient(_) => Retry::Soon,
            Error::Several(parts) => parts
                .iter()
                .map(Error::retry)
                .min_by_key(|retry| retry.urgency())
                .unwrap_or(Retry::Slowly),
        }
    }
}

#[cfg(test)]
mod tests;
