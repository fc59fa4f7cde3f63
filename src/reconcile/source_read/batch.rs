//! The fresh reads of one namespace's sources, gathered into one batch:
//! who waits for which source, how fresh the answer must be, and whether
//! one LIST of the namespace or a GET per source answers them at less
//! cost. Pure: the I/O is `reconcile::source_read::coalesced`.
//!
//! A LIST returns every source of the namespace, wanted or not, so it is
//! cheaper than the GETs only while the namespace holds little more than
//! the batch waits for: one request's overhead on the API server is worth
//! a few objects' encoding, not thousands, and the controller's memory
//! must follow the sources it writes, not what else their namespace
//! holds. Both are judged from the cache, which knows how many sources
//! each namespace holds and what they cost read (`index::source_bytes`).

use std::collections::HashMap;

/// A LIST is made while the namespace holds at most this many sources per
/// waiting one: a GET costs the API server about as much as encoding this
/// many sources into a LIST.
pub const SOURCES_LISTED_PER_WAITER: usize = 8;

/// A LIST is made only while the sources nobody in the batch waits for
/// cost at most this many bytes read, as cached: the most a read
/// holds that no write needs, whatever the namespace holds.
pub const UNWANTED_LIST_BYTES: u64 = 1 << 20;

/// A page of a LIST is sized to cost about this many bytes read (by
/// the namespace's mean source, as cached), and never more sources than
/// [`MOST_PER_PAGE`]; as a LIST is only made of a namespace whose sources
/// beyond those waited for hold [`UNWANTED_LIST_BYTES`] at most, no page
/// holds more than that beyond the sources being written.
pub const PAGE_BYTES: u64 = 4 << 20;
pub const MOST_PER_PAGE: u32 = 500;

/// What the cache holds of one namespace's sources.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NamespaceSources {
    pub count: usize,
    /// What they cost read, in bytes, each as cached.
    pub bytes: u64,
}

/// How one batch is read.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadPlan {
    /// One LIST of the namespace's sources, `page_size` a page, no older
    /// than `not_older_than`; None asks for a consistent read.
    List {
        not_older_than: Option<String>,
        page_size: u32,
    },
    /// One GET per source waited for.
    EachGet,
}

/// The reconciles waiting for a fresh read of sources of one namespace,
/// each with what it hands its answer to (`W`).
#[derive(Debug)]
pub struct Batch<W> {
    by_name: HashMap<String, Waiting<W>>,
}

/// Those waiting for one source.
#[derive(Debug)]
pub struct Waiting<W> {
    pub waiters: Vec<W>,
    /// The newest resourceVersion any of them cached, if every one of
    /// them had one that can be compared; else None (then the read must be
    /// a consistent one).
    pub not_older_than: Option<u64>,
    any_unversioned: bool,
}

impl<W> Default for Batch<W> {
    fn default() -> Self {
        Batch {
            by_name: HashMap::new(),
        }
    }
}

impl<W> Batch<W> {
    /// `waiter` waits for source `name`, cached at `resource_version`.
    pub fn add(&mut self, name: &str, resource_version: Option<&str>, waiter: W) {
        let waiting = self
            .by_name
            .entry(name.to_owned())
            .or_insert_with(|| Waiting {
                waiters: Vec::new(),
                not_older_than: None,
                any_unversioned: false,
            });
        waiting.waiters.push(waiter);
        match resource_version.and_then(comparable) {
            Some(version) if !waiting.any_unversioned => {
                waiting.not_older_than = waiting.not_older_than.max(Some(version));
            }
            _ => {
                waiting.any_unversioned = true;
                waiting.not_older_than = None;
            }
        }
    }

    /// Keeps only the waiters `is_waiting` says still wait (a cancelled
    /// reconcile no longer does).
    pub fn retain(&mut self, is_waiting: impl Fn(&W) -> bool) {
        for waiting in self.by_name.values_mut() {
            waiting.waiters.retain(&is_waiting);
        }
        self.by_name
            .retain(|_, waiting| !waiting.waiters.is_empty());
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// How to read this batch from a namespace whose sources the cache
    /// says are `held`, `bytes_of` each source's content (0 for one it
    /// does not hold), with pages of about `page_bytes`.
    pub fn plan(
        &self,
        held: NamespaceSources,
        bytes_of: impl Fn(&str) -> u64,
        page_bytes: u64,
    ) -> ReadPlan {
        let waited: u64 = self.by_name.keys().map(|name| bytes_of(name)).sum();
        let unwanted = held.bytes.saturating_sub(waited);
        if !may_list(held.count, self.by_name.len()) || unwanted > UNWANTED_LIST_BYTES {
            return ReadPlan::EachGet;
        }
        ReadPlan::List {
            not_older_than: self.not_older_than().map(|version| version.to_string()),
            page_size: page_size(held, page_bytes),
        }
    }

    /// The version a LIST must be no older than to answer every waiter as
    /// its own read would: the newest of theirs. None if any cannot be
    /// compared.
    fn not_older_than(&self) -> Option<u64> {
        let mut newest = 0;
        for waiting in self.by_name.values() {
            newest = newest.max(waiting.not_older_than?);
        }
        Some(newest)
    }

    /// Those waiting for `name`, taken out of the batch: a listed source
    /// nobody waits for gets None, and is dropped at once.
    pub fn take(&mut self, name: &str) -> Option<Waiting<W>> {
        self.by_name.remove(name)
    }

    /// Everyone still waiting, by source name: after a complete LIST,
    /// those whose source it did not hold (it is gone).
    pub fn drain(&mut self) -> impl Iterator<Item = (String, Waiting<W>)> + '_ {
        self.by_name.drain()
    }
}

/// Whether a LIST may answer `waiting` reads at less cost than their
/// GETs, in a namespace that holds `count` sources. With `waiting` the
/// most reads that can wait at once, false means a read need not wait for
/// others at all.
pub fn may_list(count: usize, waiting: usize) -> bool {
    count <= waiting.saturating_mul(SOURCES_LISTED_PER_WAITER)
}

/// How many sources a page of a LIST of `held` asks for: about
/// `page_bytes` of content by their mean size, at least one, at most
/// [`MOST_PER_PAGE`].
pub fn page_size(held: NamespaceSources, page_bytes: u64) -> u32 {
    let Some(mean) = held
        .bytes
        .checked_div(held.count as u64)
        .filter(|&mean| mean > 0)
    else {
        return MOST_PER_PAGE;
    };
    let fits = (page_bytes / mean).clamp(1, MOST_PER_PAGE.into());
    u32::try_from(fits).unwrap_or(MOST_PER_PAGE)
}

/// A resourceVersion as a number: Kubernetes 1.35 and later make them
/// comparable (etcd's revisions). One that is not stays unordered.
fn comparable(resource_version: &str) -> Option<u64> {
    resource_version.parse().ok()
}

#[cfg(test)]
mod tests;
