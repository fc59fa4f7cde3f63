//! configmap-mirror keeps, for every ConfigMap labeled
//! `workshop.io/managed=true`, an exact companion copy `<name>-synced` in the
//! same namespace, and heals it when it drifts.
//!
//! A source may also ask to be mirrored into other namespaces that consent
//! ([`decisions::targets`]).
//!
//! The folders are floors, ground first; each reads only the floors
//! beneath it (`layering_tests::FLOORS` states the order and checks it,
//! with no circle between files):
//! 1. [`contract`]: the labels, annotations, names and Event reasons users
//!    and other tools see, and the table of conditions a reconcile can end
//!    in;
//! 2. [`api`]: the custom resources users write (`ClusterMirror`), from
//!    which the CRDs are generated; like the contract, no I/O;
//! 3. [`kind`]: what differs between the kinds of object mirrored (only
//!    their content), behind one trait;
//! 4. [`decisions`]: the pure decisions, with no I/O;
//! 5. [`index`]: what the controller knows, in memory, with no I/O: the
//!    caches, the indexes of copies, sources and namespaces, and whom
//!    each watch event wakes;
//! 6. [`ops`]: operations: flags, health, leader election's protocol,
//!    metrics, the HTTP listener, logs and shutdown;
//! 7. [`cluster`]: the cluster I/O that is not a reconcile's: the API
//!    clients, the watches that fill the index, Events, the key of Secret
//!    digests, leader election's Lease;
//! 8. [`reconcile`]: the three reconcile loops (sync, prune, ClusterMirror)
//!    and their bookkeeping, with the I/O only a reconcile makes (the
//!    writes of copies, the fresh reads of sources, a ClusterMirror's
//!    status); and
//!    beside it [`explain`], the read-only `explain` subcommand: it reads
//!    the cluster as its caller and says why copies are or are not where
//!    their sources ask, with the decisions' own functions;
//! 9. [`app`] wires them together;
//! 10. `main`, the binary, runs it.
//!
//! Reading order for newcomers: [`contract`], [`decisions::desired_copy`] (what
//! every copy should be, from a source and [`decisions::install`]), [`decisions::ownership`] (whose an
//! existing object is), [`decisions::plan`] (what to write),
//! [`reconcile::sync`] and [`reconcile::prune`] (the label path's two
//! reconcile loops; [`reconcile::cluster_mirror`] is the third),
//! [`index::caches`] (what they read, in the forms of
//! [`decisions::cache_form`]), [`index::wakeups`] (what wakes them),
//! [`cluster::watches`] (what fills the caches and sends the wakeups), then
//! [`app`] (how it all runs).
#![forbid(unsafe_code)]
// This guide points into modules private to the crate: it is meant to be
// read with `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod api;
pub mod app;
pub(crate) mod cluster;
pub mod contract;
pub(crate) mod decisions;
pub mod explain;
pub(crate) mod index;
pub mod kind;
#[cfg(test)]
mod layering_tests;
pub mod ops;
pub mod reconcile;
#[cfg(test)]
pub(crate) mod test_fixtures;
