//! `explain clustermirror/NAME` and `explain --namespace`, run as users
//! run them, against the controller that acted on the same ClusterMirrors:
//! each namespace's verdict must be what the controller did, and the
//! status explain computes the one the controller wrote. No output holds
//! the source's data.

use super::*;
use crate::explain::{Run, VALUE, described, explain, never_shows_the_value, row, rows, verdict};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

/// The controller's flags besides the kinds', which explain is given too.
fn flags(world_prefix: &str) -> [String; 2] {
    [
        format!("--cluster-mirror-source-namespaces={world_prefix}"),
        format!("--protected-namespaces=kube-system,{world_prefix}-guarded"),
    ]
}

pub(super) fn explain_as_admin<K: TestKind>(world: &World<K>, args: &[&str]) -> Run {
    let flags = flags(&world.prefix);
    let mut all: Vec<&str> = args.to_vec();
    all.extend(flags.iter().map(String::as_str));
    all.extend_from_slice(K::ARGS);
    let run = explain(world.scene.control_plane.kubeconfig_path(), &all);
    never_shows_the_value(&run);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    run
}

fn copy_verdict(json: &Value, namespace: &str) -> String {
    verdict(json, "clustermirror-copy", namespace)
}

pub(super) fn ready_reason(json: &Value) -> &Value {
    json["clusterMirror"]["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
        .map(|c| &c["reason"])
        .unwrap_or(&Value::Null)
}

async fn each_namespace_is_explained_as_the_controller_acted<K: TestKind>(tag: &str) {
    let mut world = World::<K>::new_stopped(tag).await;
    install_crd(&world.scene.client).await;
    let flags = flags(&world.prefix);
    world
        .start_with(&flags.iter().map(String::as_str).collect::<Vec<_>>())
        .await;
    world
        .objects()
        .create(&K::with_data("corp", &[("k", VALUE)], false))
        .await;
    let synced = world.namespace("synced", false, &[("env", "prod")]).await;
    let taken = world.namespace("taken", false, &[("env", "prod")]).await;
    let guarded = world.namespace("guarded", false, &[("env", "prod")]).await;
    let plain = world.namespace("plain", false, &[]).await;
    let mut tenants = K::with_data("corp", &[("k", "tenant's")], false);
    tenants.meta_mut().namespace = Some(taken.clone());
    world
        .api(&taken)
        .create(&PostParams::default(), &tenants)
        .await
        .expect("the tenant's object");
    create(&world, "corp", "corp").await;
    cluster_copy_in_sync(&world, &synced, "corp", "corp").await;
    let acted = ready(&world, "corp", "PartiallySynced").await;

    let run = explain_as_admin(&world, &["clustermirror/corp", "-o", "json"]);
    assert_eq!(run.code, Some(1), "a name is taken");
    let json = run.json();
    assert_eq!(json["subject"]["is"], "clustermirror");
    assert_eq!(verdict(&json, "clustermirror", ""), "partially-synced");
    let in_sync = match K::kind(&()).as_ref() {
        "Secret" => "in-sync-unverified",
        _ => "in-sync",
    };
    assert_eq!(
        copy_verdict(&json, &synced),
        in_sync,
        "{}",
        described(&json)
    );
    assert_eq!(copy_verdict(&json, &taken), "name-taken");
    assert_eq!(copy_verdict(&json, &guarded), "protected-namespace");
    assert!(
        rows(&json)
            .iter()
            .all(|row| row["namespace"] != plain.as_str()),
        "a namespace not selected is not listed:\n{}",
        described(&json)
    );
    let detail = row(&json, "clustermirror-copy", &taken)["detail"].clone();
    assert!(
        detail.as_str().unwrap_or_default().contains("someone else"),
        "{detail}"
    );
    // The status explain computes is the one the controller wrote.
    let status = &json["clusterMirror"]["status"];
    for count in ["selected", "synced", "failed"] {
        assert_eq!(status[count], acted.data["status"][count], "{count}");
    }
    assert_eq!(status["failures"], acted.data["status"]["failures"]);
    assert_eq!(ready_reason(&json), "PartiallySynced");
    // cmir/ and clustermirrors/ name it too; the table says the same.
    let table = explain_as_admin(&world, &["cmir/corp"]);
    assert_eq!(table.code, Some(1));
    assert!(
        table
            .stdout
            .lines()
            .any(|line| line.starts_with("clustermirror-copy")
                && line.contains(taken.as_str())
                && line.contains("name-taken")),
        "no table line says {taken}: name-taken"
    );
    let plural = explain_as_admin(&world, &["clustermirrors/corp", "-o", "json"]);
    assert_eq!(described(&plural.json()), described(&json));
    // With --kind, clustermirror/ is a namespace of that name, as ever.
    let object = explain_as_admin(
        &world,
        &[
            "clustermirror/corp",
            "--kind",
            crate::explain::kind_flag::<K>(),
            "-o",
            "json",
        ],
    );
    assert_eq!(object.json()["subject"]["kind"], K::kind(&()).as_ref());

    // Each namespace, explained on its own, says the same.
    let view = explain_as_admin(&world, &["--namespace", &synced, "-o", "json"]);
    assert_eq!(view.code, Some(0), "{}", described(&view.json()));
    let mine = rows(&view.json())
        .into_iter()
        .find(|row| row["clusterMirror"] == "corp")
        .unwrap_or_else(|| panic!("no ClusterMirror row:\n{}", described(&view.json())));
    assert_eq!(mine["verdict"], in_sync);
    // A copy, explained on its own, is its ClusterMirror's to judge.
    let copy = format!("{synced}/corp");
    let run = explain_as_admin(
        &world,
        &[
            &copy,
            "--kind",
            crate::explain::kind_flag::<K>(),
            "-o",
            "json",
        ],
    );
    assert_eq!(run.code, Some(0), "{}", described(&run.json()));
    assert_eq!(run.json()["subject"]["is"], "copy");
    assert_eq!(copy_verdict(&run.json(), &synced), in_sync);
    let view = explain_as_admin(&world, &["--namespace", &plain, "-o", "json"]);
    assert_eq!(view.code, Some(0), "{}", described(&view.json()));
    assert_eq!(copy_verdict(&view.json(), &plain), "not-targeted");
    let view = explain_as_admin(&world, &["--namespace", &taken, "-o", "json"]).json();
    assert_eq!(copy_verdict(&view, &taken), "name-taken");

    // Suspended: a copy deleted stays missing, and explain says why.
    patch_spec(&world, "corp", json!({"suspend": true})).await;
    let suspended = observed(&world, "corp").await;
    assert_eq!(
        condition(&suspended, "Ready").unwrap()["reason"],
        "Suspended"
    );
    let (selected, in_sync_before, failed, _) = counts(&suspended);
    world
        .api(&synced)
        .delete("corp", &DeleteParams::default())
        .await
        .expect("delete a copy");
    // The reconcile that saw the copy go counts it missing in the status it
    // writes after deciding to write nothing.
    counted(&world, "corp", (selected, in_sync_before - 1, failed)).await;
    assert!(world.api(&synced).get_opt("corp").await.unwrap().is_none());
    let json = explain_as_admin(&world, &["clustermirror/corp", "-o", "json"]).json();
    assert_eq!(verdict(&json, "clustermirror", ""), "suspended");
    assert_eq!(copy_verdict(&json, &synced), "missing");
    let detail = row(&json, "clustermirror-copy", &synced)["detail"].clone();
    assert!(
        detail.as_str().unwrap_or_default().contains("suspended"),
        "{detail}"
    );

    // A source outside the allowed namespaces: nothing is copied.
    let elsewhere = world.namespace("elsewhere", false, &[]).await;
    let mut outside = K::with_data("outside", &[("k", VALUE)], false);
    outside.meta_mut().namespace = Some(elsewhere.clone());
    world
        .api(&elsewhere)
        .create(&PostParams::default(), &outside)
        .await
        .expect("a source elsewhere");
    create_with(&world, "outside", json!({
        "source": {"kind": K::kind(&()), "namespace": elsewhere, "name": "outside"},
        "target": {"namespaceSelector": {"matchLabels": {"env": "prod"}}, "namespaces": [format!("{}-*", world.prefix)]},
    }))
    .await;
    ready(&world, "outside", "SourceNamespaceNotAllowed").await;
    let run = explain_as_admin(&world, &["clustermirror/outside", "-o", "json"]);
    assert_eq!(run.code, Some(1));
    let json = run.json();
    assert_eq!(
        verdict(&json, "clustermirror", ""),
        "source-namespace-not-allowed"
    );
    assert_eq!(copy_verdict(&json, &synced), "not-copied");
    assert_eq!(ready_reason(&json), "SourceNamespaceNotAllowed");
    clean_up(world, &["corp", "outside"]).await;
}

#[tokio::test]
async fn explain_a_configmap_clustermirror_namespace_by_namespace() {
    each_namespace_is_explained_as_the_controller_acted::<ConfigMap>("cmir-ex-cm").await;
}

#[tokio::test]
async fn explain_a_secret_clustermirror_namespace_by_namespace() {
    each_namespace_is_explained_as_the_controller_acted::<Secret>("cmir-ex-secret").await;
}
