//! What a ClusterMirror's or a Mirror's reconcile found, told: its status
//! (written with server-side apply only when it changes, at most once a
//! second), one Event per distinct Ready condition (on the ClusterMirror
//! or Mirror, never in a target namespace) and its gauge of namespaces by
//! state.

use std::time::{Duration, Instant};

use k8s_openapi::{api::core::v1::ObjectReference, jiff::Timestamp};
use kube::{
    Api, Resource, ResourceExt,
    api::{Patch, PatchParams},
};
use serde_json::json;

use crate::{
    api::{
        ClusterMirrorStatus, StoredClusterMirror, cluster_mirror::reason,
        mirror::stored::StoredMirror,
    },
    contract::warning::CLUSTER_MIRROR_CLASS_CONFLICT,
    decisions::cluster_mirror::status::{self, ready_reason},
    decisions::cluster_mirror::status_writers::other_status_writers,
    decisions::request_key::{RequestKey, RequestKind},
    reconcile::error::Error,
};

use super::{caches::ClusterMirrorCaches, loop_context::LoopContext, sync::Found};

/// The least time between two status writes of one ClusterMirror.
pub const STATUS_WRITE_INTERVAL: Duration = Duration::from_secs(1);

/// Tells what `found` says of `object`. Returns how long to wait before a
/// status write that had to wait for [`STATUS_WRITE_INTERVAL`], if one did.
pub async fn report(
    object: &StoredClusterMirror,
    found: &Found,
    cluster_mirrors: &ClusterMirrorCaches,
    ctx: &LoopContext,
) -> Result<Option<Duration>, Error> {
    let name = RequestKey::of_meta(&object.metadata);
    if !still_served(&name, found, cluster_mirrors) {
        return Ok(None);
    }
    let cached = object.stored_status();
    let (last_written, written_at, told) = {
        let reported = cluster_mirrors.reported();
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
        .set_request_targets(&name, [tally.selected, tally.synced, tally.failures.len()]);
    let reason = ready_reason(tally, found.blocked.as_ref(), found.suspended);
    if told != Some(reason) {
        tell(object, reason, &wanted, ctx);
        cluster_mirrors
            .reported()
            .entry(name.clone())
            .or_default()
            .told = Some(reason);
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
    write_status(&name, wanted, cluster_mirrors, ctx).await
}

/// Whether the ClusterMirror a reconcile began on is, as the cache holds it
/// now, still of this install's class and of the generation the reconcile
/// read. A reconcile still running when its class changed (a hand-over)
/// ends without metrics, Events or a status: the install now serving it
/// reports, and this one has forgotten it. After a spec change, the
/// reconcile the change queued reports instead.
fn still_served(name: &RequestKey, found: &Found, cluster_mirrors: &ClusterMirrorCaches) -> bool {
    cluster_mirrors.mirrors.object(name).is_some_and(|current| {
        cluster_mirrors.serves_class(&current) && current.metadata.generation == found.generation
    })
}

/// Writes `wanted` as the status of the ClusterMirror or Mirror `name`,
/// and keeps it as this install's last write.
async fn write_status(
    name: &RequestKey,
    wanted: ClusterMirrorStatus,
    cluster_mirrors: &ClusterMirrorCaches,
    ctx: &LoopContext,
) -> Result<Option<Duration>, Error> {
    ctx.ensure_leading()?;
    let (api_version, kind) = api_version_and_kind(name);
    let mut patch = json!({
        "apiVersion": api_version,
        "kind": kind,
        "status": wanted,
    });
    // Every field of the status, `failures` too when there are none: a
    // value an install of another class wrote before a hand-over is set
    // here, so none stays behind (an apply leaves alone the fields it does
    // not name, when another field manager set them).
    if let Some(status) = patch["status"].as_object_mut() {
        status.entry("failures").or_insert_with(|| json!([]));
    }
    // Named after the install: whose write a status is shows in its
    // managedFields (see `status_written`).
    let params = PatchParams::apply(&cluster_mirrors.install.field_manager).force();
    // Its answer is read leniently too: a spec this version cannot read
    // makes no successful write look failed.
    let written = match &name.namespace {
        None => Api::<StoredClusterMirror>::all(ctx.client.clone())
            .patch_status(&name.name, &params, &Patch::Apply(&patch))
            .await
            .map(|_| ()),
        Some(namespace) => Api::<StoredMirror>::namespaced(ctx.client.clone(), namespace)
            .patch_status(&name.name, &params, &Patch::Apply(&patch))
            .await
            .map(|_| ()),
    };
    match written {
        Ok(()) => {}
        // Deleted meanwhile: nothing to report on.
        Err(kube::Error::Api(status)) if status.is_not_found() => return Ok(None),
        Err(error) => return Err(Error::Transient(error)),
    }
    let mut reported = cluster_mirrors.reported();
    let entry = reported.entry(name.clone()).or_default();
    entry.status = Some(wanted);
    entry.written_at = Some(Instant::now());
    Ok(None)
}

/// The status of the ClusterMirror `name` was written: when by another
/// install of this controller, a person is told (once per install) that
/// two installs serve its class, if it wrote for the spec as it is; if it
/// wrote for an earlier spec (the install of its class before a hand-over,
/// finishing late), the ClusterMirror is returned, to be reconciled and
/// its status written again. Only the install that `serves` it, and only
/// while leading, looks.
pub fn status_written(
    name: &RequestKey,
    serves: impl Fn(&StoredClusterMirror) -> bool,
    cluster_mirrors: &ClusterMirrorCaches,
    ctx: &LoopContext,
) -> Option<RequestKey> {
    let object = cluster_mirrors.mirrors.object(name)?;
    if !serves(&object) {
        return None;
    }
    if !ctx.is_leading() {
        return None;
    }
    let last_written = cluster_mirrors
        .reported()
        .get(name)
        .and_then(|e| e.status.clone());
    let stored_is_not_own_write =
        last_written.is_some_and(|own| object.stored_status() != Some(&own));
    let others = other_status_writers(
        &object.metadata,
        &cluster_mirrors.install.field_manager,
        stored_is_not_own_write,
    );
    if others.is_empty() {
        return None;
    }
    if object.observed_generation() != object.metadata.generation {
        // This install's last write is no longer what is stored: forgotten,
        // so that the reconcile returned writes the status again.
        if let Some(entry) = cluster_mirrors.reported().get_mut(name) {
            entry.status = None;
        }
        return Some(name.clone());
    }
    tell_conflicts(name, &object, others, cluster_mirrors, ctx);
    None
}

/// Tells a person, once per other install, that it wrote the status of the
/// ClusterMirror `name` for its current spec: two installs serve its class.
fn tell_conflicts(
    name: &RequestKey,
    object: &StoredClusterMirror,
    others: Vec<String>,
    cluster_mirrors: &ClusterMirrorCaches,
    ctx: &LoopContext,
) {
    for manager in others {
        let mut reported = cluster_mirrors.reported();
        let told = &mut reported.entry(name.clone()).or_default().conflicts_told;
        if told.contains(&manager) {
            continue;
        }
        told.push(manager.clone());
        drop(reported);
        let class = match cluster_mirrors.install.class.as_str() {
            "" => "no class".to_owned(),
            class => format!("class {class:?}"),
        };
        let kind = name.kind().name();
        let message = format!(
            "another install (field manager {manager}) wrote this {kind}'s status for its \
             current spec: two installs serve {kind}s of {class} \
             (--cluster-mirror-class), and its status and copies flap between them; give each \
             install a class of its own"
        );
        tracing::warn!(request = %name, reason = CLUSTER_MIRROR_CLASS_CONFLICT, "{message}");
        ctx.events
            .warning_about(regarding(object), CLUSTER_MIRROR_CLASS_CONFLICT, message);
    }
}

/// One Event per distinct Ready condition, on the ClusterMirror.
fn tell(
    object: &StoredClusterMirror,
    reason: &'static str,
    status: &ClusterMirrorStatus,
    ctx: &LoopContext,
) {
    let message = status
        .conditions
        .first()
        .map(|ready| ready.message.clone())
        .unwrap_or_default();
    let name = RequestKey::of_meta(&object.metadata);
    match reason {
        reason::SYNCED | reason::SUSPENDED => {
            tracing::info!(request = %name, reason, "{message}");
            ctx.events.normal_about(regarding(object), reason, message);
        }
        _ => {
            tracing::warn!(request = %name, reason, "{message}");
            ctx.events.warning_about(regarding(object), reason, message);
        }
    }
}

/// The ClusterMirror or Mirror, as its Events name it.
fn regarding(object: &StoredClusterMirror) -> ObjectReference {
    let (api_version, kind) = api_version_and_kind(&RequestKey::of_meta(&object.metadata));
    ObjectReference {
        api_version: Some(api_version),
        kind: Some(kind),
        name: Some(object.name_any()),
        namespace: object.metadata.namespace.clone(),
        uid: object.metadata.uid.clone(),
        ..ObjectReference::default()
    }
}

/// The `apiVersion` and `kind` of the object of `key`.
fn api_version_and_kind(key: &RequestKey) -> (String, String) {
    match key.kind() {
        RequestKind::ClusterMirror => (
            StoredClusterMirror::api_version(&()).into_owned(),
            StoredClusterMirror::kind(&()).into_owned(),
        ),
        RequestKind::Mirror => (
            StoredMirror::api_version(&()).into_owned(),
            StoredMirror::kind(&()).into_owned(),
        ),
    }
}

/// Forgets the failures told of ClusterMirrors no longer in the cache.
pub fn forget_failures_of_the_gone(cluster_mirrors: &ClusterMirrorCaches, ctx: &LoopContext) {
    let state = cluster_mirrors.mirrors.store.state();
    let live: std::collections::HashSet<&str> = (state.iter())
        .filter_map(|object| object.metadata.uid.as_deref())
        .collect();
    let of = crate::reconcile::backoff::Of::ClusterMirrors;
    (ctx.backoffs).retain(crate::ops::metrics::Loop::sync, of, |uid| {
        live.contains(uid)
    });
}

/// The ClusterMirrors and Mirrors reported on that the cache no longer
/// holds (deleted while the watch was relisting, say) leave nothing behind:
/// no status record, no gauge, no count in the Mirrors' sums.
pub fn forget_the_gone(cluster_mirrors: &ClusterMirrorCaches, ctx: &LoopContext) {
    let reported: Vec<RequestKey> = cluster_mirrors.reported().keys().cloned().collect();
    for key in reported {
        if cluster_mirrors.mirrors.object(&key).is_none() {
            forget(&key, cluster_mirrors, ctx);
        }
    }
}

/// A ClusterMirror or Mirror that is gone leaves nothing behind here.
pub fn forget(name: &RequestKey, cluster_mirrors: &ClusterMirrorCaches, ctx: &LoopContext) {
    cluster_mirrors.reported().remove(name);
    cluster_mirrors.stand(name, None);
    cluster_mirrors.forget_writes(name);
    ctx.metrics.forget_request(name);
}
