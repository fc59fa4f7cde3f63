use super::*;

/// The matcher before globs were compiled, kept as the reference the
/// compiled one must agree with.
fn reference_matches(pattern: &str, name: &str) -> bool {
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

/// Every word over `alphabet` of at most `max_len` characters.
fn words(alphabet: &[char], max_len: usize) -> Vec<String> {
    let mut all = vec![String::new()];
    let mut last = vec![String::new()];
    for _ in 0..max_len {
        last = (last.iter())
            .flat_map(|word| alphabet.iter().map(move |c| format!("{word}{c}")))
            .collect();
        all.extend(last.iter().cloned());
    }
    all
}

fn matches(pattern: &str, name: &str) -> bool {
    Glob::new(pattern).matches(name)
}

#[test]
fn globs_match_prefixes_suffixes_and_middles() {
    assert!(matches("team-*", "team-a"));
    assert!(matches("team-*", "team-"));
    assert!(!matches("team-*", "teams"));
    assert!(matches("*-prod", "payments-prod"));
    assert!(matches("a*b*c", "axxbyyc"));
    assert!(!matches("a*b*c", "axxc"));
    assert!(matches("payments", "payments"));
    assert!(!matches("payments", "payments-2"));
    assert!(matches("*", "anything"));
    assert!(matches("*", ""));
    assert!(matches("**", "x"));
    assert!(!matches("ab*ba", "aba"));
    assert!(matches("ab*ba", "abba"));
    assert!(!matches("a*a", "a"));
}

/// Every glob of up to six characters over `a`, `b` and `*`, against every
/// name of up to seven over `a` and `b`: the compiled glob says what the
/// reference matcher says.
#[test]
fn a_compiled_glob_matches_as_the_reference_on_every_small_case() {
    let names = words(&['a', 'b'], 7);
    let mut compared = 0;
    for pattern in words(&['a', 'b', '*'], 6) {
        let glob = Glob::new(&pattern);
        for name in &names {
            assert_eq!(
                glob.matches(name),
                reference_matches(&pattern, name),
                "{pattern:?} against {name:?}"
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 1093 * 255);
}

/// The exclusion of the hostile shape (a star between every character of
/// a long run) against keys that hold it, nearly hold it, or hold none of
/// it: the same answers as the reference.
#[test]
fn the_hostile_glob_matches_as_the_reference() {
    let hostile: String = format!("*{}1*", "q*".repeat(124));
    assert_eq!(hostile.len(), 251);
    let glob = Glob::new(&hostile);
    let keys = [
        "k0".to_owned(),
        "q".repeat(124) + "1",
        "q".repeat(123) + "1",
        format!("x{}y1z", "q".repeat(200)),
        "q".repeat(253),
        "1".repeat(253),
    ];
    for key in &keys {
        assert_eq!(glob.matches(key), reference_matches(&hostile, key), "{key}");
    }
    assert!(glob.matches(&keys[1]));
    assert!(!glob.matches(&keys[2]), "one q short");
    assert!(!glob.matches(&keys[4]), "no 1");
}

#[test]
fn a_glob_tells_its_prefix_and_whether_it_is_exact() {
    assert_eq!(Glob::new("team-*-prod").prefix(), "team-");
    assert_eq!(Glob::new("*").prefix(), "");
    assert_eq!(Glob::new("payments").prefix(), "payments");
    assert!(!Glob::new("payments").has_star());
    assert!(Glob::new("pay*").has_star());
    assert_eq!(Glob::new("a*b").as_str(), "a*b");
}

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
