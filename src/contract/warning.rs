//! The reasons of the Warning Events, one per condition a person must act
//! on (see `error`). Alerts match on them: they never change.

pub const COMPANION_NAME_TOO_LONG: &str = "CompanionNameTooLong";
pub const SOURCE_NOT_COPYABLE: &str = "SourceNotCopyable";
pub const COMPANION_NAME_TAKEN: &str = "CompanionNameTaken";
pub const MIRROR_NAME_TAKEN: &str = "MirrorNameTaken";
pub const INVALID_MIRROR_TARGETS: &str = "InvalidMirrorTargets";
pub const INVALID_COPY_LIST: &str = "InvalidCopyList";
pub const MIRROR_NAME_RESERVED: &str = "MirrorNameReserved";
/// A source asks for a protected namespace that consents.
pub const MIRROR_NAMESPACE_PROTECTED: &str = "MirrorNamespaceProtected";
/// On a Namespace: its `workshop.io/accept-mirrors-from` cannot be read.
pub const INVALID_ACCEPT_MIRRORS_FROM: &str = "InvalidAcceptMirrorsFrom";
/// On a MirrorGrant: it cannot be read, and lets nothing in.
pub const INVALID_MIRROR_GRANT: &str = "InvalidMirrorGrant";
pub const COPY_CONTESTED: &str = "CopyContested";
/// Raised for mirrors too: named before there were mirrors.
pub const COMPANION_REJECTED: &str = "CompanionRejected";
/// Raised for mirrors too: named before there were mirrors.
pub const COMPANION_FORBIDDEN: &str = "CompanionForbidden";
pub const COPY_KEY_REFUSED: &str = "CopyKeyRefused";
/// On a ClusterMirror: another install of the same class wrote its status.
pub const CLUSTER_MIRROR_CLASS_CONFLICT: &str = "ClusterMirrorClassConflict";
/// On a copy whose ClusterMirror is gone without its deletion having
/// been seen: it is kept, as an orphan. Once per ClusterMirror name.
pub const CLUSTER_MIRROR_COPY_ORPHANED: &str = "CopyOrphaned";
/// The keys copied leave out one the Secret's type requires (also `Ready`'s reason).
pub const KEYS_BREAK_TYPE: &str = "KeysBreakType";
/// An exact key to copy is not in the source (also a ClusterMirror failure).
pub const KEY_MISSING: &str = "KeyMissing";
/// A copy would hold more than the API server accepts (also a
/// ClusterMirror failure): it is not built.
pub const COPY_TOO_LARGE: &str = "CopyTooLarge";
/// A source's `workshop.io/mirror-keys` cannot be read: no copy changes.
pub const INVALID_MIRROR_KEYS: &str = "InvalidMirrorKeys";
/// A source's `workshop.io/mirror-name` is no name its mirrors can bear:
/// none is written, and those in namespaces still asked for are kept.
pub const INVALID_MIRROR_NAME: &str = "InvalidMirrorName";
