//! The entries of a key shape, as `workshop.io/mirror-keys` and a
//! ClusterMirror's `keys` and `excludeKeys` write them: what each may be,
//! and the checks the API server would make of the keys they name.
//!
//! Pure.

use super::{Include, MAX_KEY_LEN};
use crate::decisions::patterns::Glob;

pub(super) enum Entry {
    Include(Include),
    Exclude(String),
}

pub(super) fn parse_entry(entry: &str) -> Result<Entry, String> {
    if entry.is_empty() {
        return Err("an empty entry (two commas in a row, or one at an end)".into());
    }
    if let Some(excluded) = entry.strip_prefix('!') {
        if excluded.contains('=') {
            return Err("an exclusion cannot rename".into());
        }
        check_key_or_glob(excluded)?;
        return Ok(Entry::Exclude(excluded.to_owned()));
    }
    let include = match entry.split_once('=') {
        Some((key, new_name)) => Include::Exact {
            key: key.to_owned(),
            copy_as: Some(new_name.to_owned()),
        },
        None if entry.contains('*') => Include::Glob(Glob::new(entry)),
        None => Include::Exact {
            key: entry.to_owned(),
            copy_as: None,
        },
    };
    check_include(&include)?;
    Ok(Entry::Include(include))
}

pub(super) fn check_include(include: &Include) -> Result<(), String> {
    match include {
        Include::Glob(glob) => {
            let glob = glob.as_str();
            check_key_or_glob(glob).map_err(|why| format!("{glob:?}: {why}"))
        }
        Include::Exact { key, copy_as } => {
            if key.contains('*') && copy_as.is_some() {
                return Err(format!(
                    "{key:?}: a glob cannot be renamed: only an exact key can"
                ));
            }
            check_key(key).map_err(|why| format!("{key:?}: {why}"))?;
            match copy_as {
                Some(name) => check_key(name).map_err(|why| format!("new name {name:?}: {why}")),
                None => Ok(()),
            }
        }
    }
}

/// No two exact entries copy into one name: neither two renames, nor a
/// rename onto a key another entry keeps, nor one key listed twice.
pub(super) fn check_copied_names(includes: &[Include]) -> Result<(), String> {
    let names: Vec<&str> = includes.iter().filter_map(Include::copied_name).collect();
    for (at, name) in names.iter().enumerate() {
        if names[..at].contains(name) {
            return Err(format!(
                "two entries copy into the key {name:?}: each name in the copy may come from \
                 one entry only"
            ));
        }
    }
    Ok(())
}

/// A key a ConfigMap or Secret may hold, as the API server checks it
/// (`IsConfigMapKey`).
pub(super) fn check_key(key: &str) -> Result<(), String> {
    if key.contains('*') {
        return Err("a key may not hold '*'".into());
    }
    check_key_or_glob(key)?;
    if key == "." || key == ".." {
        return Err("'.' and '..' are not keys".into());
    }
    Ok(())
}

/// A key or a `*` glob of keys.
pub(super) fn check_key_or_glob(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err("empty".into());
    }
    if text.len() > MAX_KEY_LEN {
        return Err(format!("longer than {MAX_KEY_LEN} characters"));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '*');
    match text.chars().find(|c| !allowed(*c)) {
        Some(c) => Err(format!(
            "{c:?} is not allowed: a key holds letters, digits, '-', '_' and '.'"
        )),
        None => Ok(()),
    }
}
