//! How an install tells itself apart from another: the field manager of
//! its ClusterMirror status writes (which names it), the class of the
//! ClusterMirrors it serves, and the label on what it creates for itself.

use sha2::{Digest, Sha256};

use super::MANAGER_NAME;

/// On an object an install created for its own use (its digest key): what
/// it is to the install. Such an object is never a source, of any install,
/// on either path: copying it out would hand over what the install keeps.
pub const INSTALL_OWNED_LABEL: &str = "workshop.io/install-owned";
/// [`INSTALL_OWNED_LABEL`]'s value on the key of Secret copies' checksums.
pub const DIGEST_KEY_ROLE: &str = "digest-key";

/// The longest field manager the API server accepts.
const MAX_FIELD_MANAGER_LEN: usize = 128;
/// How many hex digits of a hash stand for a name too long to spell out.
const HASH_DIGITS: usize = 16;

/// The field manager of the install whose Lease is `lease` in `namespace`:
/// `configmap-mirror/<namespace>/<lease>`. Two installs never share a
/// Lease, so never a field manager: whose write a status is can be read in
/// its `managedFields`. A name too long for the API server (128
/// characters) is cut, and ends with a hash of the whole.
pub fn field_manager(namespace: &str, lease: &str) -> String {
    let whole = format!("{MANAGER_NAME}/{namespace}/{lease}");
    if whole.len() <= MAX_FIELD_MANAGER_LEN {
        return whole;
    }
    let hash = hex::encode(Sha256::digest(whole.as_bytes()));
    // Every character of a namespace or a Lease name is ASCII.
    let kept = MAX_FIELD_MANAGER_LEN - HASH_DIGITS - 1;
    format!("{}-{}", &whole[..kept], &hash[..HASH_DIGITS])
}

/// Whether `manager` is the field manager of an install of this
/// controller: one that names its install, or the bare name earlier
/// releases wrote under.
pub fn is_install_field_manager(manager: &str) -> bool {
    manager == MANAGER_NAME
        || manager
            .strip_prefix(MANAGER_NAME)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_manager_names_the_install_by_its_lease() {
        assert_eq!(
            field_manager("platform", "configmap-mirror"),
            "configmap-mirror/platform/configmap-mirror"
        );
        assert_ne!(
            field_manager("a", "configmap-mirror"),
            field_manager("b", "configmap-mirror")
        );
    }

    #[test]
    fn a_field_manager_too_long_is_cut_and_stays_apart() {
        let lease = "l".repeat(200);
        let one = field_manager("team-a", &lease);
        let other = field_manager("team-b", &lease);
        assert_eq!(one.len(), MAX_FIELD_MANAGER_LEN);
        assert_ne!(one, other);
        assert!(one.starts_with("configmap-mirror/team-a/lll"));
    }

    #[test]
    fn an_install_s_field_manager_is_told_from_others() {
        assert!(is_install_field_manager("configmap-mirror"));
        assert!(is_install_field_manager("configmap-mirror/ns/lease"));
        assert!(!is_install_field_manager("configmap-mirror-test"));
        assert!(!is_install_field_manager("kubectl"));
    }
}
