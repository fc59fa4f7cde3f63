//! The vocabulary of explain's rows: what a row is about, and its verdict.

use crate::{contract::condition::Condition, decisions::request_key::RequestKey};

/// What a row is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    Source,
    Companion,
    Mirror,
    /// A namespace's consent to one kind.
    Consent,
    /// A namespace's `workshop.io/accept-mirrors-from`.
    AcceptFrom,
    /// A ClusterMirror, as its conditions say.
    ClusterMirror,
    /// A ClusterMirror's copy in one namespace (or why it has none).
    ClusterMirrorCopy,
    /// A Mirror (the namespaced resource), as its conditions say.
    NamespacedMirror,
    /// A Mirror's copy in one namespace (or why it has none).
    NamespacedMirrorCopy,
}

impl What {
    pub fn as_str(self) -> &'static str {
        match self {
            What::Source => "source",
            What::Companion => "companion",
            What::Mirror => "mirror",
            What::Consent => "consent",
            What::AcceptFrom => "accept-from",
            What::ClusterMirror => "clustermirror",
            What::ClusterMirrorCopy => "clustermirror-copy",
            What::NamespacedMirror => "namespaced-mirror",
            What::NamespacedMirrorCopy => "namespaced-mirror-copy",
        }
    }

    /// The row of the ClusterMirror or Mirror `key` itself.
    pub fn of_request(key: &RequestKey) -> What {
        match key.is_mirror() {
            false => What::ClusterMirror,
            true => What::NamespacedMirror,
        }
    }

    /// The row of a copy of the ClusterMirror or Mirror `key`.
    pub fn copy_of_request(key: &RequestKey) -> What {
        match key.is_mirror() {
            false => What::ClusterMirrorCopy,
            true => What::NamespacedMirrorCopy,
        }
    }
}

/// Declares the verdicts: each one's name in the output (that of the table
/// of conditions for a verdict that tells of one), and whether it means "in
/// place".
macro_rules! verdicts {
    ($($variant:ident => $name:expr, $ok:literal;)*) => {
        /// Each verdict explain gives. Their names are the JSON output's
        /// vocabulary: documented, never renamed.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
        pub enum Verdict {
            $($variant,)*
        }

        impl Verdict {
            pub const ALL: &[Verdict] = &[$(Verdict::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Verdict::$variant => const { $name },)*
                }
            }

            /// Whether the row is as asked: a managed source, a copy in
            /// place (or, in a preview, one that would be written), the
            /// source's own namespace (it holds the companion), and what a
            /// namespace's consent is (its choice, not a fault).
            pub fn ok(self) -> bool {
                match self {
                    $(Verdict::$variant => $ok,)*
                }
            }
        }
    };
}

verdicts! {
    // Whether this install manages a source.
    Managed => "managed", true;
    NotFound => "not-found", false;
    NotSelected => "not-selected", false;
    RefusedType => named(Condition::NeverASource), false;
    IsACopy => "is-a-copy", false;
    BeingDeleted => "being-deleted", false;
    NameTooLong => named(Condition::NameTooLong), false;
    InvalidCopyList => named(Condition::InvalidCopyList), false;
    InvalidMirrorKeys => named(Condition::InvalidMirrorKeys), false;
    KeysBreakType => named(Condition::KeysBreakType), false;
    CopyTooLarge => named(Condition::CopyTooLarge), false;
    // A copy, where it should be.
    InSync => "in-sync", true;
    InSyncUnverified => "in-sync-unverified", true;
    WouldReceive => "would-receive", true;
    Missing => "missing", false;
    SourceChanged => "source-changed", false;
    Drifted => "drifted", false;
    Differs => "differs", false;
    MustRecreate => "must-recreate", false;
    NameTaken => named(Condition::NameTaken), false;
    TakenOver => "taken-over", false;
    Contested => named(Condition::Contested), false;
    // A namespace asked for that receives no mirror.
    SourceNamespace => "source-namespace", true;
    Protected => named(Condition::MirrorNamespaceProtected), false;
    NotConsenting => "not-consenting", false;
    KindNotAccepted => "kind-not-accepted", false;
    SourceNamespaceNotAccepted => "source-namespace-not-accepted", false;
    InvalidAcceptMirrorsFrom => "invalid-accept-mirrors-from", false;
    GrantsNotKnown => "grants-not-known", false;
    ReservedName => named(Condition::ReservedName), false;
    InvalidTargets => named(Condition::InvalidTargets), false;
    InvalidMirrorName => named(Condition::InvalidMirrorName), false;
    NoSuchNamespace => "no-such-namespace", false;
    // A copy seen from its own side.
    NotACopy => "not-a-copy", false;
    OtherInstall => "other-install", false;
    Unmarked => "unmarked", false;
    Unwanted => "unwanted", false;
    // A mirror under the name its source gave before, kept until the
    // mirror under the new name is there.
    EarlierName => "earlier-name", false;
    NoSource => "no-source", false;
    // A ClusterMirror's copy whose ClusterMirror is gone, unseen: kept.
    Orphaned => "orphaned", false;
    // A namespace's consent.
    Accepts => "accepts", true;
    AcceptsByGrant => "accepts-by-grant", true;
    DoesNotAccept => "does-not-accept", true;
    ProtectedNamespace => "protected-namespace", true;
    FromAny => "from-any", true;
    FromListed => "from-listed", true;
    // A ClusterMirror, by the reason of its Ready condition.
    Synced => "synced", true;
    PartiallySynced => "partially-synced", false;
    SourceNotFound => "source-not-found", false;
    SourceNotCopyable => "source-not-copyable", false;
    SourceNamespaceNotAllowed => "source-namespace-not-allowed", false;
    SecretsDisabled => "secrets-disabled", false;
    Suspended => "suspended", false;
    InvalidSpec => "invalid-spec", false;
    // A ClusterMirror another install serves (its spec.className).
    OtherClass => "other-class", false;
    // A namespace a ClusterMirror selects while it copies nothing.
    NotCopied => "not-copied", false;
    // A ClusterMirror whose selection leaves a namespace out.
    NotTargeted => "not-targeted", true;
    // Anything that could not be read.
    CannotRead => "cannot-read", false;
}

/// The name of the verdict the table gives `condition`; a verdict declared
/// by a condition without one does not compile.
const fn named(condition: Condition) -> &'static str {
    match condition.row().verdict {
        Some(name) => name,
        None => panic!("the table of conditions gives it no verdict"),
    }
}

impl Verdict {
    /// The verdict of a row that tells of `condition`: the one the table
    /// names, declared from it above.
    pub fn of_condition(condition: Condition) -> Option<Verdict> {
        let name = condition.row().verdict?;
        Verdict::ALL.iter().copied().find(|v| v.as_str() == name)
    }

    /// A row refused for `condition`: its verdict, and `why` followed by the
    /// Warning that tells of it.
    pub fn told(condition: Condition, why: impl std::fmt::Display) -> (Verdict, String) {
        // Never the fallback: every verdict the table names is declared from it.
        let verdict = Verdict::of_condition(condition).unwrap_or(Verdict::CannotRead);
        (verdict, format!("{why} ({})", warned(condition)))
    }

    /// A Ready reason as a verdict.
    pub fn of_ready_reason(reason: &str) -> Verdict {
        use crate::api::cluster_mirror::reason as r;
        match reason {
            r::SYNCED => Verdict::Synced,
            r::PARTIALLY_SYNCED => Verdict::PartiallySynced,
            r::SOURCE_NOT_FOUND => Verdict::SourceNotFound,
            r::SOURCE_NOT_COPYABLE => Verdict::SourceNotCopyable,
            r::SOURCE_NAMESPACE_NOT_ALLOWED => Verdict::SourceNamespaceNotAllowed,
            r::SECRETS_DISABLED => Verdict::SecretsDisabled,
            r::KEYS_BREAK_TYPE => Verdict::KeysBreakType,
            r::SUSPENDED => Verdict::Suspended,
            _ => Verdict::InvalidSpec,
        }
    }
}

/// How a row names the Warning that tells of `condition`.
pub fn warned(condition: Condition) -> String {
    format!("Warning {}", condition.row().reason.unwrap_or_default())
}
