//! A Mirror as the API server stores it, read leniently as a ClusterMirror
//! is (see [`StoredClusterMirror`]), into the same form: the one the loop
//! that serves both queues and reads. Its spec is what the Mirror asks,
//! said as a ClusterMirror's spec with its source in the Mirror's
//! namespace ([`MirrorSpec::as_cluster_mirror_spec`]); its namespace tells
//! it from a ClusterMirror.

use std::borrow::Cow;

use k8s_openapi::{NamespaceResourceScope, apimachinery::pkg::apis::meta::v1::ObjectMeta};
use kube::Resource;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::{Mirror, MirrorSpec};
use crate::api::cluster_mirror::stored::{StoredClusterMirror, read_spec_with};

/// A Mirror as stored, in the form the loop reads.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredMirror(pub StoredClusterMirror);

impl StoredMirror {
    /// Reads `metadata`, `spec` and `status` as stored.
    pub fn read(metadata: ObjectMeta, spec: Option<&Value>, status: Option<&Value>) -> Self {
        let namespace = metadata.namespace.clone().unwrap_or_default();
        let spec_read = read_spec_with(spec, |spec| {
            MirrorSpec::deserialize(spec).map(|spec| spec.as_cluster_mirror_spec(&namespace))
        });
        StoredMirror(StoredClusterMirror::read_with(metadata, spec_read, status))
    }
}

impl<'de> Deserialize<'de> for StoredMirror {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (metadata, spec, status) = StoredClusterMirror::sent(deserializer)?;
        Ok(StoredMirror::read(metadata, spec.as_ref(), status.as_ref()))
    }
}

/// The resource of [`Mirror`].
impl Resource for StoredMirror {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Mirror::kind(&())
    }

    fn group(_: &()) -> Cow<'_, str> {
        Mirror::group(&())
    }

    fn version(_: &()) -> Cow<'_, str> {
        Mirror::version(&())
    }

    fn api_version(_: &()) -> Cow<'_, str> {
        Mirror::api_version(&())
    }

    fn plural(_: &()) -> Cow<'_, str> {
        Mirror::plural(&())
    }

    fn meta(&self) -> &ObjectMeta {
        &self.0.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.0.metadata
    }
}
