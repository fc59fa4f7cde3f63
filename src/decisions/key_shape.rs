//! Which keys of a source its copies hold, and under which names: a key
//! shape, read from a source's `workshop.io/mirror-keys` or a
//! ClusterMirror's `target.keys` and `target.excludeKeys` (one type for
//! both), and the copy's keys it gives a content.
//!
//! The annotation is a comma-separated list (whitespace around entries
//! trimmed) of:
//! - `key` or a `*` glob: copy the matching keys; when any is given, only
//!   what they name is copied;
//! - `key=new-name`: copy an exact key under a new name;
//! - `!glob` (or `!key`): never copy the matching keys, whatever includes
//!   them.
//!
//! Where the shape is silent:
//! - A shape of exclusions only copies every other key, as a ClusterMirror
//!   with `excludeKeys` and no `keys` does.
//! - Exclusions match a source's key names, not the names they are copied
//!   under: `a=b,!a` copies nothing of `a`.
//! - A key an exact entry names is copied as that entry says (and as each
//!   entry says, when several name it: `a,a=b` copies `a` twice); globs
//!   never copy it again under its own name.
//! - The names exact entries copy into are theirs: a key a glob matches
//!   whose name is one of them is left out (`*,a=b` does not copy the
//!   source's own `b`), so that no two keys are copied into one name.
//! - An exact key the source lacks is reported (`KeyMissing`); a glob that
//!   matches nothing is not.
//! - Keys are matched across `data` and `binaryData`; a key keeps its field.
//!
//! Pure.

pub mod checksum;
pub mod content;
pub mod secret_type;
pub mod spec;

use crate::{
    api::cluster_mirror::rules, contract::MIRROR_KEYS_ANNOTATION,
    decisions::patterns::glob_matches, kind::Field,
};

/// The most entries of each list of a ClusterMirror's shape, and of the
/// whole annotation.
pub const MAX_KEY_ENTRIES: usize = rules::MAX_KEY_ENTRIES as usize;
/// The longest key Kubernetes accepts in a ConfigMap or a Secret.
pub const MAX_KEY_LEN: usize = rules::MAX_KEY_LEN as usize;

/// What a copy holds of its source's keys.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeyShape {
    /// What is copied before exclusions; None: every key.
    includes: Option<Vec<Include>>,
    /// Keys and globs never copied.
    excludes: Vec<String>,
}

/// One entry of what a shape copies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Include {
    /// An exact key, copied under `copy_as` when given, else its own name.
    Exact {
        key: String,
        copy_as: Option<String>,
    },
    /// Every key the glob matches, each under its own name.
    Glob(String),
}

impl Include {
    /// The name an exact entry copies into; None for a glob.
    fn copied_name(&self) -> Option<&str> {
        match self {
            Include::Exact { key, copy_as } => Some(copy_as.as_deref().unwrap_or(key)),
            Include::Glob(_) => None,
        }
    }
}

/// A source's key, as a shape sees it: `value` is whatever goes with it
/// (a borrowed value to build a copy, a digest to checksum one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceKey<'a, V> {
    pub field: Field,
    pub key: &'a str,
    pub value: V,
}

/// A key a copy holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopiedKey<V> {
    pub field: Field,
    /// Its name in the copy.
    pub name: String,
    /// Its name in the source, when it is renamed.
    pub renamed_from: Option<String>,
    pub value: V,
}

/// Why a source's key is not in its copies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeftOut {
    /// No entry of the shape names it.
    NotNamed,
    /// This exclusion matches it.
    Excluded(String),
    /// A glob matches it, but an exact entry copies another key into its
    /// name.
    NameTaken { by: String },
}

/// A content shaped: the keys the copy holds, sorted by their name in it,
/// and what the shape asked for that is not there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shaped<V> {
    pub copied: Vec<CopiedKey<V>>,
    /// Exact keys the shape copies that the source lacks (`KeyMissing`).
    pub missing: Vec<String>,
    /// The source's keys the copy does not hold, and why (for `explain`).
    pub left_out: Vec<(String, LeftOut)>,
}

impl<V> Shaped<V> {
    /// Whether the copy holds every key of the source under its own name:
    /// then its content is the source's.
    pub fn holds_every_key_as_is(&self) -> bool {
        self.left_out.is_empty() && self.copied.iter().all(|key| key.renamed_from.is_none())
    }

    /// The names the copy holds.
    #[cfg(test)]
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.copied.iter().map(|key| key.name.as_str())
    }
}

impl KeyShape {
    /// Every key, as a copy without a shape holds.
    pub const EVERY_KEY: KeyShape = KeyShape {
        includes: None,
        excludes: Vec::new(),
    };

    /// A shape from its entries, checked as the annotation and the
    /// ClusterMirror's rules check them; an error names the entry and why.
    /// No includes: every key.
    pub fn new(includes: Vec<Include>, excludes: Vec<String>) -> Result<KeyShape, String> {
        // Each list has its own limit, as the CRD has; the annotation's one
        // limit over both is checked where it is parsed.
        for (list, count) in [("keys", includes.len()), ("excludeKeys", excludes.len())] {
            if count > MAX_KEY_ENTRIES {
                return Err(format!(
                    "{count} entries in {list}, over the limit of {MAX_KEY_ENTRIES}"
                ));
            }
        }
        for include in &includes {
            check_include(include)?;
        }
        for exclude in &excludes {
            check_key_or_glob(exclude).map_err(|why| format!("!{exclude:?}: {why}"))?;
        }
        check_copied_names(&includes)?;
        Ok(KeyShape {
            includes: (!includes.is_empty()).then_some(includes),
            excludes,
        })
    }

    /// The shape `workshop.io/mirror-keys` says; an error, shown as is in
    /// a Warning Event, names the entry and why.
    pub fn parse_annotation(text: &str) -> Result<KeyShape, String> {
        let key = MIRROR_KEYS_ANNOTATION;
        if text.trim().is_empty() {
            return Err(format!(
                "{key} is empty: list the keys to copy, or remove it to copy every key"
            ));
        }
        let count = text.split(',').count();
        if count > MAX_KEY_ENTRIES {
            return Err(format!(
                "{key} lists {count} entries, over the limit of {MAX_KEY_ENTRIES}"
            ));
        }
        let (mut includes, mut excludes) = (Vec::new(), Vec::new());
        for entry in text.split(',').map(str::trim) {
            match parse_entry(entry).map_err(|why| format!("{key}: {entry:?}: {why}"))? {
                Entry::Include(include) => includes.push(include),
                Entry::Exclude(glob) => excludes.push(glob),
            }
        }
        KeyShape::new(includes, excludes).map_err(|why| format!("{key}: {why}"))
    }

    /// Whether the shape copies every key as it is (no include narrows, no
    /// exclusion): a copy without a shape.
    pub fn is_every_key(&self) -> bool {
        self.includes.is_none() && self.excludes.is_empty()
    }

    /// The exact keys the shape copies, each with the name it copies into.
    pub fn exact_keys(&self) -> impl Iterator<Item = (&str, &str)> {
        self.includes
            .iter()
            .flatten()
            .filter_map(|include| match include {
                Include::Exact { key, copy_as } => Some((key.as_str(), include_name(key, copy_as))),
                Include::Glob(_) => None,
            })
    }

    /// Whether the shape copies only exact keys: what a Secret's keys
    /// published as a ConfigMap must be named by.
    pub fn names_exact_keys_only(&self) -> bool {
        let includes = self.includes.iter().flatten();
        self.includes.is_some() && includes.clone().all(|i| matches!(i, Include::Exact { .. }))
    }

    /// The exclusion that matches `key`, if any.
    fn exclusion_of(&self, key: &str) -> Option<&str> {
        let excludes = self.excludes.iter();
        excludes
            .map(String::as_str)
            .find(|glob| glob_matches(glob, key))
    }

    /// The copy's keys from `keys` (a content's, each at most once), and
    /// what is not there. Only the values copied are kept; the others are
    /// dropped as they come.
    pub fn shape<'a, V: Clone>(
        &self,
        keys: impl IntoIterator<Item = SourceKey<'a, V>>,
    ) -> Shaped<V> {
        let mut shaped = Shaped {
            copied: Vec::new(),
            missing: Vec::new(),
            left_out: Vec::new(),
        };
        let mut seen: Vec<&str> = Vec::new();
        for key in keys {
            seen.push(key.key);
            if let Some(glob) = self.exclusion_of(key.key) {
                shaped
                    .left_out
                    .push((key.key.into(), LeftOut::Excluded(glob.into())));
                continue;
            }
            match self.copies_of(key.key) {
                Ok(names) => shaped
                    .copied
                    .extend(names.into_iter().map(|(name, renamed)| CopiedKey {
                        field: key.field,
                        name,
                        renamed_from: renamed.then(|| key.key.to_owned()),
                        value: key.value.clone(),
                    })),
                Err(why) => shaped.left_out.push((key.key.into(), why)),
            }
        }
        shaped.missing = self
            .exact_keys()
            .map(|(key, _)| key)
            .filter(|key| !seen.contains(key) && self.exclusion_of(key).is_none())
            .map(str::to_owned)
            .collect();
        shaped.missing.sort();
        shaped.missing.dedup();
        shaped.copied.sort_by(|a, b| a.name.cmp(&b.name));
        shaped
    }

    /// The names a key not excluded is copied under, each with whether it
    /// is a rename; or why it is not copied.
    fn copies_of(&self, key: &str) -> Result<Vec<(String, bool)>, LeftOut> {
        let Some(includes) = &self.includes else {
            return Ok(vec![(key.to_owned(), false)]);
        };
        let exact: Vec<(String, bool)> = self
            .exact_keys()
            .filter(|(exact, _)| *exact == key)
            .map(|(_, name)| (name.to_owned(), name != key))
            .collect();
        if !exact.is_empty() {
            return Ok(exact);
        }
        let globbed = includes
            .iter()
            .any(|i| matches!(i, Include::Glob(glob) if glob_matches(glob, key)));
        if !globbed {
            return Err(LeftOut::NotNamed);
        }
        match self.exact_keys().find(|(_, name)| *name == key) {
            Some((by, _)) => Err(LeftOut::NameTaken { by: by.to_owned() }),
            None => Ok(vec![(key.to_owned(), false)]),
        }
    }
}

fn include_name<'a>(key: &'a str, copy_as: &'a Option<String>) -> &'a str {
    copy_as.as_deref().unwrap_or(key)
}

enum Entry {
    Include(Include),
    Exclude(String),
}

fn parse_entry(entry: &str) -> Result<Entry, String> {
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
        None if entry.contains('*') => Include::Glob(entry.to_owned()),
        None => Include::Exact {
            key: entry.to_owned(),
            copy_as: None,
        },
    };
    check_include(&include)?;
    Ok(Entry::Include(include))
}

fn check_include(include: &Include) -> Result<(), String> {
    match include {
        Include::Glob(glob) => check_key_or_glob(glob).map_err(|why| format!("{glob:?}: {why}")),
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
fn check_copied_names(includes: &[Include]) -> Result<(), String> {
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
pub fn check_key(key: &str) -> Result<(), String> {
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
fn check_key_or_glob(text: &str) -> Result<(), String> {
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

#[cfg(test)]
mod tests;
