//! What a ClusterMirror's reconcile found, told: its status (written with
//! server-side apply only when it changes, at most once a second), one
//! Event per distinct Ready condition (on the ClusterMirror, never in a
//! target namespace) and its gauge of namespaces by state.

use std::time::{Duration, Instant};

use k8s_openapi::{api::core::v1::ObjectReference, jiff::Timestamp};
use kube::{
    Api, ResourceExt,
    api::{DynamicObject, Patch, PatchParams},
};
use serde::Deserialize;
use serde_json::json;

use crate::{
    api::{ClusterMirrorStatus, cluster_mirror::reason},
    contract::MANAGER_NAME,
    decisions::cluster_mirror::status::{self, ready_reason},
    kind::MirroredKind,
    reconcile::context::Context,
    reconcile::error::Error,
};

use super::{side::ClusterMirrorSide, sync::Found};

/// The least time between two status writes of one ClusterMirror.
pub const STATUS_WRITE_INTERVAL: Duration = Duration::from_secs(1);

/// Tells what `found` says of `object`. Returns how long to wait before a
/// status write that had to wait for [`STATUS_WRITE_INTERVAL`], if one did.
pub async fn report<K: MirroredKind>(
    object: &DynamicObject,
    found: &Found,
    side: &ClusterMirrorSide<K>,
    ctx: &Context<K>,
) -> Result<Option<Duration>, Error> {
    let name = object.name_any();
    // A status this controller cannot read is replaced, as if absent.
    let cached = object
        .data
        .get("status")
        .and_then(|status| ClusterMirrorStatus::deserialize(status).ok());
    let cached = cached.as_ref();
    let (last_written, written_at, told) = {
        let reported = side.reported();
        let entry = reported.get(&name);
        (
            entry.and_then(|e| e.status.clone()),
            entry.and_then(|e| e.written_at),
            entry.and_then(|e| e.told),
        )
    };
    let previous = last_written.as_ref().or(cached);
    // Whole seconds, as the API server keeps them.
    let now =
        Timestamp::from_second(Timestamp::now().as_second()).unwrap_or_else(|_| Timestamp::now());
    let wanted = status::status(
        found.generation,
        &found.tally,
        found.blocked.as_ref(),
        found.suspended,
        previous,
        now,
    );
    let tally = &found.tally;
    ctx.metrics
        .set_cluster_mirror_targets(&name, [tally.selected, tally.synced, tally.failures.len()]);
    let reason = ready_reason(tally, found.blocked.as_ref(), found.suspended);
    if told != Some(reason) {
        tell(object, reason, &wanted, ctx);
        side.reported().entry(name.clone()).or_default().told = Some(reason);
    }
    if status::unchanged(cached, &wanted) || status::unchanged(last_written.as_ref(), &wanted) {
        return Ok(None);
    }
    if let Some(at) = written_at {
        let since = at.elapsed();
        if since < STATUS_WRITE_INTERVAL {
            return Ok(Some(STATUS_WRITE_INTERVAL - since));
        }
    }
    ctx.ensure_leading()?;
    let api = Api::<DynamicObject>::all_with(ctx.client.clone(), &side.mirrors.resource);
    let patch = json!({
        "apiVersion": side.mirrors.resource.api_version,
        "kind": side.mirrors.resource.kind,
        "status": wanted,
    });
    let params = PatchParams::apply(MANAGER_NAME).force();
    match api
        .patch_status(&name, &params, &Patch::Apply(&patch))
        .await
    {
        Ok(_) => {}
        // Deleted meanwhile: nothing to report on.
        Err(kube::Error::Api(status)) if status.is_not_found() => return Ok(None),
        Err(error) => return Err(Error::Transient(error)),
    }
    let mut reported = side.reported();
    let entry = reported.entry(name).or_default();
    entry.status = Some(wanted);
    entry.written_at = Some(Instant::now());
    Ok(None)
}

/// One Event per distinct Ready condition, on the ClusterMirror.
fn tell<K: MirroredKind>(
    object: &DynamicObject,
    reason: &'static str,
    status: &ClusterMirrorStatus,
    ctx: &Context<K>,
) {
    let message = status
        .conditions
        .first()
        .map(|ready| ready.message.clone())
        .unwrap_or_default();
    let regarding = ObjectReference {
        api_version: Some(format!(
            "{}/{}",
            crate::contract::CLUSTER_MIRROR_GROUP,
            crate::contract::CLUSTER_MIRROR_VERSION
        )),
        kind: Some(crate::contract::CLUSTER_MIRROR_KIND.into()),
        name: Some(object.name_any()),
        uid: object.metadata.uid.clone(),
        ..ObjectReference::default()
    };
    let name = object.name_any();
    match reason {
        reason::SYNCED | reason::SUSPENDED => {
            tracing::info!(clustermirror = %name, reason, "{message}");
            ctx.events.normal_about(regarding, reason, message);
        }
        _ => {
            tracing::warn!(clustermirror = %name, reason, "{message}");
            ctx.events.warning_about(regarding, reason, message);
        }
    }
}

/// A ClusterMirror that is gone leaves nothing behind here.
pub fn forget<K: MirroredKind>(name: &str, side: &ClusterMirrorSide<K>, ctx: &Context<K>) {
    side.reported().remove(name);
    side.stand(name, None);
    ctx.metrics.forget_cluster_mirror(name);
}
