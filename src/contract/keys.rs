//! The contract of copies of chosen keys: the annotation a source names
//! them by, and how such a copy's checksum says what it covers.

/// On a source: which of its keys its copies hold, and under which names
/// (`key`, `*` globs, `key=new-name`, `!glob`; see
/// `decisions::key_shape`). Absent: every key.
pub const MIRROR_KEYS_ANNOTATION: &str = "workshop.io/mirror-keys";

/// How a copy of chosen keys (`workshop.io/mirror-keys`, a ClusterMirror's
/// `target.keys`) marks its checksum, which covers the keys it holds (see
/// `decisions::key_shape::checksum`): a ConfigMap copy's is this and a
/// SHA-256; a copy of a Secret's keys (a Secret, or a ConfigMap holding a
/// Secret's public part) has [`KEYED_KEYS_CHECKSUM_PREFIX`].
pub const KEYS_CHECKSUM_PREFIX: &str = "keys-sha256:";
/// The keyed form of [`KEYS_CHECKSUM_PREFIX`], as `hmac-sha256:` is of a
/// plain checksum.
pub const KEYED_KEYS_CHECKSUM_PREFIX: &str = "keys-hmac-sha256:";

/// Whether a copy's checksum is of the form a copy of chosen keys records.
pub fn is_keys_checksum(checksum: &str) -> bool {
    checksum.starts_with(KEYS_CHECKSUM_PREFIX) || checksum.starts_with(KEYED_KEYS_CHECKSUM_PREFIX)
}
