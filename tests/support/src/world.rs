//! One test's world on a control plane apart from the shared one: the
//! test's own namespace (a [`Scene`]), the namespaces it makes, its
//! controller, cluster-wide, and its turn on the plane.

use std::{collections::BTreeMap, marker::PhantomData, path::PathBuf};

use configmap_mirror::contract::{
    CHECKSUM_ANNOTATION, MANAGED_BY_LABEL, MANAGER_NAME, MIRROR_OF_ANNOTATION,
    MIRROR_OF_UID_ANNOTATION,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use testenv::{ControlPlane, LazyControlPlane, wait_for};
use tokio::sync::{Mutex, MutexGuard};

use crate::{ControllerProcess, KEY_SECRET, Objects, PATIENCE, SOURCE_LABEL, Scene, TestKind};

/// A control plane apart from the shared one, started on first use and
/// taken by one test at a time: each runs a cluster-wide controller (or a
/// policy), which would serve or refuse the other tests' namespaces too.
pub struct Apart {
    plane: LazyControlPlane,
    turn: Mutex<()>,
}

impl Apart {
    pub const fn new() -> Apart {
        Apart {
            plane: LazyControlPlane::new(),
            turn: Mutex::const_new(()),
        }
    }

    pub fn plane(&self) -> &ControlPlane {
        self.plane.get()
    }

    /// The plane, kube-apiserver started with the flags `extra` returns
    /// (called once, on first use).
    pub fn plane_with(&self, extra: impl FnOnce() -> Vec<String>) -> &ControlPlane {
        self.plane.get_with(extra)
    }

    /// This test's turn on the plane, held until dropped.
    pub async fn turn(&self) -> MutexGuard<'_, ()> {
        self.turn.lock().await
    }
}

impl Default for Apart {
    fn default() -> Apart {
        Apart::new()
    }
}

/// The plane of the tests across namespaces: `mirroring`, `consent`,
/// `cluster_mirror` and the others on [`World::new`].
static CLUSTER_WIDE: Apart = Apart::new();

/// How a world's controller runs: the start option of a [`World`].
#[derive(Clone, Copy)]
pub enum Runs {
    /// As the admin, with the test's flags: its digest key in the test's
    /// own namespace, where the tests read it, and a slow retry of a second.
    AsAdmin,
    /// As an install's Pod runs it.
    AsPod(&'static Pod),
}

/// An install's controller as its Pod runs it: the Deployment's flags,
/// under its ServiceAccount, in the install's namespace (its Lease's and
/// digest key's).
pub struct Pod {
    pub args: Vec<String>,
    /// Holds a token of the install's ServiceAccount.
    pub kubeconfig: PathBuf,
    pub namespace: String,
    /// The Pod's name, which the controller holds its Lease as.
    pub name: String,
}

impl Pod {
    /// Runs it on `plane`, its log named after `log_tag`.
    pub async fn run(&self, plane: &ControlPlane, log_tag: &str) -> ControllerProcess {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        ControllerProcess::start_binary(
            &crate::controller_binary(),
            plane,
            &self.kubeconfig,
            log_tag,
            &args,
            &[("POD_NAMESPACE", &self.namespace), ("POD_NAME", &self.name)],
        )
        .await
    }
}

/// `workshop.io/mirror-to: glob`, for a source's annotations.
pub fn to(glob: &str) -> (&'static str, &str) {
    ("workshop.io/mirror-to", glob)
}

/// One test's world, mirroring objects of kind `K`.
pub struct World<K = ConfigMap> {
    /// The test's own namespace, where its sources are.
    pub scene: Scene<'static>,
    /// Unique to the test (the scene's namespace): every namespace the
    /// test makes is named `<prefix>-...`.
    pub prefix: String,
    runs: Runs,
    /// Every namespace the world made, its own first.
    made: std::sync::Mutex<Vec<String>>,
    controller: Option<ControllerProcess>,
    _turn: MutexGuard<'static, ()>,
    _kind: PhantomData<K>,
}

impl<K: TestKind> World<K> {
    /// A world on the cluster-wide plane, its controller started as the
    /// admin.
    pub async fn new(tag: &str) -> World<K> {
        let mut world = World::new_stopped(tag).await;
        world.start().await;
        world
    }

    /// [`World::new`], its controller not started yet.
    pub async fn new_stopped(tag: &str) -> World<K> {
        World::on(&CLUSTER_WIDE, Runs::AsAdmin, tag).await
    }

    /// A world on `apart`, once it is this test's turn, whose controller
    /// will run as `runs`; not started yet.
    pub async fn on(apart: &'static Apart, runs: Runs, tag: &str) -> World<K> {
        let turn = apart.turn().await;
        let scene = Scene::on(apart.plane(), tag).await;
        let prefix = scene.namespace.clone();
        World {
            made: std::sync::Mutex::new(vec![prefix.clone()]),
            scene,
            prefix,
            runs,
            controller: None,
            _turn: turn,
            _kind: PhantomData,
        }
    }

    pub async fn start(&mut self) {
        self.start_with(&[]).await;
    }

    /// Starts the controller with the flags `extra` too (as the admin
    /// only: an install's Pod runs with the install's flags).
    pub async fn start_with(&mut self, extra: &[&str]) {
        self.run(extra, true).await;
    }

    /// Starts the controller as the admin and waits only for its HTTP
    /// listener: a controller that may never be ready.
    pub async fn start_unready(&mut self) {
        self.run(&[], false).await;
    }

    async fn run(&mut self, extra: &[&str], ready: bool) {
        let plane = self.scene.control_plane;
        let controller = match self.runs {
            Runs::AsAdmin => {
                let kubeconfig = plane.kubeconfig_path().to_path_buf();
                let key_secret = format!("{}/{KEY_SECRET}", self.prefix);
                let mut args = vec!["--slow-retry", "1s", "--digest-key-secret", &key_secret];
                args.extend_from_slice(K::ARGS);
                args.extend_from_slice(extra);
                let tag = &self.prefix;
                if ready {
                    ControllerProcess::start(plane, &kubeconfig, tag, &args).await
                } else {
                    ControllerProcess::start_unready(plane, &kubeconfig, tag, &args).await
                }
            }
            Runs::AsPod(pod) => {
                assert!(extra.is_empty(), "an install's Pod runs with its flags");
                assert!(ready, "an install's Pod is started until ready");
                pod.run(plane, &self.prefix).await
            }
        };
        self.controller = Some(controller);
    }

    /// Whether the controller runs now (started and not stopped).
    pub fn is_running(&self) -> bool {
        self.controller.is_some()
    }

    pub fn controller(&self) -> &ControllerProcess {
        self.controller.as_ref().expect("the controller runs")
    }

    pub fn stop(&mut self) {
        let controller = self.controller.take().expect("the controller runs");
        assert!(controller.stop().success());
    }

    /// Creates `<prefix>-<suffix>`, consenting to `K`'s mirrors or not,
    /// with extra labels.
    pub async fn namespace(&self, suffix: &str, consents: bool, labels: &[(&str, &str)]) -> String {
        let name = format!("{}-{suffix}", self.prefix);
        let mut all: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect();
        if consents {
            all.insert(K::CONSENT_LABEL.into(), "true".into());
        }
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some(all),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        let api: Api<Namespace> = Api::all(self.scene.client.clone());
        api.create(&PostParams::default(), &namespace)
            .await
            .expect("create namespace");
        self.made.lock().expect("not poisoned").push(name.clone());
        name
    }

    pub async fn label_namespace(&self, name: &str, key: &str, value: Option<&str>) {
        let api: Api<Namespace> = Api::all(self.scene.client.clone());
        let patch = json!({"metadata": {"labels": {key: value}}});
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("label namespace");
    }

    pub async fn annotate_namespace(&self, name: &str, key: &str, value: Option<&str>) {
        let api: Api<Namespace> = Api::all(self.scene.client.clone());
        let patch = json!({"metadata": {"annotations": {key: value}}});
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("annotate namespace");
    }

    /// Waits until `name` in `namespace` holds exactly `keys`, and returns
    /// it.
    pub async fn holding(&self, namespace: &str, name: &str, keys: &[&str]) -> K {
        let log = || self.controller().log_text();
        crate::holding(&self.api(namespace), name, keys, log).await
    }

    pub fn api(&self, namespace: &str) -> Api<K> {
        Api::namespaced(self.scene.client.clone(), namespace)
    }

    /// The ConfigMaps of `namespace`, whichever kind the world mirrors
    /// (where a Secret's keys are published as ConfigMaps).
    pub fn configmaps(&self, namespace: &str) -> Api<ConfigMap> {
        Api::namespaced(self.scene.client.clone(), namespace)
    }

    /// Objects of the kind in the test's own namespace.
    pub fn objects(&self) -> Objects<'_, K> {
        Objects::of(&self.scene)
    }

    /// Objects of the kind in `namespace`.
    pub fn objects_in(&self, namespace: &str) -> Objects<'_, K> {
        Objects::in_namespace(&self.scene, namespace)
    }

    /// A labeled source in the test's own namespace holding `color: blue`,
    /// with the annotations `to` (where it mirrors to, what it is named).
    pub async fn mirrored(&self, name: &str, to: &[(&str, &str)]) -> K {
        self.objects().source(name, &[("color", "blue")], to).await
    }

    /// Waits until `namespace` holds an exact mirror of the source as it is now.
    pub async fn mirror_in_sync(&self, namespace: &str, source_name: &str) -> K {
        self.mirror_at_in_sync(namespace, source_name, source_name)
            .await
    }

    /// Waits until `namespace` holds, at `name`, an exact mirror of the
    /// source as it is now.
    pub async fn mirror_at_in_sync(&self, namespace: &str, source_name: &str, name: &str) -> K {
        let objects = self.objects();
        let key = K::digest_key(&objects).await;
        let mirrors = self.api(namespace);
        wait_for(
            &format!("a mirror of {source_name} at {namespace}/{name}"),
            PATIENCE,
            || async {
                let source = objects.api.get_opt(source_name).await.ok()??;
                let mirror = mirrors.get_opt(name).await.ok()??;
                is_exact_mirror(&mirror, &source, &key).then_some(mirror)
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e:#}"))
    }

    /// Waits until `namespace/name` is a copy, labelled ours and holding the
    /// content of source `source` as it is now: what a test can see of a
    /// copy whose digest key is the install's, not in the test's namespace.
    pub async fn copy_in_sync(&self, namespace: &str, name: &str, source: &str) -> K {
        let sources = self.objects().api;
        let copies = self.api(namespace);
        wait_for(
            &format!("{namespace}/{name} to copy {source}"),
            PATIENCE,
            || async {
                let source = sources.get_opt(source).await.ok()??;
                let copy = copies.get_opt(name).await.ok()??;
                (copy.labels().get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGER_NAME)
                    && copy.same_content(&source))
                .then_some(copy)
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e:#}"))
    }

    /// Waits until one of the Warnings `reason` about `regarding` (in the
    /// test's namespace) says `says`.
    pub async fn warned(&self, regarding: &str, reason: &str, says: &str) {
        let what = format!("a {reason} Warning on {regarding} saying {says:?}");
        wait_for(&what, PATIENCE, || async {
            let events = self.scene.events(regarding, reason).await;
            events.into_iter().find(|event| {
                event.type_.as_deref() == Some("Warning")
                    && event.note.as_deref().unwrap_or_default().contains(says)
            })
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", self.controller().log_text()));
    }

    /// The admin's merge patch of `namespace/name`, as the API server
    /// answers it.
    pub async fn try_patch(
        &self,
        namespace: &str,
        name: &str,
        patch: &Value,
    ) -> Result<K, kube::Error> {
        self.api(namespace)
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
    }

    /// Deletes the test's sources and waits until every copy made from
    /// them, anywhere, is gone, so the next test starts from a clean cluster.
    pub async fn clean_up(mut self) {
        if !self.is_running() {
            self.start().await;
        }
        let sources = self.objects().api;
        sources
            .delete_collection(
                &Default::default(),
                &ListParams::default().labels(SOURCE_LABEL),
            )
            .await
            .expect("delete sources");
        let all: Api<K> = Api::all(self.scene.client.clone());
        let ours = ListParams::default().labels("app.kubernetes.io/managed-by=configmap-mirror");
        wait_for("every copy to be removed", PATIENCE, || async {
            let left = all.list(&ours).await.ok()?;
            let mine = left.items.iter().filter(|cm| {
                configmap_mirror::contract::mirror_of(cm.meta())
                    .is_some_and(|(ns, _)| ns == self.scene.namespace)
                    || cm.namespace().as_deref() == Some(&self.scene.namespace)
            });
            (mine.count() == 0).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    }

    /// Stops the controller, then deletes every namespace the world made,
    /// and with them everything in them.
    pub async fn finish(mut self) {
        if let Some(controller) = self.controller.take() {
            assert!(controller.stop().success());
        }
        let namespaces: Api<Namespace> = Api::all(self.scene.client.clone());
        let made = self.made.lock().expect("not poisoned").clone();
        for namespace in &made {
            namespaces
                .delete(namespace, &DeleteParams::default())
                .await
                .unwrap_or_else(|e| panic!("delete namespace {namespace}: {e}"));
        }
    }
}

fn is_exact_mirror<K: TestKind>(mirror: &K, source: &K, key: &K::DigestKey) -> bool {
    let annotations = mirror.annotations();
    let of = format!(
        "{}/{}",
        source.namespace().unwrap_or_default(),
        source.name_any()
    );
    mirror.same_content(source)
        && annotations.get(CHECKSUM_ANNOTATION) == Some(&source.content_digest(key))
        && annotations.get(MIRROR_OF_ANNOTATION) == Some(&of)
        && annotations.get(MIRROR_OF_UID_ANNOTATION) == source.uid().as_ref()
        && mirror.owner_references().is_empty()
        && !mirror.labels().contains_key(SOURCE_LABEL)
}
