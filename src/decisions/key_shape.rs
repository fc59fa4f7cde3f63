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

use std::collections::HashSet;

use entries::{Entry, check_copied_names, check_include, check_key_or_glob, parse_entry};

pub mod checksum;
pub mod content;
pub mod copy_plan;
mod entries;
pub mod secret_type;
pub mod spec;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{
    api::cluster_mirror::rules,
    contract::{MIRROR_KEYS_ANNOTATION, annotation},
    decisions::patterns::Glob,
    kind::Field,
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
    excludes: Vec<Glob>,
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
    Glob(Glob),
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
    /// The source's keys the copy does not hold, and why (for `explain`):
    /// named only by [`KeyShape::shape_naming_left_out`].
    pub left_out: Vec<(String, LeftOut)>,
    /// Whether the copy leaves out any of the source's keys.
    pub leaves_any_out: bool,
}

impl<V> Shaped<V> {
    /// Whether the copy holds every key of the source under its own name:
    /// then its content is the source's.
    pub fn holds_every_key_as_is(&self) -> bool {
        !self.leaves_any_out && self.copied.iter().all(|key| key.renamed_from.is_none())
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
            excludes: excludes.iter().map(|glob| Glob::new(glob)).collect(),
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
        let mut excludes = self.excludes.iter();
        excludes.find(|glob| glob.matches(key)).map(Glob::as_str)
    }

    /// The copy's keys from `keys` (a content's, each at most once), and
    /// the exact keys named that the source lacks. Only the values copied
    /// are kept; the others are dropped as they come, and so are the names
    /// of the keys left out (see [`KeyShape::shape_naming_left_out`]).
    pub fn shape<'a, V: Clone>(
        &self,
        keys: impl IntoIterator<Item = SourceKey<'a, V>>,
    ) -> Shaped<V> {
        self.shape_keys(keys, false)
    }

    /// [`KeyShape::shape`], with each key left out named, and why: what
    /// `explain` tells. Costs a string per key left out.
    pub fn shape_naming_left_out<'a, V: Clone>(
        &self,
        keys: impl IntoIterator<Item = SourceKey<'a, V>>,
    ) -> Shaped<V> {
        self.shape_keys(keys, true)
    }

    fn shape_keys<'a, V: Clone>(
        &self,
        keys: impl IntoIterator<Item = SourceKey<'a, V>>,
        name_left_out: bool,
    ) -> Shaped<V> {
        let mut copied = Vec::new();
        let (mut leaves_any_out, mut named_left_out) = (false, Vec::new());
        // Only exact keys can be missing: the others need no record of
        // which keys were seen.
        let names_exact = self.exact_keys().next().is_some();
        let mut seen: HashSet<&str> = HashSet::new();
        for key in keys {
            if names_exact {
                seen.insert(key.key);
            }
            match self.copies_or_why(key.key, name_left_out) {
                Ok(names) => copied.extend(names.into_iter().map(|(name, renamed)| CopiedKey {
                    field: key.field,
                    name,
                    renamed_from: renamed.then(|| key.key.to_owned()),
                    value: key.value.clone(),
                })),
                Err(why) => {
                    leaves_any_out = true;
                    named_left_out.extend(why.map(|why| (key.key.to_owned(), why)));
                }
            }
        }
        let mut missing: Vec<String> = self
            .exact_keys()
            .map(|(key, _)| key)
            .filter(|key| !seen.contains(key) && self.exclusion_of(key).is_none())
            .map(str::to_owned)
            .collect();
        missing.sort();
        missing.dedup();
        copied.sort_by(|a: &CopiedKey<V>, b| a.name.cmp(&b.name));
        Shaped {
            copied,
            missing,
            left_out: named_left_out,
            leaves_any_out,
        }
    }

    /// The names `key` is copied under, each with whether it is a rename;
    /// or why it is not copied, when `name_why` asks (built only when told:
    /// an exclusion may leave out every key of a large source).
    fn copies_or_why(
        &self,
        key: &str,
        name_why: bool,
    ) -> Result<Vec<(String, bool)>, Option<LeftOut>> {
        if let Some(glob) = self.exclusion_of(key) {
            return Err(name_why.then(|| LeftOut::Excluded(glob.into())));
        }
        self.copies_of(key).map_err(|why| name_why.then_some(why))
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
            .any(|i| matches!(i, Include::Glob(glob) if glob.matches(key)));
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

/// The key shape a source's `workshop.io/mirror-keys` asks for; None when
/// it has none.
pub fn annotated(source: &ObjectMeta) -> Option<Result<KeyShape, String>> {
    annotation(source, MIRROR_KEYS_ANNOTATION).map(KeyShape::parse_annotation)
}

/// The key shape a source's `workshop.io/mirror-keys` asks for; every key
/// when it has none.
pub fn annotated_shape(source: &ObjectMeta) -> Result<KeyShape, String> {
    annotated(source).unwrap_or(Ok(KeyShape::EVERY_KEY))
}

#[cfg(test)]
mod tests;
