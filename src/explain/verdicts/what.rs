//! The vocabulary of explain's rows: what a row is about, and its verdict.

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
        }
    }
}

/// Declares the verdicts: each one's name in the output, and whether it
/// means "in place".
macro_rules! verdicts {
    ($($variant:ident => $name:literal, $ok:literal;)*) => {
        /// Each verdict explain gives. Their names are the JSON output's
        /// vocabulary: documented, never renamed.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
        pub enum Verdict {
            $($variant,)*
        }

        impl Verdict {
            #[cfg(test)]
            pub const ALL: &[Verdict] = &[$(Verdict::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Verdict::$variant => $name,)*
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
    RefusedType => "refused-type", false;
    IsACopy => "is-a-copy", false;
    BeingDeleted => "being-deleted", false;
    NameTooLong => "name-too-long", false;
    InvalidCopyList => "invalid-copy-list", false;
    InvalidMirrorKeys => "invalid-mirror-keys", false;
    KeysBreakType => "keys-break-type", false;
    CopyTooLarge => "copy-too-large", false;
    // A copy, where it should be.
    InSync => "in-sync", true;
    InSyncUnverified => "in-sync-unverified", true;
    WouldReceive => "would-receive", true;
    Missing => "missing", false;
    SourceChanged => "source-changed", false;
    Drifted => "drifted", false;
    Differs => "differs", false;
    MustRecreate => "must-recreate", false;
    NameTaken => "name-taken", false;
    TakenOver => "taken-over", false;
    Contested => "contested", false;
    // A namespace asked for that receives no mirror.
    SourceNamespace => "source-namespace", true;
    Protected => "protected", false;
    NotConsenting => "not-consenting", false;
    KindNotAccepted => "kind-not-accepted", false;
    SourceNamespaceNotAccepted => "source-namespace-not-accepted", false;
    InvalidAcceptMirrorsFrom => "invalid-accept-mirrors-from", false;
    ReservedName => "reserved-name", false;
    InvalidTargets => "invalid-targets", false;
    InvalidMirrorName => "invalid-mirror-name", false;
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

impl Verdict {
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
