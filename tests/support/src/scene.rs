//! One test's world and what it does in it.

use std::{path::PathBuf, time::Duration};

use configmap_mirror::contract::{self, CHECKSUM_ANNOTATION, MANAGED_BY_LABEL, MANAGER_NAME};
use k8s_openapi::api::{coordination::v1::Lease, core::v1::ConfigMap, events::v1::Event};
use kube::{
    Api, Client, ResourceExt,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use testenv::{ControlPlane, wait_for};

use crate::{ControllerProcess, PATIENCE, SOURCE_LABEL, mk_source};

/// The Lease the replicas of a test compete for, in the test's namespace.
pub const LEASE: &str = "configmap-mirror";
/// Lease duration, renew deadline and retry period of a test's replicas:
/// short, so that a takeover fits in a test.
pub const LEASE_TIMINGS: [&str; 3] = ["6s", "4s", "500ms"];

/// One test's world: a control plane (the shared one, unless the test
/// started its own), an admin client and a fresh namespace of its own.
pub struct Scene<'a> {
    pub control_plane: &'a ControlPlane,
    pub client: Client,
    pub namespace: String,
}

impl Scene<'static> {
    pub async fn new(prefix: &str) -> Scene<'static> {
        Scene::on(ControlPlane::shared(), prefix).await
    }
}

impl<'a> Scene<'a> {
    pub async fn on(control_plane: &'a ControlPlane, prefix: &str) -> Scene<'a> {
        let client = control_plane.client().await;
        let namespace = testenv::fresh_namespace(&client, prefix)
            .await
            .expect("create a namespace for the test");
        Scene {
            control_plane,
            client,
            namespace,
        }
    }

    pub fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// The controller, watching only this test's namespace.
    pub async fn start_controller(&self, extra_args: &[&str]) -> ControllerProcess {
        let mut args = vec!["--namespace", &self.namespace];
        args.extend_from_slice(extra_args);
        ControllerProcess::start(
            self.control_plane,
            &self.control_plane.kubeconfig_path().to_path_buf(),
            &self.namespace,
            &args,
        )
        .await
    }

    /// [`Scene::start_controller`], with more environment variables.
    pub async fn start_controller_with_env(
        &self,
        extra_args: &[&str],
        envs: &[(&str, &str)],
    ) -> ControllerProcess {
        let mut args = vec!["--namespace", &self.namespace];
        args.extend_from_slice(extra_args);
        ControllerProcess::start_binary(
            &crate::controller_binary(),
            self.control_plane,
            &self.control_plane.kubeconfig_path().to_path_buf(),
            &self.namespace,
            &args,
            envs,
        )
        .await
    }

    pub async fn create(&self, cm: &ConfigMap) -> ConfigMap {
        self.configmaps()
            .create(&PostParams::default(), cm)
            .await
            .unwrap_or_else(|e| panic!("create {}: {e}", cm.name_any()))
    }

    pub async fn get(&self, name: &str) -> Option<ConfigMap> {
        self.configmaps()
            .get_opt(name)
            .await
            .expect("get configmap")
    }

    pub async fn patch_json(&self, name: &str, patch: serde_json::Value) -> ConfigMap {
        self.configmaps()
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap_or_else(|e| panic!("patch {name}: {e}"))
    }

    /// Creates source `name`, then changes it and deletes its companion,
    /// waiting each time for the companion to be exact again.
    pub async fn live_through_change_and_heal(&self, name: &str) {
        self.create(&mk_source(name, &[("a", "1")])).await;
        self.companion_in_sync(name).await;
        self.patch_json(name, serde_json::json!({"data": {"a": "2"}}))
            .await;
        self.companion_in_sync(name).await;
        self.delete(&contract::companion_name(name, "-synced"))
            .await;
        self.companion_in_sync(name).await;
    }

    /// Removes the source label: the ConfigMap is no longer managed.
    pub async fn unlabel(&self, name: &str) {
        self.patch_json(
            name,
            serde_json::json!({"metadata": {"labels": {SOURCE_LABEL: null}}}),
        )
        .await;
    }

    /// A kubeconfig holding only a fresh token of ServiceAccount `account`
    /// in this namespace.
    pub async fn token_kubeconfig(&self, account: &str) -> PathBuf {
        let token = testenv::mint_token(&self.client, &self.namespace, account)
            .await
            .expect("mint a token");
        let path = self
            .control_plane
            .log_dir()
            .join(format!("{}-{account}-kubeconfig", self.namespace));
        self.control_plane
            .write_token_kubeconfig(&token, &path)
            .expect("write the kubeconfig");
        path
    }

    pub async fn delete(&self, name: &str) {
        self.configmaps()
            .delete(name, &Default::default())
            .await
            .unwrap_or_else(|e| panic!("delete {name}: {e}"));
    }

    /// Waits until `name-synced` is an exact companion of the source as it
    /// is now, and returns it.
    pub async fn companion_in_sync(&self, source_name: &str) -> ConfigMap {
        let api = self.configmaps();
        let name = contract::companion_name(source_name, "-synced");
        wait_for(&format!("{name} to match {source_name}"), PATIENCE, || {
            let api = api.clone();
            let name = name.clone();
            async move {
                let source = api.get_opt(source_name).await.ok()??;
                let companion = api.get_opt(&name).await.ok()??;
                is_exact_companion(&companion, &source).then_some(companion)
            }
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}"))
    }

    pub async fn wait_gone(&self, name: &str) {
        crate::wait_gone(&self.configmaps(), name).await;
    }

    /// Events in this namespace about `regarding`, with `reason`.
    pub async fn events(&self, regarding: &str, reason: &str) -> Vec<Event> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), &self.namespace);
        let events = api.list(&ListParams::default()).await.expect("list events");
        events
            .items
            .into_iter()
            .filter(|e| {
                e.reason.as_deref() == Some(reason)
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(regarding)
            })
            .collect()
    }

    /// The first Event about Namespace `name` with `reason`, waited for:
    /// Events about a namespace are recorded in `default`.
    pub async fn namespace_event(&self, name: &str, reason: &str) -> Event {
        let api: Api<Event> = Api::namespaced(self.client.clone(), "default");
        wait_for(
            &format!("a {reason} event on namespace {name}"),
            PATIENCE,
            || async {
                let events = api.list(&ListParams::default()).await.ok()?;
                events.items.into_iter().find(|e| {
                    let regarding = e.regarding.as_ref();
                    e.reason.as_deref() == Some(reason)
                        && regarding.and_then(|r| r.kind.as_deref()) == Some("Namespace")
                        && regarding.and_then(|r| r.name.as_deref()) == Some(name)
                })
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e:#}"))
    }

    pub async fn wait_event(&self, regarding: &str, reason: &str) -> Event {
        wait_for(
            &format!("a {reason} event on {regarding}"),
            PATIENCE,
            || async { self.events(regarding, reason).await.into_iter().next() },
        )
        .await
        .unwrap_or_else(|e| panic!("{e:#}"))
    }

    /// The controller's leader-election flags: the Lease in this namespace,
    /// held as `identity`, with `timings` (lease duration, renew deadline,
    /// retry period).
    pub fn leader_election_args<'s>(
        &'s self,
        identity: &'s str,
        [lease, renew, retry]: [&'s str; 3],
    ) -> Vec<&'s str> {
        vec![
            "--leader-elect",
            "--leader-election-namespace",
            &self.namespace,
            "--leader-election-identity",
            identity,
            "--lease-duration",
            lease,
            "--renew-deadline",
            renew,
            "--retry-period",
            retry,
        ]
    }

    /// Who holds the Lease in this namespace, if anyone.
    pub async fn lease_holder(&self) -> Option<String> {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), &self.namespace);
        let lease = leases.get_opt(LEASE).await.ok()??;
        lease.spec?.holder_identity.filter(|h| !h.is_empty())
    }

    /// Waits until a holder of the Lease is `wanted`, and returns it.
    pub async fn wait_lease_holder(
        &self,
        timeout: Duration,
        wanted: impl Fn(&str) -> bool,
    ) -> String {
        wait_for("the lease holder", timeout, || async {
            self.lease_holder().await.filter(|h| wanted(h))
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}"))
    }

    /// Starts replicas `replica-a` and `replica-b` with `start`; returns
    /// (leader, standby).
    pub async fn two_replicas(
        &self,
        start: impl AsyncFn(&'static str) -> ControllerProcess,
    ) -> (ControllerProcess, ControllerProcess) {
        let a = start("replica-a").await;
        let b = start("replica-b").await;
        let first = self.wait_lease_holder(PATIENCE, |_| true).await;
        if first == "replica-a" { (a, b) } else { (b, a) }
    }
}

/// The companion has exactly the source's content, the checksum of that
/// content, one controller reference to this very source, our label, and
/// nothing of the source's labels or annotations.
pub fn is_exact_companion(companion: &ConfigMap, source: &ConfigMap) -> bool {
    let owners = companion.owner_references();
    let owned = owners.len() == 1
        && owners[0].uid == source.uid().unwrap_or_default()
        && owners[0].name == source.name_any()
        && owners[0].kind == "ConfigMap"
        && owners[0].controller == Some(true);
    let labels = companion.labels();
    let labeled = labels.get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGER_NAME)
        && !labels.contains_key(SOURCE_LABEL);
    owned
        && labeled
        && companion.data.clone().unwrap_or_default() == source.data.clone().unwrap_or_default()
        && companion.binary_data.clone().unwrap_or_default()
            == source.binary_data.clone().unwrap_or_default()
        && companion.immutable.unwrap_or(false) == source.immutable.unwrap_or(false)
        && companion.annotations().get(CHECKSUM_ANNOTATION)
            == Some(&contract::content_checksum(source))
}
