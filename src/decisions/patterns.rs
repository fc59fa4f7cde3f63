//! Lists of namespace names and globs, as sources (`mirror-to`) and
//! namespaces (`accept-mirrors-from`) write them, and how a glob matches a
//! name.

/// How many names and globs one source may list: enough for any list a
/// person writes (a glob covers the rest), and a bound on the work one
/// tenant's source costs per namespace.
pub const MAX_PATTERNS: usize = 100;

/// A list of namespace names and globs, as annotation `key` holds it.
pub(crate) fn parse_patterns(key: &str, text: &str) -> Result<Vec<String>, String> {
    // Counted before anything is parsed or allocated.
    let count = text.split(',').count();
    if count > MAX_PATTERNS {
        return Err(format!(
            "{key} lists {count} names or globs, over the limit of {MAX_PATTERNS}"
        ));
    }
    text.split(',')
        .map(str::trim)
        .map(|pattern| {
            let valid = !pattern.is_empty()
                && pattern.len() <= 63
                && pattern
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '*');
            if valid {
                Ok(pattern.to_owned())
            } else {
                Err(format!(
                    "{key}: {pattern:?} is neither a namespace name nor a glob \
                     (lowercase letters, digits, '-' and '*', comma-separated)"
                ))
            }
        })
        .collect()
}

/// `*` matches any run of characters, everything else itself.
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let middle: Vec<&str> = parts.collect();
    let Some((last, between)) = middle.split_last() else {
        return rest.is_empty();
    };
    for part in between {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_prefixes_suffixes_and_middles() {
        assert!(glob_matches("team-*", "team-a"));
        assert!(glob_matches("team-*", "team-"));
        assert!(!glob_matches("team-*", "teams"));
        assert!(glob_matches("*-prod", "payments-prod"));
        assert!(glob_matches("a*b*c", "axxbyyc"));
        assert!(!glob_matches("a*b*c", "axxc"));
        assert!(glob_matches("payments", "payments"));
        assert!(!glob_matches("payments", "payments-2"));
        assert!(glob_matches("*", "anything"));
        assert!(!glob_matches("ab*ba", "aba"));
    }
}
