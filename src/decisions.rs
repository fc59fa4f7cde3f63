//! The pure decisions: what a source's copies should be (and which of its
//! labels and annotations they carry), whose an existing
//! object is, which single write brings a copy to what it should be,
//! whether a copy is still wanted, which namespaces a source asks for, and
//! how much of a source's copies a wakeup asks its reconcile to compare.
//! No I/O: the reconcile loops read the caches,
//! ask these functions, and carry out what they decide.

pub(crate) mod cache_form;
pub(crate) mod carried;
pub(crate) mod cluster_mirror;
pub(crate) mod consent;
pub(crate) mod copy_request;
pub(crate) mod copy_verdict;
pub(crate) mod desired_copy;
pub(crate) mod grants;
pub(crate) mod install;
pub(crate) mod key_secret;
pub(crate) mod key_shape;
pub(crate) mod mirror_name;
pub(crate) mod names;
pub(crate) mod owner_ref;
pub(crate) mod ownership;
pub(crate) mod patterns;
pub(crate) mod plan;
pub(crate) mod request_key;
pub(crate) mod scope;
pub(crate) mod secret_published;
pub(crate) mod selector;
pub(crate) mod source_asks;
pub(crate) mod targets;
