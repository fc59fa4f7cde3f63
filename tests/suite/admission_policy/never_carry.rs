//! The keys no copy carries, as the policy guards them: the built-in list
//! and `controller.neverCarry` (here `example.com/team`, set on the shared
//! install) are refused to anyone, the controller included, who adds one
//! to a copy; the controller leaves the added key off its copies, and
//! `explain`, given the same flag, says so.

use super::*;

use std::process::Command;

/// The key the shared install's `controller.neverCarry` adds.
pub(super) const NEVER_CARRY: &str = "example.com/team";

#[tokio::test]
async fn adding_a_never_carried_key_to_a_copy_is_refused_to_everyone() {
    let mut world = world::<ConfigMap>("vap-never").await;
    world.start().await;
    source_to_targets(&world, "app").await;
    let source = format!("{}/app", world.scene.namespace);
    let targets = targets(&world);
    world.copy_in_sync(&targets, "app", "app").await;

    let edits: [(&str, Value); 3] = [
        (
            "argocd.argoproj.io/instance",
            json!({"metadata": {"labels": {"argocd.argoproj.io/instance": "apps"}}}),
        ),
        (
            NEVER_CARRY,
            json!({"metadata": {"annotations": {NEVER_CARRY: "a"}}}),
        ),
        (
            "cli-utils.sigs.k8s.io/inventory-id",
            json!({"metadata": {"labels": {"cli-utils.sigs.k8s.io/inventory-id": "apps"}}}),
        ),
    ];
    let controller = Client::try_from(control_plane().token_config(&installed().await.token))
        .expect("the controller's client");
    let as_controller: Api<ConfigMap> = Api::namespaced(controller, &targets);
    for (key, patch) in &edits {
        let message = refused(world.try_patch(&targets, "app", patch).await, key);
        assert!(
            message.contains(&format!("is a copy of {source} "))
                && message.contains(&format!("may not be given {key}")),
            "{key}: {message}"
        );
        // The controller writes whole objects: a copy it would create so.
        let mut copy = labeled_configmap("forged-by-controller");
        let mut meta = serde_json::to_value(&copy.metadata).expect("metadata");
        json_merge(&mut meta, &patch["metadata"]);
        copy.metadata = serde_json::from_value(meta).expect("metadata");
        let by_controller = as_controller.create(&PostParams::default(), &copy).await;
        refused(by_controller, &format!("{key}, by the controller"));
    }
    // One already there (put by break-glass, or from before the policy)
    // keeps its value: changed by anyone but the controller, refused.
    let inventory = "cli-utils.sigs.k8s.io/inventory-id";
    let put = json!({"metadata": {"labels": {inventory: "before"}}});
    let (ok, err) =
        patch_as::<ConfigMap>(&targets, "app", &put, BREAK_GLASS_USER, &["system:masters"]);
    assert!(ok, "break-glass put {inventory} on a copy: {err}");
    let changed = json!({"metadata": {"labels": {inventory: "elsewhere"}}});
    let message = refused(world.try_patch(&targets, "app", &changed).await, inventory);
    assert!(
        message.contains(&format!("may not be given {inventory}")),
        "{message}"
    );
    // Keys of no tool stay free.
    world
        .try_patch(
            &targets,
            "app",
            &json!({"metadata": {"labels": {"example.com/tier": "1"}}}),
        )
        .await
        .expect("a label of one's own on a copy");
    world.finish().await;
}

#[tokio::test]
async fn a_key_never_carry_adds_is_left_off_the_copies_and_explain_says_so() {
    let mut world = world::<ConfigMap>("vap-never-carry").await;
    assert!(
        installed()
            .await
            .pod
            .args
            .contains(&format!("--never-carry={NEVER_CARRY}")),
        "{:?}",
        installed().await.pod.args
    );
    world.start().await;
    let mut source = ConfigMap::with_data("app", &[("key", VALUE)], true);
    source
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .extend([
            (NEVER_CARRY.to_owned(), "a".to_owned()),
            ("example.com/tier".to_owned(), "1".to_owned()),
        ]);
    source.metadata.annotations = Some(BTreeMap::from([
        ("workshop.io/mirror-to".into(), targets(&world)),
        ("workshop.io/copy-labels".into(), "example.com/*".into()),
    ]));
    world
        .api(&world.scene.namespace)
        .create(&PostParams::default(), &source)
        .await
        .expect("create the source");
    let targets = targets(&world);
    let carried =
        |copy: &ConfigMap| copy.labels().get("example.com/tier").map(String::as_str) == Some("1");
    wait_for("the mirror with example.com/tier", PATIENCE, || async {
        world
            .api(&targets)
            .get_opt("app")
            .await
            .ok()
            .flatten()
            .filter(carried)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    for (namespace, name) in [(&world.scene.namespace, "app-synced"), (&targets, "app")] {
        let copy = world.copy_in_sync(namespace, name, "app").await;
        assert!(
            !copy.labels().contains_key(NEVER_CARRY),
            "{namespace}/{name}: {:?}",
            copy.labels()
        );
    }

    let explained = Command::new(env!("CARGO_BIN_EXE_configmap-mirror"))
        .args([
            "explain",
            &format!("{}/app", world.scene.namespace),
            "--kind",
            "configmap",
            "-o",
            "json",
            &format!("--never-carry={NEVER_CARRY}"),
        ])
        .env("KUBECONFIG", control_plane().kubeconfig_path())
        .env_remove("MIRROR_NEVER_CARRY")
        .output()
        .expect("run explain");
    let json: Value = serde_json::from_slice(&explained.stdout).expect("explain's JSON");
    let source_row = json["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|row| row["what"] == "source")
        .cloned()
        .unwrap_or_default();
    let detail = source_row["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains(NEVER_CARRY) && detail.contains("never carried"),
        "{detail}"
    );
    world.finish().await;
}

/// `patch`'s keys written into `target`, objects merged.
fn json_merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                json_merge(target.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
        (target, patch) => *target = patch.clone(),
    }
}
