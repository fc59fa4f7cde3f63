//! Which ClusterMirror or Mirror a request, a copy or a wakeup is about:
//! the one key the loop that serves both queues, reports and forgets
//! them by. Pure.

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResourceExt;

use crate::{
    api::{ClusterMirror, mirror::Mirror},
    contract::{CLUSTER_MIRROR_LABEL, MIRROR_LABEL, cluster_mirror_of, namespaced_mirror_of},
};

/// A ClusterMirror by name, or a Mirror by namespace and name. A
/// ClusterMirror and a Mirror of one name are two requests.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestKey {
    /// The Mirror's namespace; None for a ClusterMirror.
    pub namespace: Option<String>,
    pub name: String,
}

impl RequestKey {
    pub fn cluster_mirror(name: &str) -> RequestKey {
        RequestKey {
            namespace: None,
            name: name.to_owned(),
        }
    }

    pub fn mirror(namespace: &str, name: &str) -> RequestKey {
        RequestKey {
            namespace: Some(namespace.to_owned()),
            name: name.to_owned(),
        }
    }

    /// The key of the object of `meta`: a Mirror's when it has a
    /// namespace, else a ClusterMirror's.
    pub fn of_meta(meta: &ObjectMeta) -> RequestKey {
        RequestKey {
            namespace: meta.namespace.clone(),
            name: meta.name.clone().unwrap_or_default(),
        }
    }

    /// The request a copy's marks say wrote it, if any.
    pub fn of_copy(copy: &ObjectMeta) -> Option<RequestKey> {
        if let Some(name) = cluster_mirror_of(copy) {
            return Some(RequestKey::cluster_mirror(name));
        }
        namespaced_mirror_of(copy).map(|(namespace, name)| RequestKey::mirror(namespace, name))
    }

    /// As a message names it: `ClusterMirror NAME`, `Mirror NAMESPACE/NAME`.
    pub fn said(&self) -> String {
        match &self.namespace {
            None => format!("ClusterMirror {}", self.name),
            Some(namespace) => format!("Mirror {namespace}/{}", self.name),
        }
    }

    /// Whether `copy`'s marks say this request wrote it.
    pub fn marks(&self, copy: &ObjectMeta) -> bool {
        match &self.namespace {
            None => cluster_mirror_of(copy) == Some(self.name.as_str()),
            Some(namespace) => {
                cluster_mirror_of(copy).is_none()
                    && namespaced_mirror_of(copy) == Some((namespace.as_str(), self.name.as_str()))
            }
        }
    }

    /// The label selector of the objects that may be its copies: those
    /// carrying its label; for a Mirror, [`marks`](Self::marks) tells its
    /// own from those of Mirrors of its name in other namespaces.
    pub fn copies_selector(&self) -> String {
        match &self.namespace {
            None => format!("{CLUSTER_MIRROR_LABEL}={}", self.name),
            Some(_) => format!("{MIRROR_LABEL}={}", self.name),
        }
    }

    pub fn is_mirror(&self) -> bool {
        self.namespace.is_some()
    }

    pub fn kind(&self) -> RequestKind {
        RequestKind::of(self)
    }
}

/// As `explain` takes it: `clustermirror/NAME` or `mirror/NAMESPACE/NAME`.
impl fmt::Display for RequestKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            None => write!(f, "clustermirror/{}", self.name),
            Some(namespace) => write!(f, "mirror/{namespace}/{}", self.name),
        }
    }
}

/// The CRD a request is an object of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    ClusterMirror,
    Mirror,
}

impl RequestKind {
    pub fn of(key: &RequestKey) -> RequestKind {
        match key.is_mirror() {
            false => RequestKind::ClusterMirror,
            true => RequestKind::Mirror,
        }
    }

    pub fn crd_name(self) -> &'static str {
        match self {
            RequestKind::ClusterMirror => ClusterMirror::crd_name(),
            RequestKind::Mirror => Mirror::crd_name(),
        }
    }

    /// The kind, as the API names it.
    pub fn name(self) -> &'static str {
        match self {
            RequestKind::ClusterMirror => "ClusterMirror",
            RequestKind::Mirror => "Mirror",
        }
    }
}
