//! `spec.deletionPolicy`: what deleting a ClusterMirror does to its
//! copies.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What deleting a ClusterMirror does to its copies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Deserialize, Serialize, JsonSchema)]
pub enum DeletionPolicy {
    /// Its copies are deleted.
    #[default]
    Delete,
    /// Its copies stay, released: the controller's labels and annotations
    /// are removed, and nothing keeps them any more.
    Orphan,
}

impl DeletionPolicy {
    pub(crate) fn is_default(&self) -> bool {
        *self == DeletionPolicy::Delete
    }

    /// As the spec spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            DeletionPolicy::Delete => "Delete",
            DeletionPolicy::Orphan => "Orphan",
        }
    }

    /// Read as the spec spells it.
    pub fn parse(text: &str) -> Option<DeletionPolicy> {
        [DeletionPolicy::Delete, DeletionPolicy::Orphan]
            .into_iter()
            .find(|policy| policy.as_str() == text)
    }
}
