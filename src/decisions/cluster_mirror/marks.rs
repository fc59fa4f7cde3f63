//! The marks a ClusterMirror's copy bears for its ClusterMirror: the uid
//! it is bound to, and their removal when the copy is released.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::contract::{
    CONTROLLER_KEY_PREFIX, MANAGED_BY_LABEL, MIRROR_OF_UID_ANNOTATION, annotation,
};

/// The uid of the ClusterMirror a copy is bound to: the part of its
/// `mirror-of-uid` after the source's (see [`Request::bound_uid`]).
pub fn bound_cluster_mirror_uid(copy: &ObjectMeta) -> Option<&str> {
    let (_, uid) = annotation(copy, MIRROR_OF_UID_ANNOTATION)?.split_once('.')?;
    (!uid.is_empty()).then_some(uid)
}

/// Releases a copy (deletionPolicy `Orphan`): removes every label and
/// annotation of the controller's (the managed-by label and every
/// `workshop.io/` key), so that neither this controller nor the admission
/// policy takes it for a copy any more. Its content, and the labels and
/// annotations its ClusterMirror set, stay.
pub fn release(copy: &mut ObjectMeta) {
    let ours = |key: &String| key == MANAGED_BY_LABEL || key.starts_with(CONTROLLER_KEY_PREFIX);
    for entries in [&mut copy.labels, &mut copy.annotations]
        .into_iter()
        .flatten()
    {
        entries.retain(|key, _| !ours(key));
    }
    // What the API server recorded of earlier writers is its own to keep.
    copy.managed_fields = None;
}
