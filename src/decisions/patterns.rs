//! Lists of namespace names and globs, as sources (`mirror-to`) and
//! namespaces (`accept-mirrors-from`) write them, and how a glob matches a
//! name.

/// How many names and globs one source may list: enough for any list a
/// person writes (a glob covers the rest), and a bound on the work one
/// tenant's source costs per namespace.
pub const MAX_PATTERNS: usize = 100;
/// How many bytes one list may hold: room for [`MAX_PATTERNS`] names of 63
/// characters with a comma and a space after each. Without it, the cost of
/// a list (each parse, each error that quotes an entry, and what the
/// caches keep of it) would follow the annotation's length, which the API
/// server bounds only at 256 KiB.
pub const MAX_PATTERNS_LEN: usize = 8192;

/// A list of namespace names and globs, as annotation `key` holds it.
pub(crate) fn parse_patterns(key: &str, text: &str) -> Result<Vec<String>, String> {
    // Checked before anything is scanned, so that the message quotes
    // nothing of it. It says no length: a cached list is kept cut short.
    if text.len() > MAX_PATTERNS_LEN {
        return Err(format!(
            "{key} is over the limit of {MAX_PATTERNS_LEN} bytes"
        ));
    }
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

/// Cuts `text`, if over [`MAX_PATTERNS_LEN`], to its shortest beginning
/// that is still over it: a list too long is refused whatever it holds, so
/// that beginning is refused alike, and costs no more than that to keep.
pub(crate) fn cut_over_long(text: &mut String) {
    if text.len() <= MAX_PATTERNS_LEN {
        return;
    }
    let end = (MAX_PATTERNS_LEN + 1..=text.len())
        .find(|at| text.is_char_boundary(*at))
        .unwrap_or(text.len());
    text.truncate(end);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_over_its_length_is_refused_without_being_quoted() {
        let full = vec!["a".repeat(63); MAX_PATTERNS].join(", ");
        assert!(full.len() <= MAX_PATTERNS_LEN, "{}", full.len());
        assert_eq!(
            parse_patterns("k", &full).map(|p| p.len()),
            Ok(MAX_PATTERNS)
        );
        let long = "b".repeat(256 * 1024);
        let why = parse_patterns("k", &long).unwrap_err();
        assert_eq!(why, "k is over the limit of 8192 bytes");
        let one_over = format!("{} ", "c".repeat(MAX_PATTERNS_LEN));
        assert!(parse_patterns("k", &one_over).is_err());
    }

    #[test]
    fn a_list_cut_short_is_still_over_the_limit_and_refused() {
        for filler in ["d", "\u{e9}", "\u{3000}"] {
            let mut text = format!("team-a,{}", filler.repeat(MAX_PATTERNS_LEN));
            cut_over_long(&mut text);
            assert!(text.len() > MAX_PATTERNS_LEN, "{filler:?}");
            assert!(
                text.len() <= MAX_PATTERNS_LEN + 4,
                "{filler:?}: {}",
                text.len()
            );
            assert!(parse_patterns("k", &text).is_err(), "{filler:?}");
        }
        let mut short = "team-a, team-b".to_owned();
        cut_over_long(&mut short);
        assert_eq!(short, "team-a, team-b");
    }

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
