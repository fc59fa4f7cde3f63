//! The cluster I/O that is not a reconcile's: the clients for calls and
//! for watches (every call bounded by one deadline), the watches that fill
//! the caches of [`crate::index`] (the ClusterMirrors' and their sources'
//! too), the probe that tells an outage from a wedge, the key of Secret
//! digests, what of the API server's answers may be told (`relayed`), the
//! Events, and leader election's Lease (`lease`). The writes of copies,
//! the fresh reads of sources and a ClusterMirror's status patch are the
//! reconciles' own, in [`crate::reconcile`].

pub(crate) mod api_client;
pub(crate) mod api_probe;
pub(crate) mod call_deadline;
pub(crate) mod cluster_mirrors;
pub(crate) mod cluster_sources;
pub(crate) mod digest_key;
pub(crate) mod events;
pub(crate) mod lease;
pub(crate) mod ratelimit;
pub(crate) mod relayed;
pub(crate) mod watch_stream;
pub(crate) mod watches;
