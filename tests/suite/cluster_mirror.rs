//! ClusterMirrors on the real control plane: an admin's request that
//! copies one source into every namespace it selects, with no tenant
//! consent, beside the label-driven mirrors and over the same loops.
//!
//! These run on the cluster-wide control plane of `mirroring`, one test at
//! a time (its `World`), with the CRD installed once.

mod classes;
mod explain;
mod heal_status;
mod kinds;
mod lifecycle;
mod names;
mod orphans;
mod prune_reads;
mod published;
mod refusals;
mod shaped;
mod status;
mod suspend;
mod tenant;
mod unreadable;
pub(crate) mod unseen_deletion;
mod walk;

use std::io::Write;
use std::process::{Command, Stdio};

use crate::common::{ControllerProcess, Objects, PATIENCE, TestKind, World};
use configmap_mirror::api::ClusterMirror;
use configmap_mirror::contract::{
    CLUSTER_MIRROR_LABEL, MANAGED_BY_LABEL, MANAGER_NAME, MIRROR_OF_ANNOTATION,
};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, Client, CustomResourceExt, ResourceExt,
    api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use testenv::ControlPlane;

/// The ClusterMirror resource, as its Rust type says it: the tests write
/// their specs as a person would, untyped (some of them invalid).
pub(crate) fn resource() -> ApiResource {
    ApiResource::erase::<ClusterMirror>(&())
}

pub(crate) fn cluster_mirrors(client: &Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &resource())
}

/// Installs the ClusterMirror CRD unless it is there, and waits until it
/// serves.
pub(crate) async fn install_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    // The CRD the chart ships, with its CEL rules and status schema: the
    // controller's spec reads and status writes must pass them.
    let crd = ClusterMirror::crd();
    match crds.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.is_already_exists() => {}
        Err(error) => panic!("install the ClusterMirror CRD: {error}"),
    }
    let api = cluster_mirrors(client);
    testenv::wait_for("the ClusterMirror CRD to serve", PATIENCE, || async {
        let crd = crds.get_opt(ClusterMirror::crd_name()).await.ok()??;
        let serving = crd.metadata.deletion_timestamp.is_none();
        (serving && api.list(&Default::default()).await.is_ok()).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

/// Deletes the CRD and waits until it is gone.
pub(crate) async fn delete_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.delete(ClusterMirror::crd_name(), &DeleteParams::default())
        .await
        .expect("delete the ClusterMirror CRD");
    testenv::wait_for("the ClusterMirror CRD to go", PATIENCE, || async {
        matches!(crds.get_opt(ClusterMirror::crd_name()).await, Ok(None)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

/// A newer CRD than this version's in place (see [`install_newer_crd`]):
/// whatever way the test ends,
/// when dropped it deletes the ClusterMirrors `made` and puts back the CRD
/// this version ships, so that no later test meets either.
pub(crate) struct NewerCrd {
    control_plane: &'static ControlPlane,
    pub(crate) made: Vec<String>,
}

impl Drop for NewerCrd {
    fn drop(&mut self) {
        // A drop cannot await: kubectl, as the other guards of the suite.
        let mut delete = self.control_plane.kubectl();
        delete
            .args([
                "delete",
                "clustermirrors",
                "--ignore-not-found",
                "--wait=false",
            ])
            .args(&self.made);
        let deleted = output(delete, None);
        let shipped = serde_json::to_string(&ClusterMirror::crd()).expect("the CRD as JSON");
        let mut replace = self.control_plane.kubectl();
        replace.args(["replace", "-f", "-"]);
        let replaced = output(replace, Some(&shipped));
        for (what, ran) in [
            ("delete the ClusterMirrors", deleted),
            ("put the CRD back", replaced),
        ] {
            assert!(ran.is_ok() || std::thread::panicking(), "{what}: {ran:?}");
        }
    }
}

/// Runs `command` with `stdin`; its stderr when it fails.
fn output(mut command: Command, stdin: Option<&str>) -> Result<(), String> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
    }
    let done = child.wait_with_output().map_err(|e| e.to_string())?;
    match done.status.success() {
        true => Ok(()),
        false => Err(String::from_utf8_lossy(&done.stderr).into_owned()),
    }
}

/// Replaces the CRD with this version's as `newer` changes it, as a newer
/// version's CRD would be; put back when the guard returned drops. The
/// API server validates and prunes by it a moment after it reads back
/// changed: the caller waits until a dry run says it does.
pub(crate) async fn install_newer_crd<K: TestKind>(
    world: &World<K>,
    newer: impl FnOnce(&mut Value),
) -> NewerCrd {
    let crds: Api<CustomResourceDefinition> = Api::all(world.scene.client.clone());
    let mut crd = crds.get(ClusterMirror::crd_name()).await.unwrap();
    crd.spec = ClusterMirror::crd().spec;
    let mut crd = serde_json::to_value(crd).unwrap();
    newer(&mut crd);
    let crd: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
    let guard = NewerCrd {
        control_plane: world.scene.control_plane,
        made: Vec::new(),
    };
    crds.replace(ClusterMirror::crd_name(), &PostParams::default(), &crd)
        .await
        .expect("replace the CRD");
    guard
}

/// A world for ClusterMirror tests: the CRD installed, the controller
/// allowed to copy from the test's own namespace.
pub(crate) async fn world<K: TestKind>(tag: &str) -> World<K> {
    world_with(tag, &[]).await
}

/// [`world`], its controller started with the flags `extra` too.
pub(crate) async fn world_with<K: TestKind>(tag: &str, extra: &[&str]) -> World<K> {
    let mut world = World::<K>::new_stopped(tag).await;
    install_crd(&world.scene.client).await;
    let sources = world.prefix.clone();
    let mut args = vec!["--cluster-mirror-source-namespaces", &sources];
    args.extend_from_slice(extra);
    world.start_with(&args).await;
    world
}

/// Creates the ClusterMirror `name` copying `source` (in the test's own
/// namespace) into the test's namespaces labelled `env=prod`.
pub(crate) async fn create<K: TestKind>(
    world: &World<K>,
    name: &str,
    source: &str,
) -> DynamicObject {
    let spec = json!({
        "source": {"kind": K::kind(&()), "namespace": world.prefix, "name": source},
        "target": {
            "namespaceSelector": {"matchLabels": {"env": "prod"}},
            "namespaces": [format!("{}-*", world.prefix)],
        },
    });
    create_with(world, name, spec).await
}

pub(crate) async fn create_with<K: TestKind>(
    world: &World<K>,
    name: &str,
    spec: Value,
) -> DynamicObject {
    let mut object = DynamicObject::new(name, &resource());
    object.data = json!({"spec": spec});
    cluster_mirrors(&world.scene.client)
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("create ClusterMirror {name}: {e}"))
}

/// Creates the Secret `s` holding `value` under `k` in the test's own
/// namespace, and the ClusterMirror `name` copying it to `target`,
/// whichever kind the world mirrors.
pub(crate) async fn secret_clustermirror<K: TestKind>(
    world: &World<K>,
    name: &str,
    value: &str,
    target: Value,
) -> DynamicObject {
    let secrets = Objects::<Secret>::of(&world.scene);
    secrets
        .create(&Secret::with_data("s", &[("k", value)], false))
        .await;
    let source = json!({"kind": "Secret", "namespace": world.prefix, "name": "s"});
    create_with(world, name, json!({"source": source, "target": target})).await
}

pub(crate) async fn patch_spec<K: TestKind>(world: &World<K>, name: &str, spec: Value) {
    cluster_mirrors(&world.scene.client)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": spec})),
        )
        .await
        .unwrap_or_else(|e| panic!("patch ClusterMirror {name}: {e}"));
}

/// Waits until the ClusterMirror's Ready condition has `reason`, and
/// returns it as it is then.
pub(crate) async fn ready<K: TestKind>(
    world: &World<K>,
    name: &str,
    reason: &str,
) -> DynamicObject {
    let api = cluster_mirrors(&world.scene.client);
    testenv::wait_for(
        &format!("{name} to be Ready with reason {reason}"),
        PATIENCE,
        || async {
            let object = api.get_opt(name).await.ok()??;
            (condition(&object, "Ready")?["reason"] == reason).then_some(object)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()))
}

pub(crate) fn condition<'a>(object: &'a DynamicObject, kind: &str) -> Option<&'a Value> {
    object.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

/// Waits until `namespace` holds the ClusterMirror's copy of the source,
/// with the source's content as it is now.
pub(crate) async fn cluster_copy_in_sync<K: TestKind>(
    world: &World<K>,
    namespace: &str,
    name: &str,
    cluster_mirror: &str,
) -> K {
    let objects = world.objects();
    let copies = world.api(namespace);
    testenv::wait_for(
        &format!("a copy of {name} in {namespace}"),
        PATIENCE,
        || async {
            let source = objects.api.get_opt(name).await.ok()??;
            let copy = copies.get_opt(name).await.ok()??;
            let of = format!("{}/{name}", world.prefix);
            let ours = copy.labels().get(CLUSTER_MIRROR_LABEL).map(String::as_str)
                == Some(cluster_mirror)
                && copy.annotations().get(MIRROR_OF_ANNOTATION) == Some(&of);
            (ours && copy.same_content(&source)).then_some(copy)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()))
}

/// Deletes the ClusterMirrors, waits for their copies of either kind to
/// go, and cleans up. Either kind: a copy left behind while its namespace
/// is being deleted would be one more object to the next test's
/// controller, whatever kind that test's World is of.
pub(crate) async fn clean_up<K: TestKind>(mut world: World<K>, names: &[&str]) {
    if !world.is_running() {
        world.start().await;
    }
    let api = cluster_mirrors(&world.scene.client);
    for name in names {
        let _ = api.delete(name, &DeleteParams::default()).await;
    }
    if !names.is_empty() {
        copies_gone::<ConfigMap, K>(&world, names).await;
        copies_gone::<Secret, K>(&world, names).await;
    }
    world.clean_up().await;
}

/// Waits until no object of kind `C` is a copy of one of the ClusterMirrors
/// `names`.
async fn copies_gone<C, K: TestKind>(world: &World<K>, names: &[&str])
where
    C: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let copies: Api<C> = Api::all(world.scene.client.clone());
    let claimed = ListParams::default().labels(&format!(
        "{MANAGED_BY_LABEL}={MANAGER_NAME},{CLUSTER_MIRROR_LABEL} in ({})",
        names.join(",")
    ));
    testenv::wait_for("the ClusterMirrors' copies to go", PATIENCE, || async {
        let left = copies.list_metadata(&claimed).await.ok()?;
        left.items.is_empty().then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
}

/// Waits until the ClusterMirror's status was written for its spec as it
/// is now (`observedGeneration` at its generation): the reconcile of that
/// spec has decided, and written (or not) every copy, before it wrote the
/// status.
pub(crate) async fn observed<K: TestKind>(world: &World<K>, name: &str) -> DynamicObject {
    let api = cluster_mirrors(&world.scene.client);
    testenv::wait_for(
        &format!("{name}'s status written for its spec"),
        PATIENCE,
        || async {
            let object = api.get_opt(name).await.ok()??;
            let observed = object.data["status"]["observedGeneration"].as_i64();
            (observed.is_some() && observed == object.metadata.generation).then_some(object)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()))
}

/// The barrier before a check that nothing happened: the install serving
/// ClusterMirrors of `class` (None: the World's own) has followed every
/// event its watches of ClusterMirrors, namespaces, sources and copies of
/// kind `K` delivered before the call, and handed on what each woke. Each
/// watch delivers in order, so a later event of each, made here and
/// followed to its effect, comes after them all: a namespace, a
/// ClusterMirror and its source created now (the copy written), then the
/// copy deleted (and put back). All are gone when it returns.
pub(crate) async fn caught_up<K: TestKind>(world: &World<K>, class: Option<&str>) {
    static CANARIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CANARIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("canary-{n}");
    let namespace = world
        .namespace(&name, false, &[("canary", name.as_str())])
        .await;
    let mut spec = json!({
        "source": {"kind": K::kind(&()), "namespace": world.prefix, "name": name},
        "target": {
            "namespaceSelector": {"matchLabels": {"canary": name}},
            "namespaces": [namespace],
        },
    });
    if let Some(class) = class {
        spec["className"] = json!(class);
    }
    create_with(world, &name, spec).await;
    world
        .objects()
        .create(&K::with_data(&name, &[("k", "canary")], false))
        .await;
    let first = cluster_copy_in_sync(world, &namespace, &name, &name).await;
    let copies = world.api(&namespace);
    copies
        .delete(&name, &DeleteParams::default())
        .await
        .expect("delete the canary's copy");
    testenv::wait_for("the canary's copy put back", PATIENCE, || async {
        let copy = copies.get_opt(&name).await.ok()??;
        (copy.uid() != first.uid()).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
    cluster_mirrors(&world.scene.client)
        .delete(&name, &DeleteParams::default())
        .await
        .expect("delete the canary ClusterMirror");
    world.objects_in(&namespace).wait_gone(&name).await;
    world.objects().delete(&name).await;
}

/// Waits until the controller's log says the prune of each of `copies`
/// (`namespace/name`) kept it as an orphan: each orphan's prune has been
/// made.
pub(crate) async fn kept_as_orphans(controller: &ControllerProcess, copies: &[&str]) {
    for copy in copies {
        orphan_prunes_reaching(controller, copy, 1).await;
    }
}

/// Waits until the controller's log says `at_least` prunes of `copy`
/// (`namespace/name`) kept it as an orphan; returns how many did.
pub(crate) async fn orphan_prunes_reaching(
    controller: &ControllerProcess,
    copy: &str,
    at_least: usize,
) -> usize {
    let said = format!("kept copy {copy} as an orphan");
    testenv::wait_for(
        &format!("{at_least} prunes keeping {copy} as an orphan"),
        PATIENCE,
        || async {
            let log = controller.log_text();
            let kept = log.lines().filter(|line| line.contains(&said)).count();
            (kept >= at_least).then_some(kept)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()))
}

/// What a ClusterMirror's status counts: selected, synced, failed and the
/// namespaces its failures name (-1 for a count it lacks).
pub(crate) fn counts(object: &DynamicObject) -> (i64, i64, i64, Vec<String>) {
    let status = &object.data["status"];
    let failed_in = status["failures"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter_map(|f| f["namespace"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    (
        status["selected"].as_i64().unwrap_or(-1),
        status["synced"].as_i64().unwrap_or(-1),
        status["failed"].as_i64().unwrap_or(-1),
        failed_in,
    )
}

/// Waits until the status counts `(selected, synced, failed)`.
pub(crate) async fn counted<K: TestKind>(
    world: &World<K>,
    name: &str,
    want: (i64, i64, i64),
) -> DynamicObject {
    let api = cluster_mirrors(&world.scene.client);
    let last = std::sync::Mutex::new(None);
    testenv::wait_for(&format!("{name} to count {want:?}"), PATIENCE, || async {
        let object = api.get_opt(name).await.ok()??;
        let seen = counts(&object);
        let (selected, synced, failed, _) = seen.clone();
        *last.lock().unwrap() = Some(seen);
        ((selected, synced, failed) == want).then_some(object)
    })
    .await
    .unwrap_or_else(|e| {
        let last = last.lock().unwrap().clone();
        let log = world.controller().log_text();
        panic!("{e:#}; it counted {last:?} (selected, synced, failed, failures)\n{log}")
    })
}

/// A world with the source `app`, and a selected namespace where someone
/// else holds an object called `app`: the ClusterMirror's failure there.
pub(crate) async fn with_a_name_taken(tag: &str) -> (World<ConfigMap>, String) {
    let world = world::<ConfigMap>(tag).await;
    world
        .objects()
        .create(&ConfigMap::with_data("app", &[("k", "v")], false))
        .await;
    let taken = world.namespace("c", false, &[("env", "prod")]).await;
    let mut theirs = ConfigMap::with_data("app", &[("k", "theirs")], false);
    theirs.metadata.namespace = Some(taken.clone());
    world
        .api(&taken)
        .create(&PostParams::default(), &theirs)
        .await
        .expect("someone else's object under the name");
    (world, taken)
}
