//! Label selectors in their string form (`a=b,c!=d,e in (x,y),!f`), parsed
//! and matched without the API server: for the namespaces a source mirrors
//! into, the namespaces that consent, and the label keys a copy must not
//! carry. kube parses no selector strings, so the parser is here; the
//! parsed selector is kube's own, which matches and prints it.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
};

use kube::core::{Expression, SelectorExt};

/// A parsed selector: every expression must hold. Empty selects everything.
/// Matched and printed as kube's own selector is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector(kube::core::Selector);

impl Selector {
    pub fn parse(text: &str) -> Result<Selector, String> {
        if text.trim().is_empty() {
            return Ok(Selector::default());
        }
        split_terms(text)
            .map(|term| parse_term(term.trim()))
            .collect::<Result<Vec<_>, _>>()
            .map(|expressions| Selector(expressions.into_iter().collect()))
    }

    /// A selector as Kubernetes objects spell it (`matchLabels`,
    /// `matchExpressions`); an empty one selects everything.
    pub fn of_label_selector(
        selector: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
    ) -> Result<Selector, String> {
        kube::core::Selector::try_from(selector)
            .map(Selector)
            .map_err(|e| e.to_string())
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.matches(labels)
    }

    /// The label keys this selector constrains.
    pub fn keys(&self) -> Vec<String> {
        self.0.clone().into_iter().map(key_of).collect()
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

fn key_of(expression: Expression) -> String {
    match expression {
        Expression::In(key, _)
        | Expression::NotIn(key, _)
        | Expression::Equal(key, _)
        | Expression::NotEqual(key, _)
        | Expression::Exists(key)
        | Expression::DoesNotExist(key) => key,
    }
}

fn parse_term(term: &str) -> Result<Expression, String> {
    let bad = || format!("cannot parse selector term {term:?}");
    if let Some(key) = term.strip_prefix('!') {
        return Ok(Expression::DoesNotExist(
            valid_key(key.trim()).ok_or_else(bad)?,
        ));
    }
    for (operator, build) in [
        (
            "!=",
            Expression::NotEqual as fn(String, String) -> Expression,
        ),
        ("==", Expression::Equal),
        ("=", Expression::Equal),
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
            Expression::NotIn as fn(String, BTreeSet<String>) -> Expression,
        ),
        (" in ", Expression::In),
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
    Ok(Expression::Exists(valid_key(term).ok_or_else(bad)?))
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
    use crate::test_fixtures::mk_map;

    #[test]
    fn every_term_shape_parses_and_matches() {
        let selector = Selector::parse("a=1, b!=2,c,!d,e in (x,y),f notin (z),g==3").unwrap();
        let labels = mk_map(&[("a", "1"), ("b", "9"), ("c", ""), ("e", "y"), ("g", "3")]);
        assert!(selector.matches(&labels));
        assert_eq!(selector.keys(), vec!["a", "b", "c", "d", "e", "f", "g"]);
        let mut wrong = labels.clone();
        wrong.insert("d".into(), "present".into());
        assert!(!selector.matches(&wrong));
    }

    #[test]
    fn a_selector_prints_as_it_parses() {
        let text = "a=1,b!=2,c,!d,e in (x,y),f notin (z)";
        let selector = Selector::parse(text).unwrap();
        assert_eq!(selector.to_string(), text);
        assert_eq!(Selector::parse(&selector.to_string()).unwrap(), selector);
    }

    #[test]
    fn an_empty_selector_selects_everything() {
        assert!(Selector::parse("").unwrap().matches(&BTreeMap::new()));
    }

    #[test]
    fn prefixed_keys_are_accepted() {
        let selector = Selector::parse("workshop.io/accept-mirrors=true").unwrap();
        assert!(selector.matches(&mk_map(&[("workshop.io/accept-mirrors", "true")])));
        assert!(!selector.matches(&mk_map(&[("workshop.io/accept-mirrors", "false")])));
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
