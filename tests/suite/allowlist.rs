//! Labels and annotations a source lists (`workshop.io/copy-labels`,
//! `workshop.io/copy-annotations`) are carried onto its copies, kept up to
//! date and removed, while keys others put on a copy stay. For both kinds.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::{
    Api, ResourceExt,
    api::{Patch, PatchParams},
};
use serde_json::{Value, json};
use testenv::wait_for;

use crate::common::{PATIENCE, Scene, mk_source};
use crate::secrets::{BOTH_KINDS, mk_secret};

const LABELS: &str = "workshop.io/copy-labels";
const ANNOTATIONS: &str = "workshop.io/copy-annotations";
const WRITES: &str = "configmap_mirror_companion_writes_total";

/// The two kinds, as the tests treat them: the same JSON through the API.
#[derive(Clone, Copy, Debug)]
enum Kind {
    ConfigMap,
    Secret,
}

impl Kind {
    async fn create(self, scene: &Scene<'_>, name: &str, meta: Value) {
        let mut object = match self {
            Kind::ConfigMap => serde_json::to_value(mk_source(name, &[("a", "1")])),
            Kind::Secret => serde_json::to_value(mk_secret(name, "Opaque", &[("a", "1")])),
        }
        .expect("an object as JSON");
        merge(&mut object["metadata"], meta);
        match self {
            Kind::ConfigMap => {
                let cm: ConfigMap = serde_json::from_value(object).expect("a ConfigMap");
                scene.configmaps().create(&cm).await;
            }
            Kind::Secret => {
                let secret: Secret = serde_json::from_value(object).expect("a Secret");
                let api: Api<Secret> = Api::namespaced(scene.client.clone(), &scene.namespace);
                api.create(&Default::default(), &secret)
                    .await
                    .expect("create the Secret");
            }
        }
    }

    async fn patch(self, scene: &Scene<'_>, name: &str, patch: Value) {
        let params = PatchParams::default();
        let patch = Patch::Merge(&patch);
        let done = match self {
            Kind::ConfigMap => scene
                .configmaps()
                .api
                .patch(name, &params, &patch)
                .await
                .map(drop),
            Kind::Secret => Api::<Secret>::namespaced(scene.client.clone(), &scene.namespace)
                .patch(name, &params, &patch)
                .await
                .map(drop),
        };
        done.unwrap_or_else(|e| panic!("patch {name}: {e}"));
    }

    /// The copy's labels and annotations.
    async fn metadata(
        self,
        scene: &Scene<'_>,
        name: &str,
    ) -> Option<(BTreeMap<String, String>, BTreeMap<String, String>)> {
        let meta = match self {
            Kind::ConfigMap => scene.configmaps().api.get_opt(name).await.ok()??.metadata,
            Kind::Secret => {
                Api::<Secret>::namespaced(scene.client.clone(), &scene.namespace)
                    .get_opt(name)
                    .await
                    .ok()??
                    .metadata
            }
        };
        Some((
            meta.labels.unwrap_or_default(),
            meta.annotations.unwrap_or_default(),
        ))
    }

    async fn wait_copy(
        self,
        scene: &Scene<'_>,
        what: &str,
        ok: impl Fn(&BTreeMap<String, String>, &BTreeMap<String, String>) -> bool,
    ) {
        wait_for(what, PATIENCE, || async {
            let (labels, annotations) = self.metadata(scene, "src-synced").await?;
            ok(&labels, &annotations).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("{self:?}: {e:#}"));
    }
}

fn merge(into: &mut Value, from: Value) {
    if let (Value::Object(into), Value::Object(from)) = (into, from) {
        for (key, value) in from {
            match into.get_mut(&key) {
                Some(existing @ Value::Object(_)) => merge(existing, value),
                _ => {
                    into.insert(key, value);
                }
            }
        }
    }
}

async fn listed_keys_are_carried_changed_and_removed_and_foreign_keys_stay(kind: Kind) {
    let scene = Scene::new("allowlist").await;
    let _controller = scene.configmaps().start_controller(&[BOTH_KINDS]).await;
    kind.create(
        &scene,
        "src",
        json!({
            "labels": {"team": "a", "app.kubernetes.io/name": "web", "unlisted": "x"},
            "annotations": {
                LABELS: "team,app.kubernetes.io/*",
                ANNOTATIONS: "example.com/*",
                "example.com/owner": "ops",
                "kubectl.kubernetes.io/last-applied-configuration": "{}",
            },
        }),
    )
    .await;
    kind.wait_copy(
        &scene,
        "the listed keys on the copy",
        |labels, annotations| {
            labels.get("team").map(String::as_str) == Some("a")
                && labels.get("app.kubernetes.io/name").map(String::as_str) == Some("web")
                && !labels.contains_key("unlisted")
                && !labels.contains_key("workshop.io/managed")
                && annotations.get("example.com/owner").map(String::as_str) == Some("ops")
                && !annotations.contains_key("kubectl.kubernetes.io/last-applied-configuration")
                && !annotations.contains_key(LABELS)
        },
    )
    .await;

    // Others' keys on the copy.
    kind.patch(
        &scene,
        "src-synced",
        json!({"metadata": {
            "labels": {"added-by-hand": "yes"},
            "annotations": {"webhook.example.org/stamp": "1"},
        }}),
    )
    .await;
    kind.patch(
        &scene,
        "src",
        json!({"metadata": {"labels": {"team": "b"}}}),
    )
    .await;
    kind.wait_copy(&scene, "the changed value", |labels, annotations| {
        labels.get("team").map(String::as_str) == Some("b")
            && labels.contains_key("added-by-hand")
            && annotations.contains_key("webhook.example.org/stamp")
    })
    .await;

    // Removed from the list, and from the source.
    kind.patch(
        &scene,
        "src",
        json!({"metadata": {"annotations": {LABELS: "app.kubernetes.io/*", "example.com/owner": null}}}),
    )
    .await;
    kind.wait_copy(&scene, "the removed keys gone", |labels, annotations| {
        !labels.contains_key("team")
            && labels.contains_key("app.kubernetes.io/name")
            && !annotations.contains_key("example.com/owner")
            && labels.contains_key("added-by-hand")
            && annotations.contains_key("webhook.example.org/stamp")
    })
    .await;
}

async fn a_malformed_list_is_warned_about_and_changes_nothing(kind: Kind) {
    let scene = Scene::new("allowlist-bad").await;
    let controller = scene.configmaps().start_controller(&[BOTH_KINDS]).await;
    kind.create(
        &scene,
        "src",
        json!({"labels": {"team": "a"}, "annotations": {LABELS: "team"}}),
    )
    .await;
    kind.wait_copy(&scene, "the label carried", |labels, _| {
        labels.get("team").map(String::as_str) == Some("a")
    })
    .await;
    let before = kind.metadata(&scene, "src-synced").await;
    let writes = controller.metric(WRITES, "").await;
    kind.patch(
        &scene,
        "src",
        json!({"metadata": {"labels": {"team": "b"}, "annotations": {LABELS: "te*am"}}}),
    )
    .await;
    let warning = scene.wait_event("src", "InvalidCopyList").await;
    assert!(warning.note.unwrap_or_default().contains(LABELS));
    assert_eq!(kind.metadata(&scene, "src-synced").await, before);
    assert_eq!(controller.metric(WRITES, "").await, writes);
}

async fn carried_keys_cost_no_write_across_a_restart(kind: Kind) {
    let scene = Scene::new("allowlist-steady").await;
    let controller = scene.configmaps().start_controller(&[BOTH_KINDS]).await;
    kind.create(
        &scene,
        "src",
        json!({"labels": {"team": "a"}, "annotations": {LABELS: "team", ANNOTATIONS: "x.example/*", "x.example/y": "z"}}),
    )
    .await;
    kind.wait_copy(&scene, "the keys carried", |labels, annotations| {
        labels.contains_key("team") && annotations.contains_key("x.example/y")
    })
    .await;
    let written = copy_version(kind, &scene).await;
    assert!(controller.stop().success());
    let restarted = scene.configmaps().start_controller(&[BOTH_KINDS]).await;
    restarted
        .metric_reaching(
            "configmap_mirror_resync_objects_total",
            "loop=\"sync\",result=\"in_sync\"",
            1.0,
        )
        .await;
    assert_eq!(restarted.metric(WRITES, "").await, 0.0);
    assert_eq!(copy_version(kind, &scene).await, written);
}

async fn copy_version(kind: Kind, scene: &Scene<'_>) -> Option<String> {
    match kind {
        Kind::ConfigMap => scene
            .configmaps()
            .api
            .get("src-synced")
            .await
            .ok()?
            .resource_version(),
        Kind::Secret => Api::<Secret>::namespaced(scene.client.clone(), &scene.namespace)
            .get("src-synced")
            .await
            .ok()?
            .resource_version(),
    }
}

mod configmap {
    use super::Kind;

    #[tokio::test]
    async fn listed_keys_are_carried_changed_and_removed_and_foreign_keys_stay() {
        super::listed_keys_are_carried_changed_and_removed_and_foreign_keys_stay(Kind::ConfigMap)
            .await;
    }

    #[tokio::test]
    async fn a_malformed_list_is_warned_about_and_changes_nothing() {
        super::a_malformed_list_is_warned_about_and_changes_nothing(Kind::ConfigMap).await;
    }

    #[tokio::test]
    async fn carried_keys_cost_no_write_across_a_restart() {
        super::carried_keys_cost_no_write_across_a_restart(Kind::ConfigMap).await;
    }
}

mod secret {
    use super::Kind;

    #[tokio::test]
    async fn listed_keys_are_carried_changed_and_removed_and_foreign_keys_stay() {
        super::listed_keys_are_carried_changed_and_removed_and_foreign_keys_stay(Kind::Secret)
            .await;
    }

    #[tokio::test]
    async fn a_malformed_list_is_warned_about_and_changes_nothing() {
        super::a_malformed_list_is_warned_about_and_changes_nothing(Kind::Secret).await;
    }

    #[tokio::test]
    async fn carried_keys_cost_no_write_across_a_restart() {
        super::carried_keys_cost_no_write_across_a_restart(Kind::Secret).await;
    }
}
