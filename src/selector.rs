//! Label selectors in their string form (`a=b,c!=d,e in (x,y),!f`), parsed
//! and matched without the API server: for the namespaces a source mirrors
//! into, the namespaces that consent, and the label keys a copy must not
//! carry.

use std::collections::BTreeMap;

/// One term of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

/// A parsed selector: every requirement must hold. Empty selects everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector(Vec<Requirement>);

impl Selector {
    pub fn parse(text: &str) -> Result<Selector, String> {
        if text.trim().is_empty() {
            return Ok(Selector::default());
        }
        split_terms(text)
            .map(|term| parse_term(term.trim()))
            .collect::<Result<_, _>>()
            .map(Selector)
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|requirement| requirement.matches(labels))
    }

    /// The label keys this selector constrains.
    pub fn keys(&self) -> Vec<String> {
        self.0.iter().map(|r| r.key().to_owned()).collect()
    }
}

impl Requirement {
    fn key(&self) -> &str {
        match self {
            Requirement::Equals(k, _)
            | Requirement::NotEquals(k, _)
            | Requirement::Exists(k)
            | Requirement::NotExists(k)
            | Requirement::In(k, _)
            | Requirement::NotIn(k, _) => k,
        }
    }

    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(self.key());
        match self {
            Requirement::Equals(_, v) => value == Some(v),
            Requirement::NotEquals(_, v) => value != Some(v),
            Requirement::Exists(_) => value.is_some(),
            Requirement::NotExists(_) => value.is_none(),
            Requirement::In(_, vs) => value.is_some_and(|value| vs.contains(value)),
            Requirement::NotIn(_, vs) => value.is_none_or(|value| !vs.contains(value)),
        }
    }
}

fn parse_term(term: &str) -> Result<Requirement, String> {
    let bad = || format!("cannot parse selector term {term:?}");
    if let Some(key) = term.strip_prefix('!') {
        return Ok(Requirement::NotExists(
            valid_key(key.trim()).ok_or_else(bad)?,
        ));
    }
    for (operator, build) in [
        (
            "!=",
            Requirement::NotEquals as fn(String, String) -> Requirement,
        ),
        ("==", Requirement::Equals),
        ("=", Requirement::Equals),
    ] {
        if let Some((key, value)) = term.split_once(operator) {
            let key = valid_key(key.trim()).ok_or_else(bad)?;
            let value = valid_value(value.trim()).ok_or_else(bad)?;
            return Ok(build(key, value));
        }
    }
    for (operator, build) in [
        (
            " notin ",
            Requirement::NotIn as fn(String, Vec<String>) -> Requirement,
        ),
        (" in ", Requirement::In),
    ] {
        if let Some((key, set)) = term.split_once(operator) {
            let key = valid_key(key.trim()).ok_or_else(bad)?;
            let values = set
                .trim()
                .strip_prefix('(')
                .and_then(|s| s.strip_suffix(')'))
                .ok_or_else(bad)?
                .split(',')
                .map(|v| valid_value(v.trim()).ok_or_else(bad))
                .collect::<Result<_, _>>()?;
            return Ok(build(key, values));
        }
    }
    Ok(Requirement::Exists(valid_key(term).ok_or_else(bad)?))
}

/// `[prefix/]name`, as Kubernetes label keys are.
fn valid_key(key: &str) -> Option<String> {
    let name = key.rsplit_once('/').map_or(key, |(prefix, name)| {
        let prefix_ok = !prefix.is_empty()
            && prefix.len() <= 253
            && prefix
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
        if prefix_ok { name } else { "" }
    });
    is_label_token(name, false).then(|| key.to_owned())
}

fn valid_value(value: &str) -> Option<String> {
    is_label_token(value, true).then(|| value.to_owned())
}

fn is_label_token(token: &str, may_be_empty: bool) -> bool {
    if token.is_empty() {
        return may_be_empty;
    }
    let alphanumeric_ends = token.starts_with(|c: char| c.is_ascii_alphanumeric())
        && token.ends_with(|c: char| c.is_ascii_alphanumeric());
    token.len() <= 63
        && alphanumeric_ends
        && token
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Splits on the commas that separate terms, not those inside `in (a,b)`.
fn split_terms(selector: &str) -> impl Iterator<Item = &str> {
    let mut depth = 0usize;
    let mut start = 0usize;
    let mut terms = Vec::new();
    for (i, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                terms.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&selector[start..]);
    terms.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mk_labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn every_term_shape_parses_and_matches() {
        let selector = Selector::parse("a=1, b!=2,c,!d,e in (x,y),f notin (z),g==3").unwrap();
        let labels = mk_labels(&[("a", "1"), ("b", "9"), ("c", ""), ("e", "y"), ("g", "3")]);
        assert!(selector.matches(&labels));
        assert_eq!(selector.keys(), vec!["a", "b", "c", "d", "e", "f", "g"]);
        let mut wrong = labels.clone();
        wrong.insert("d".into(), "present".into());
        assert!(!selector.matches(&wrong));
    }

    #[test]
    fn an_empty_selector_selects_everything() {
        assert!(Selector::parse("").unwrap().matches(&BTreeMap::new()));
    }

    #[test]
    fn prefixed_keys_are_accepted() {
        let selector = Selector::parse("workshop.io/accept-mirrors=true").unwrap();
        assert!(selector.matches(&mk_labels(&[("workshop.io/accept-mirrors", "true")])));
        assert!(!selector.matches(&mk_labels(&[("workshop.io/accept-mirrors", "false")])));
    }

    #[test]
    fn malformed_selectors_are_refused() {
        for text in [
            "a=b=c",
            "=x",
            "a in x",
            "a in (x",
            "Bad Key=1",
            "a=-x",
            ",",
            "a/=1",
        ] {
            assert!(Selector::parse(text).is_err(), "{text} parsed");
        }
    }
}
