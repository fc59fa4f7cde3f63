//! The fresh reads of one namespace's sources, gathered into one batch:
//! who waits for which source, how fresh the answer must be, and whether
//! one LIST of the namespace or a GET per source answers them at less
//! cost. Pure: the I/O is `reconcile::source_read::coalesced`.
//!
//! A LIST returns every source of the namespace, wanted or not, so it is
//! cheaper than the GETs only while the namespace holds few sources more
//! than the batch waits for: one request's overhead on the API server is
//! worth a few objects' encoding, not thousands.

use std::collections::HashMap;

/// A LIST is made while the namespace held at most this many sources per
/// waiting one when it was last listed: a GET costs the API server about
/// as much as encoding this many sources into a LIST.
pub const SOURCES_LISTED_PER_WAITER: usize = 8;

/// How one batch is read.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadPlan {
    /// One LIST of the namespace's sources (paged), no older than this
    /// resourceVersion; None asks for a consistent read.
    List { not_older_than: Option<String> },
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

    /// How to read this batch, given how many sources the namespace held
    /// when last listed (None: never listed).
    pub fn plan(&self, sources_last_listed: Option<usize>) -> ReadPlan {
        if !may_list(sources_last_listed, self.by_name.len()) {
            return ReadPlan::EachGet;
        }
        ReadPlan::List {
            not_older_than: self.not_older_than().map(|version| version.to_string()),
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
/// GETs, in a namespace that held `sources_last_listed` sources when last
/// listed (None: never listed). With `waiting` the most reads that can
/// wait at once, false means a read need not wait for others at all.
pub fn may_list(sources_last_listed: Option<usize>, waiting: usize) -> bool {
    sources_last_listed.is_none_or(|held| held <= waiting.saturating_mul(SOURCES_LISTED_PER_WAITER))
}

/// A resourceVersion as a number: Kubernetes 1.35 and later make them
/// comparable (etcd's revisions). One that is not stays unordered.
fn comparable(resource_version: &str) -> Option<u64> {
    resource_version.parse().ok()
}

#[cfg(test)]
mod tests;
