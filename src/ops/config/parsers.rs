//! The parsers of flag values: each checks a value as Kubernetes or the
//! controller would, and says why it refuses one.

use crate::{decisions::names, decisions::selector::Selector};

/// `NAMESPACE/NAME` of a Secret, each checked as Kubernetes checks it.
pub(crate) fn parse_namespaced_name(value: &str) -> Result<(String, String), String> {
    namespaced_name_of(value, "a Secret")
}

/// `NAMESPACE/NAME` of `what` (`a Secret`, `an object`), each checked as
/// Kubernetes checks it.
pub(crate) fn namespaced_name_of(value: &str, what: &str) -> Result<(String, String), String> {
    let (namespace, name) = value
        .split_once('/')
        .ok_or_else(|| format!("{value:?} is not NAMESPACE/NAME"))?;
    if !names::is_dns_subdomain(name) {
        return Err(format!("{name:?} is not {what} name"));
    }
    Ok((parse_namespace(namespace)?, name.to_owned()))
}

/// A key or a prefix ending in `*`, as the lists of keys to carry take
/// them; an empty one (`a,,b`, or an empty variable) stands for none.
pub(crate) fn parse_never_carry(value: &str) -> Result<String, String> {
    match value.trim() {
        "" => Ok(String::new()),
        entry => match crate::decisions::carried::key_or_prefix(entry) {
            Some(_) => Ok(entry.to_owned()),
            None => Err(format!(
                "{entry:?} is neither a label or annotation key nor a prefix ending in '*'"
            )),
        },
    }
}

pub(crate) fn parse_suffix(value: &str) -> Result<String, String> {
    if names::is_name_suffix(value) {
        Ok(value.to_owned())
    } else {
        Err(format!(
            "{value:?} would make invalid names: use lowercase letters, digits, '-' and '.', \
             with a letter or digit on both sides of each '.' and at the end"
        ))
    }
}

/// The source selector: it must parse as the API server would, and select
/// something less than every ConfigMap (copies included).
pub(crate) fn parse_source_selector(value: &str) -> Result<String, String> {
    if value.trim().is_empty() {
        return Err("an empty selector would make every ConfigMap a source".into());
    }
    parse_selector(value)
}

pub(crate) fn parse_selector(value: &str) -> Result<String, String> {
    Selector::parse(value).map(|_| value.to_owned())
}

pub(crate) fn parse_namespace(value: &str) -> Result<String, String> {
    valid_name(value, names::is_dns_label, "a namespace name (a DNS label)")
}

/// `value`, if `valid` says it is a name; else why not: it is not `what`.
fn valid_name(value: &str, valid: fn(&str) -> bool, what: &str) -> Result<String, String> {
    match valid(value) {
        true => Ok(value.to_owned()),
        false => Err(format!("{value:?} is not {what}")),
    }
}

/// An install class, as `spec.className` takes it: empty (the installs
/// without a class), or a DNS subdomain of at most 63 characters.
pub(crate) fn parse_class(value: &str) -> Result<String, String> {
    let value = value.trim();
    let max = crate::api::cluster_mirror::rules::MAX_CLASS_LEN;
    match value.is_empty() || (value.len() <= max && names::is_dns_subdomain(value)) {
        true => Ok(value.to_owned()),
        false => Err(format!(
            "{value:?} is not a class: empty, or lowercase letters, digits, '-' and '.' \
             (a DNS subdomain) of at most {max} characters"
        )),
    }
}

/// A namespace name; an empty one (`a,,b`, or an empty variable) stands
/// for none.
pub(crate) fn parse_optional_namespace(value: &str) -> Result<String, String> {
    match value.trim() {
        "" => Ok(String::new()),
        value => parse_namespace(value),
    }
}

pub(crate) fn parse_lease_name(value: &str) -> Result<String, String> {
    valid_name(
        value,
        names::is_dns_subdomain,
        "a Lease name (a DNS subdomain)",
    )
}

/// A name; an empty one (`a,,b`, or an empty variable) stands for none.
pub(crate) fn parse_object_name(value: &str) -> Result<String, String> {
    let value = value.trim();
    let empty_or_name = |value: &str| value.is_empty() || names::is_dns_subdomain(value);
    valid_name(value, empty_or_name, "a ConfigMap name")
}

/// A Secret type, as the API server takes it (at most 253 characters, no
/// space or comma); an empty one (`a,,b`, or an empty variable) stands for
/// none.
pub(crate) fn parse_secret_type(value: &str) -> Result<String, String> {
    let value = value.trim();
    match value.len() <= 253 && !value.contains(|c: char| c.is_whitespace() || c == ',') {
        true => Ok(value.to_owned()),
        false => Err(format!("{value:?} is not a Secret type")),
    }
}
