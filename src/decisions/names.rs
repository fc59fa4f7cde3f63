//! The shapes Kubernetes requires of object names, checked before a name
//! is ever sent: a flag that could only produce names the API server
//! refuses is refused at start instead. Pure.

/// Longest DNS subdomain name (most object names, Leases included).
pub const MAX_SUBDOMAIN_LEN: usize = 253;
/// Longest DNS label (namespace names, and each part of a subdomain).
pub const MAX_LABEL_LEN: usize = 63;

/// A DNS-1123 label: lowercase letters, digits and '-', starting and ending
/// with a letter or digit, at most 63 characters. Namespaces are named so.
pub fn is_dns_label(name: &str) -> bool {
    name.len() <= MAX_LABEL_LEN && is_label_part(name)
}

/// A DNS-1123 subdomain: labels joined by '.', at most 253 characters.
/// ConfigMaps, Secrets and Leases are named so.
pub fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= MAX_SUBDOMAIN_LEN && name.split('.').all(is_label_part)
}

/// Whether `<any valid name><suffix>` is a valid subdomain name too (when
/// short enough): the suffix continues the name's last part, which ends
/// in a letter or digit, so only its own parts are checked.
pub fn is_name_suffix(suffix: &str) -> bool {
    let mut parts = suffix.split('.');
    let continues_last = parts.next().unwrap_or_default();
    let continues_ok = continues_last.is_empty()
        || (continues_last.ends_with(|c: char| c.is_ascii_alphanumeric())
            && continues_last.chars().all(is_name_char));
    !suffix.is_empty()
        && suffix.len() < MAX_SUBDOMAIN_LEN
        && continues_ok
        && parts.all(is_label_part)
        && suffix != "."
}

fn is_label_part(part: &str) -> bool {
    !part.is_empty()
        && part.starts_with(|c: char| c.is_ascii_alphanumeric())
        && part.ends_with(|c: char| c.is_ascii_alphanumeric())
        && part.chars().all(is_name_char)
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `check` accepts each of `good` and refuses each of `bad`.
    fn tells_apart(check: fn(&str) -> bool, good: &[&str], bad: &[&str]) {
        for name in good {
            assert!(check(name), "{name:?} is refused");
        }
        for name in bad {
            assert!(!check(name), "{name:?} is accepted");
        }
    }

    #[test]
    fn labels_are_short_lowercase_and_end_in_letters_or_digits() {
        let long = "a".repeat(64);
        let bad = ["", "Team", "-a", "a-", "a.b", &long];
        tells_apart(is_dns_label, &["team-a", "a"], &bad);
    }

    #[test]
    fn subdomains_are_labels_joined_by_dots() {
        let long = "a".repeat(254);
        let bad = ["a..b", ".a", "a.", "a_b", "My-Lease", &long];
        tells_apart(is_dns_subdomain, &["configmap-mirror", "a.b-c.d"], &bad);
    }

    #[test]
    fn a_suffix_keeps_every_valid_name_valid() {
        for good in ["-synced", ".copy", "-x.y", "2", "-a.b.c"] {
            assert!(is_name_suffix(good), "{good:?}");
            assert!(is_dns_subdomain(&format!("colors{good}")), "{good:?}");
        }
        for bad in [
            "", ".", "..x", ".-x", "-Synced", "-synced-", "-x.", "-x..y", "_x", "-x.-y",
        ] {
            assert!(!is_name_suffix(bad), "{bad:?}");
        }
    }
}
