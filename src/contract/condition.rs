//! The conditions a reconcile can end in, as data: for each, the Warning
//! Event that tells a person of it (if one must act), its metric label, how
//! soon it is retried, the verdict `explain` gives it, and how a
//! ClusterMirror's status lists a copy that failed with it. The reconcilers'
//! error says which condition it is; everything else reads this table, so a
//! new condition is one row here and the code that detects it.

use super::warning as w;
use Retry::{OnChange, Slowly, Soon};

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
    pub fn urgency(self) -> u8 {
        match self {
            Retry::Soon => 0,
            Retry::Slowly => 1,
            Retry::OnChange => 2,
        }
    }
}

/// A ClusterMirror's failure reason for a copy whose name an object it did
/// not create holds (its Warning, on a source, is `CompanionNameTaken`).
const NAME_TAKEN: &str = "NameTaken";

/// A ClusterMirror's failure reason for a copy that failed with a
/// condition no person is told of.
const WRITE_FAILED: &str = "WriteFailed";

/// What is said and done about one condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConditionRow {
    /// The reason of the Warning Event, for a condition a person must act
    /// on; None when no Event is raised.
    pub reason: Option<&'static str>,
    /// A short, fixed label for logs and metrics.
    pub metric_label: &'static str,
    pub retry: Retry,
    /// The name of the verdict `explain` gives a row refused so, where it
    /// tells of this condition by a verdict of its own.
    pub verdict: Option<&'static str>,
    /// The reason a ClusterMirror's status lists a copy failed so under.
    pub failure: &'static str,
}

/// A condition a person must act on: a Warning Event of `reason`, which a
/// ClusterMirror's status lists too.
const fn warning(
    reason: &'static str,
    metric_label: &'static str,
    retry: Retry,
    verdict: Option<&'static str>,
) -> ConditionRow {
    ConditionRow {
        reason: Some(reason),
        metric_label,
        retry,
        verdict,
        failure: reason,
    }
}

/// A condition no person is told of: it passes, or the controller's own
/// state explains it.
const fn quiet(metric_label: &'static str, retry: Retry) -> ConditionRow {
    ConditionRow {
        reason: None,
        metric_label,
        retry,
        verdict: None,
        failure: WRITE_FAILED,
    }
}

/// Declares the conditions and their rows, each once.
macro_rules! conditions {
    ($($(#[$doc:meta])* $variant:ident => $row:expr;)*) => {
        /// Each condition a reconcile can end in (the variants of the
        /// reconcilers' error, without their data).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Condition {
            $($(#[$doc])* $variant,)*
        }

        impl Condition {
            #[cfg(test)]
            pub const ALL: &[Condition] = &[$(Condition::$variant,)*];

            pub const fn row(self) -> ConditionRow {
                match self {
                    $(Condition::$variant => $row,)*
                }
            }
        }
    };
}

conditions! {
    /// `<source><suffix>` is longer than a Kubernetes name may be.
    NameTooLong => warning(w::COMPANION_NAME_TOO_LONG, "name_too_long", OnChange, Some("name-too-long"));
    /// The object is of a sort that is never copied, whatever its labels.
    NeverASource => warning(w::SOURCE_NOT_COPYABLE, "never_a_source", OnChange, Some("refused-type"));
    /// An object not made for this source already has the companion's name.
    NameTaken => ConditionRow {
        failure: NAME_TAKEN,
        ..warning(w::COMPANION_NAME_TAKEN, "name_taken", Slowly, Some("name-taken"))
    };
    /// A ClusterMirror wants `name` (`namespace/name`) for its copy: a
    /// source's own mirror never takes or keeps that name, whatever is there.
    /// Told as any mirror name taken.
    NameClaimed => warning(w::MIRROR_NAME_TAKEN, "mirror_name_taken", Slowly, None);
    /// Mirrors could not be written where objects not made for this source
    /// already have the source's name (`names`), or where a ClusterMirror
    /// wants that name for its copy (`claimed`, each `namespace/name` with
    /// the ClusterMirror's name).
    MirrorNameTaken => warning(w::MIRROR_NAME_TAKEN, "mirror_name_taken", Slowly, Some("name-taken"));
    /// The source asks for protected namespaces that consent: they never
    /// receive mirrors, whatever their labels say.
    MirrorNamespaceProtected => warning(w::MIRROR_NAMESPACE_PROTECTED, "mirror_namespace_protected", Slowly, Some("protected"));
    /// The source's name is reserved: published into every namespace by
    /// Kubernetes or a common platform component (a mirror would fight its
    /// publisher), or listed by `--reserved-names`.
    ReservedName => warning(w::MIRROR_NAME_RESERVED, "reserved_name", OnChange, Some("reserved-name"));
    /// Someone else keeps rewriting a copy: restoring it at once each time
    /// would be an endless fight.
    Contested => warning(w::COPY_CONTESTED, "contested", Slowly, Some("contested"));
    /// The source's lists of labels or annotations to carry cannot be
    /// understood; nothing is written until they are fixed.
    InvalidCopyList => warning(w::INVALID_COPY_LIST, "invalid_copy_list", OnChange, Some("invalid-copy-list"));
    /// The source's lists ask for keys that are never carried; its copies
    /// are written without them.
    /// `explain` tells of it in the source's row, whose verdict is `managed`.
    CopyKeyRefused => warning(w::COPY_KEY_REFUSED, "copy_key_refused", OnChange, None);
    /// The source's `workshop.io/mirror-keys` cannot be understood; its
    /// copies are left as they are until it is fixed.
    InvalidMirrorKeys => warning(w::INVALID_MIRROR_KEYS, "invalid_mirror_keys", OnChange, Some("invalid-mirror-keys"));
    /// The source's `workshop.io/mirror-name` is no name a mirror can
    /// have; its mirrors are left as they are until it is fixed.
    InvalidMirrorName => warning(w::INVALID_MIRROR_NAME, "invalid_mirror_name", OnChange, Some("invalid-mirror-name"));
    /// The keys copied would break the Secret's type; nothing is written.
    KeysBreakType => warning(w::KEYS_BREAK_TYPE, "keys_break_type", OnChange, Some("keys-break-type"));
    /// Exact keys to copy that the source lacks; the copies are written
    /// without them.
    /// `explain` tells of it in the row of the keys held.
    KeyMissing => warning(w::KEY_MISSING, "key_missing", OnChange, None);
    /// The copy would hold more than the API server accepts: never built.
    CopyTooLarge => warning(w::COPY_TOO_LARGE, "copy_too_large", OnChange, Some("copy-too-large"));
    /// The source's mirror annotations cannot be understood.
    InvalidTargets => warning(w::INVALID_MIRROR_TARGETS, "invalid_targets", OnChange, Some("invalid-targets"));
    /// The API server refused the object itself (invalid, too large, or
    /// denied by an admission policy). Writing it again cannot help until
    /// something changes.
    Rejected => warning(w::COMPANION_REJECTED, "rejected", Slowly, None);
    /// RBAC or an admission webhook denied the request.
    Forbidden => warning(w::COMPANION_FORBIDDEN, "forbidden", Slowly, None);
    /// The cache was behind the API server (409 on create, stale
    /// resourceVersion on update). Reconciling again from newer state fixes it.
    Stale => quiet("stale_cache", Soon);
    /// The namespace is being deleted, and everything in it with it.
    NamespaceTerminating => quiet("namespace_terminating", OnChange);
    /// This replica is not (or no longer) the leader: it must not write.
    NotLeading => quiet("not_leading", OnChange);
    /// The process is stopping; the reconcile gave up waiting for the caches.
    ShuttingDown => quiet("shutting_down", OnChange);
    /// The kind's checksums need a key, and none can be used now (`/readyz`
    /// and the log say why). Copies are written once it can: its arrival
    /// compares every source again.
    NoDigestKey => quiet("no_digest_key", OnChange);
    /// Anything the API server or the network may get over by itself.
    Transient => quiet("transient", Soon);
    /// Several conditions a person must act on, found by one reconcile
    /// (a mirror name taken and a protected namespace asked for): each is
    /// told, none hides another.
    /// Its retry is that of its most urgent part; this one when it has none.
    Several => quiet("several_conditions", Slowly);
}

#[cfg(test)]
mod tests;
