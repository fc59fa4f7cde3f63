//! One test's world and what it does in it.

use std::{path::PathBuf, time::Duration};

use configmap_mirror::contract;
use k8s_openapi::api::{coordination::v1::Lease, core::v1::ConfigMap, events::v1::Event};
use kube::{Api, Client, api::ListParams};
use testenv::{ControlPlane, wait_for};

use crate::{ControllerProcess, Objects, PATIENCE};

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

    /// The ConfigMaps of the scene's namespace.
    pub fn configmaps(&self) -> Objects<'_, ConfigMap> {
        Objects::of(self)
    }

    /// The controller, watching only this test's namespace, with
    /// `extra_args` and more environment variables.
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

    /// Creates source `name`, then changes it and deletes its companion,
    /// waiting each time for the companion to be exact again.
    pub async fn live_through_change_and_heal(&self, name: &str) {
        let configmaps = self.configmaps();
        configmaps.source_in_sync(name, &[("a", "1")]).await;
        configmaps
            .patch(name, serde_json::json!({"data": {"a": "2"}}))
            .await;
        configmaps.companion_in_sync(name).await;
        configmaps
            .delete(&contract::companion_name(name, "-synced"))
            .await;
        configmaps.companion_in_sync(name).await;
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
