//! Lists of namespace names and globs, as sources (`mirror-to`) and
//! namespaces (`accept-mirrors-from`) write them, and the `*` globs they,
//! a ClusterMirror's namespaces and a key shape's entries hold.

use std::ops::Range;

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
pub(crate) fn parse_patterns(key: &str, text: &str) -> Result<Vec<Glob>, String> {
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
                Ok(Glob::new(pattern))
            } else {
                Err(format!(
                    "{key}: {pattern:?} is neither a namespace name nor a glob \
                     (lowercase letters, digits, '-' and '*', comma-separated)"
                ))
            }
        })
        .collect()
}

/// A name, or a glob where `*` matches any run of characters and
/// everything else itself, compiled once: its literal runs between the
/// stars. It is matched without allocating, in time linear in the name's
/// length whatever the glob: the prefix and suffix are compared in place,
/// and each run between them is found leftmost after the one before (for
/// globs of `*` alone, the leftmost match leaves the most room to the
/// runs after it, so this finds a match whenever there is one), once the
/// name is known to be long enough to hold every run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    text: String,
    /// The literal runs, as ranges of `text`: the prefix (before the first
    /// `*`), the runs between stars that are not empty, and the suffix
    /// (after the last `*`). Empty when `text` holds no `*`.
    runs: Vec<Range<usize>>,
    /// The bytes every matching name holds at least: those of the runs.
    literal_len: usize,
}

impl Glob {
    pub fn new(text: &str) -> Glob {
        let mut runs = Vec::new();
        let mut start = 0;
        for (at, _) in text.match_indices('*') {
            // Between two stars, an empty run matches anywhere.
            if runs.is_empty() || at > start {
                runs.push(start..at);
            }
            start = at + 1;
        }
        if !runs.is_empty() {
            runs.push(start..text.len());
        }
        let literal_len = match runs.is_empty() {
            true => text.len(),
            false => runs.iter().map(ExactSizeIterator::len).sum(),
        };
        Glob {
            text: text.to_owned(),
            runs,
            literal_len,
        }
    }

    /// The glob as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether it holds a `*` (else it is an exact name).
    pub fn has_star(&self) -> bool {
        !self.runs.is_empty()
    }

    /// What every name it matches begins with: the text before its first
    /// `*`, or the whole name.
    pub fn prefix(&self) -> &str {
        match self.runs.first() {
            Some(prefix) => &self.text[prefix.clone()],
            None => &self.text,
        }
    }

    pub fn matches(&self, name: &str) -> bool {
        let Some((prefix, rest)) = self.runs.split_first() else {
            return self.text == name;
        };
        let Some((suffix, middles)) = rest.split_last() else {
            return false;
        };
        if name.len() < self.literal_len {
            return false;
        }
        let (prefix, suffix) = (&self.text[prefix.clone()], &self.text[suffix.clone()]);
        if !name.starts_with(prefix) || !name.ends_with(suffix) {
            return false;
        }
        // Both fit apart, as the length says: the middle runs lie between.
        let mut between = &name[prefix.len()..name.len() - suffix.len()];
        for run in middles {
            let run = &self.text[run.clone()];
            match between.find(run) {
                Some(at) => between = &between[at + run.len()..],
                None => return false,
            }
        }
        true
    }
}

impl std::fmt::Display for Glob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
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
mod tests;
