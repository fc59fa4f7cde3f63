//! A hostile tenant: someone with no cluster rights, who may only create
//! and label ConfigMaps in their own namespace, tries to take the
//! controller down (a test for each attack below). Whatever the
//! attack, the controller stays leader with its probes answering, another
//! tenant's copy still heals, and where the attack meets a limit the
//! hostile source is told which.
//!
//! On a control plane of its own, one test at a time: a test writes up to
//! half a gigabyte of ConfigMaps, which no other topic's controller should
//! list, and each test's controller watches the whole cluster. A test's
//! namespaces are deleted when it ends, and the next waits until they are
//! gone, so that no test's memory figures count another's objects.

mod copies_in_flight;
mod fresh_read;
mod key_globs;
mod many_keys;
mod too_large;
mod writes_in_flight;

use std::time::Duration;

use crate::common::{self, Apart, ControllerProcess, PATIENCE, Scene, mk_source};
use configmap_mirror::contract::{self, MANAGED_BY_LABEL, MANAGER_NAME};
use futures::{StreamExt, stream};
use k8s_openapi::api::{
    coordination::v1::{Lease, LeaseSpec},
    core::v1::{ConfigMap, Namespace},
    events::v1::Event,
};
use kube::{
    Api,
    api::{ListParams, ObjectMeta, PartialObjectMeta, PostParams},
};
use testenv::ControlPlane;
use tokio::sync::MutexGuard;

/// Apart from the other topics', one test at a time, with kube-apiserver's
/// audit log of ConfigMap writes, from which `writes_in_flight` counts the
/// writes it works on at once.
static HOSTILE_PLANE: Apart = Apart::new();

fn control_plane() -> &'static ControlPlane {
    HOSTILE_PLANE.plane_with(writes_in_flight::audit_args)
}

/// The controller's identity in the Lease.
const IDENTITY: &str = "replica-a";
/// The chart's lease duration, renew deadline and retry period
/// (deploy/base/deployment.yaml): a reconcile that holds the runtime for
/// longer than the renew deadline loses the Lease, as in a real install.
const CHART_LEASE_TIMINGS: [&str; 3] = ["15s", "10s", "2s"];

/// What the API server accepts in one ConfigMap's data and binaryData, in
/// bytes of keys and values (its `MaxSecretSize`).
const API_SERVER_LIMIT: usize = 1_048_576;

/// The chart's memory limit, in MiB: the memory bounds are half of it.
const CHART_MEMORY_LIMIT_MIB: u64 = 256;

/// A value of `len` bytes, different for each `seed`.
fn blob(seed: &str, len: usize) -> String {
    let unit = format!("{seed}.");
    let mut text = unit.repeat(len / unit.len() + 1);
    text.truncate(len);
    text
}

/// A value of about 1 MB under `key`, just under what the API server
/// accepts, with room for a small key more.
fn just_under_the_limit(key: &str, seed: &str) -> String {
    blob(seed, API_SERVER_LIMIT - key.len() - 1_024)
}

/// A source labeled for the controller, with `annotations`.
fn source_with(name: &str, data: &[(&str, &str)], annotations: &[(&str, &str)]) -> ConfigMap {
    let mut source = mk_source(name, data);
    source.metadata.annotations = Some(
        annotations
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    );
    source
}

/// One test's world: the install's namespace (the Lease's), the hostile
/// tenant's, another tenant's with its source `calm`, and a cluster-wide
/// controller electing itself leader with the chart's timings.
pub(crate) struct Tenants {
    install: Scene<'static>,
    pub(crate) hostile: Scene<'static>,
    pub(crate) other: Scene<'static>,
    /// Every namespace the test made, deleted when it ends.
    made: Vec<String>,
    controller: Option<ControllerProcess>,
    /// The Lease's `leaseTransitions` once this controller first held it.
    transitions: i32,
    _turn: MutexGuard<'static, ()>,
}

impl Tenants {
    pub(crate) async fn new(tag: &str) -> Tenants {
        let turn = HOSTILE_PLANE.turn().await;
        let plane = control_plane();
        no_namespace_terminating(plane).await;
        let install = Scene::on(plane, tag).await;
        let hostile = Scene::on(plane, &format!("{tag}-hostile")).await;
        let other = Scene::on(plane, &format!("{tag}-other")).await;
        other
            .configmaps()
            .create(&mk_source("calm", &[("color", "blue")]))
            .await;
        let made = [&install, &hostile, &other].map(|s| s.namespace.clone());
        Tenants {
            install,
            hostile,
            other,
            made: made.to_vec(),
            controller: None,
            transitions: 0,
            _turn: turn,
        }
    }

    /// Starts the controller with `extra` flags, and waits until it holds
    /// the Lease and the other tenant's companion is written.
    pub(crate) async fn start(&mut self, extra: &[&str]) {
        let mut args = self
            .install
            .leader_election_args(IDENTITY, CHART_LEASE_TIMINGS);
        args.extend_from_slice(extra);
        let kubeconfig = control_plane().kubeconfig_path().to_path_buf();
        let tag = self.install.namespace.clone();
        let controller = ControllerProcess::start(control_plane(), &kubeconfig, &tag, &args).await;
        self.controller = Some(controller);
        self.install
            .wait_lease_holder(PATIENCE, |holder| holder == IDENTITY)
            .await;
        self.transitions = self.lease().await.lease_transitions.unwrap_or(0);
        // A fresh holder leads once a previous one must have stopped.
        let leading = testenv::wait_for("the controller to lead", PATIENCE, || async {
            let status = self
                .controller()
                .metric("leader_election_master_status", "");
            (status.await == 1.0).then_some(())
        });
        leading.await.unwrap_or_else(|e| panic!("{e:#}"));
        self.other.configmaps().companion_in_sync("calm").await;
    }

    /// Stops the controller (SIGTERM), which must exit cleanly.
    pub(crate) fn stop(&mut self) {
        let controller = self.controller.take().expect("the controller runs");
        let status = controller.stop();
        assert!(status.success(), "{status}");
    }

    pub(crate) fn controller(&self) -> &ControllerProcess {
        self.controller.as_ref().expect("the controller runs")
    }

    async fn lease(&self) -> LeaseSpec {
        let leases: Api<Lease> =
            Api::namespaced(self.install.client.clone(), &self.install.namespace);
        let lease = leases.get(common::LEASE).await.expect("read the Lease");
        lease.spec.expect("a Lease with a spec")
    }

    /// Creates `count` namespaces `<hostile>-tNNN`, accepting ConfigMap
    /// mirrors from anywhere; a few at a time, as creating them is slow.
    pub(crate) async fn consenting_namespaces(&mut self, count: usize) -> Vec<String> {
        let names: Vec<String> = (0..count)
            .map(|i| format!("{}-t{i:04}", self.hostile.namespace))
            .collect();
        let api: Api<Namespace> = Api::all(self.hostile.client.clone());
        self.made.extend(names.iter().cloned());
        let creates = names.iter().map(|name| {
            let api = api.clone();
            let namespace = Namespace {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    labels: Some([("workshop.io/accept-mirrors".into(), "true".into())].into()),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            };
            async move {
                api.create(&PostParams::default(), &namespace)
                    .await
                    .unwrap_or_else(|e| panic!("create namespace: {e}"));
            }
        });
        stream::iter(creates)
            .buffer_unordered(16)
            .collect::<Vec<()>>()
            .await;
        names
    }

    /// Creates `sources` in the hostile namespace, a few at a time.
    pub(crate) async fn create_all(&self, sources: Vec<ConfigMap>) {
        let hostile = self.hostile.configmaps();
        stream::iter(sources.iter().map(|source| hostile.create(source)))
            .buffer_unordered(4)
            .collect::<Vec<ConfigMap>>()
            .await;
    }

    /// The other tenant's companion, deleted, is written again.
    pub(crate) async fn other_heals(&self) {
        self.other.configmaps().delete("calm-synced").await;
        self.other.configmaps().companion_in_sync("calm").await;
    }

    /// The controller is still running, its /healthz answers 200, and it
    /// still holds the Lease it took at the start, which never changed
    /// hands.
    pub(crate) async fn still_leads(&mut self) {
        let controller = self.controller.as_mut().expect("the controller runs");
        if let Some(status) = controller.wait_exit(Duration::ZERO) {
            panic!("the controller exited: {status}");
        }
        let (status, text) = controller.get("/healthz").await.expect("GET /healthz");
        assert_eq!(status, 200, "/healthz: {text}");
        let leading = controller.metric("leader_election_master_status", "").await;
        assert_eq!(leading, 1.0, "the controller no longer says it leads");
        let lease = self.lease().await;
        assert_eq!(lease.holder_identity.as_deref(), Some(IDENTITY));
        assert_eq!(
            lease.lease_transitions.unwrap_or(0),
            self.transitions,
            "the Lease changed hands"
        );
    }

    /// The most the controller was resident, in MiB.
    pub(crate) fn peak_mib(&self) -> u64 {
        self.controller().memory_kib("VmHWM") / 1024
    }

    /// Waits until the hostile tenant's sources have `wanted` mirrors.
    pub(crate) async fn wait_for_mirrors(&self, wanted: usize) {
        let of_hostile = format!("{}/", self.hostile.namespace);
        let written = testenv::wait_for(&format!("{wanted} mirrors"), PATIENCE * 6, || async {
            let copies = self.copies().await;
            let mirrors = copies
                .iter()
                .filter(|copy| mirror_of(copy).is_some_and(|of| of.starts_with(&of_hostile)));
            (mirrors.count() == wanted).then_some(())
        })
        .await;
        written.unwrap_or_else(|e| panic!("{e:#}\n{}", self.controller().log_text()));
    }

    /// The copies the controller made anywhere, their metadata only.
    pub(crate) async fn copies(&self) -> Vec<PartialObjectMeta<ConfigMap>> {
        let all: Api<ConfigMap> = Api::all(self.hostile.client.clone());
        let ours = ListParams::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGER_NAME}"));
        let list = all.list_metadata(&ours).await.expect("list the copies");
        list.items
    }
}

/// The source (`<namespace>/<name>`) a mirror says it copies.
fn mirror_of(copy: &PartialObjectMeta<ConfigMap>) -> Option<String> {
    let (namespace, name) = contract::mirror_of(&copy.metadata)?;
    Some(format!("{namespace}/{name}"))
}

/// Waits until `name` in `scene`'s namespace holds exactly `keys`.
async fn holding(scene: &Scene<'_>, name: &str, keys: &[&str]) -> ConfigMap {
    common::holding(&scene.configmaps().api, name, keys, String::new).await
}

/// Waits for a Warning `reason` about `regarding` in `scene`'s namespace;
/// on a timeout, says which Events about it there were instead.
async fn warning(scene: &Scene<'_>, regarding: &str, reason: &str) -> Event {
    let what = format!("a Warning {reason} on {regarding}");
    let found = testenv::wait_for(&what, PATIENCE, || async {
        let events = scene.events(regarding, reason).await;
        events
            .into_iter()
            .find(|event| event.type_.as_deref() == Some("Warning"))
    })
    .await;
    match found {
        Ok(event) => event,
        Err(e) => {
            let api: Api<Event> = Api::namespaced(scene.client.clone(), &scene.namespace);
            let all = api.list(&ListParams::default()).await.expect("list events");
            let about = all.items.into_iter().filter(|event| {
                event.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(regarding)
            });
            let said: Vec<String> = about
                .map(|event| format!("{:?} {:?}: {:?}", event.type_, event.reason, event.note))
                .collect();
            panic!("{e:#}; the Events about {regarding} were: {said:#?}")
        }
    }
}

/// Waits until no namespace of the plane is being deleted: the previous
/// test's are gone, and their objects with them.
async fn no_namespace_terminating(plane: &ControlPlane) {
    let api: Api<Namespace> = Api::all(plane.client().await);
    let gone = testenv::wait_for(
        "the previous test's namespaces to go",
        PATIENCE * 10,
        || async {
            let namespaces = api.list_metadata(&ListParams::default()).await.ok()?;
            let deleting = namespaces
                .items
                .iter()
                .any(|ns| ns.metadata.deletion_timestamp.is_some());
            (!deleting).then_some(())
        },
    )
    .await;
    gone.unwrap_or_else(|e| panic!("{e:#}"));
}

impl Drop for Tenants {
    /// Stops the controller and deletes every namespace the test made,
    /// whatever way it ends; the next test waits until they are gone. A
    /// drop cannot await: kubectl, as the suite's other guards.
    fn drop(&mut self) {
        drop(self.controller.take());
        let mut delete = control_plane().kubectl();
        delete
            .args(["delete", "namespace", "--wait=false", "--ignore-not-found"])
            .args(&self.made)
            .stdout(std::process::Stdio::null());
        let done = delete.status();
        assert!(
            done.is_ok_and(|s| s.success()) || std::thread::panicking(),
            "delete the test's namespaces"
        );
    }
}
