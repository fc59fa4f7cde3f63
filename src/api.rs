//! The custom resources this controller serves, as users write them: their
//! Rust types, from which the CRDs are generated (`configmap-mirror crd`,
//! `make manifests`). Like [`crate::contract`], a floor with no I/O: it
//! reads the contract only, and every layer above may read it.

pub mod cluster_mirror;
pub mod mirror;
pub mod mirror_grant;

pub use cluster_mirror::{
    ClusterMirror, ClusterMirrorSpec, ClusterMirrorStatus, CopyType, DeletionPolicy, Failure,
    SourceKind, SourceRef, Target, TargetKey,
    stored::{StoredClusterMirror, StoredStatus, UnreadableSpec},
};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// The CRDs of this controller's API, as installed.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        ClusterMirror::crd(),
        mirror::Mirror::crd(),
        mirror_grant::MirrorGrant::crd(),
    ]
}

/// [`crds`] as one YAML stream, each document after a `---`: what
/// `configmap-mirror crd` prints and the chart and plain manifests hold.
pub fn crds_yaml() -> Result<String, serde_saphyr::SerializeError> {
    let mut yaml = String::new();
    for crd in crds() {
        yaml.push_str("---\n");
        yaml.push_str(&serde_saphyr::to_string(&crd)?);
    }
    Ok(yaml)
}
