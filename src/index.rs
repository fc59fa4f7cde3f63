//! What the controller knows of the cluster, held in memory and kept up to
//! date from the watches: the caches the reconciles read, the indexes that
//! answer "which copies, sources or namespaces" without a scan, and the
//! rules of whom each watch event wakes. No I/O: `cluster::watches` feeds
//! these and sends the wakeups they decide.

pub(crate) mod admitting_namespaces;
pub(crate) mod caches;
pub(crate) mod copy_index;
pub(crate) mod grants;
pub(crate) mod mirroring_sources;
pub(crate) mod source_bytes;
pub(crate) mod wakeups;
