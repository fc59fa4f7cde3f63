//! After a hand-over, a status the install before still wrote is written
//! over; two installs of one class are told of.

use super::*;

/// A reconcile of the install before a hand-over may still be running
/// when the class changes, and write its status last, for the spec before:
/// the install now serving the ClusterMirror writes it over, and no one is
/// warned of a conflict. The late write is made here as that install makes
/// it: its own field manager, the status it wrote before.
#[tokio::test]
async fn a_status_the_install_before_a_hand_over_writes_late_is_written_over() {
    let world = super::super::world::<ConfigMap>("cmir-late-status").await;
    let second = second_install(&world, CLASS).await;
    let first_manager = field_manager("configmap-mirror");
    world
        .objects()
        .create(&ConfigMap::with_data("colors", &[("k", "v")], false))
        .await;
    let prod = world.namespace("a", false, &[("env", "prod")]).await;
    create_with(&world, "plain", spec(&world, "colors", None)).await;
    ready(&world, "plain", "Synced").await;
    let before = status_written_by(&world, "plain", &first_manager).await;
    let stale = before.data["status"].clone();

    let handed = hand_plain_over(&world, &second).await;
    let api = cluster_mirrors(&world.scene.client);
    let resource = crate::cluster_mirror::resource();
    let late = json!({
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "status": stale,
    });
    api.patch_status(
        "plain",
        &PatchParams::apply(&first_manager).force(),
        &Patch::Apply(&late),
    )
    .await
    .expect("the late status");
    let generation = handed.metadata.generation;
    let rewritten = testenv::wait_for(
        "plain's status written again for its current spec",
        PATIENCE,
        || async {
            let object = api.get_opt("plain").await.ok()??;
            let observed = object.data["status"]["observedGeneration"].as_i64();
            (observed.is_some() && observed == generation).then_some(object)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", second.log_text()));
    assert_eq!(condition(&rewritten, "Ready").unwrap()["reason"], "Synced");
    tokio::time::sleep(QUIET).await;
    let conflicts = conflicts_told(&world, &["plain"]).await;
    assert!(conflicts.is_empty(), "{conflicts:?}");
    // Deleted, its copy goes with the install that now serves it.
    api.delete("plain", &DeleteParams::default())
        .await
        .expect("delete");
    world.no_mirror(&prod, "colors").await;
    assert!(second.stop().success());
    clean_up(world, &[]).await;
}

/// Two installs of one class are a configuration error: each tells it in
/// a Warning on the ClusterMirror, naming the other's field manager. Here
/// the second does not allow the source's namespace, so the two statuses
/// differ, as they do in the field.
#[tokio::test]
async fn two_installs_of_one_class_are_told_so_in_a_warning() {
    let world = super::world::<ConfigMap>("cmir-same-class").await;
    let elsewhere = world.namespace("elsewhere", false, &[]).await;
    let kubeconfig = world.scene.control_plane.kubeconfig_path().to_path_buf();
    let key = format!("{}/second-digest-key", world.prefix);
    let lease = second_lease(&world);
    let second = ControllerProcess::start(
        world.scene.control_plane,
        &kubeconfig,
        "second",
        &[
            "--digest-key-secret",
            &key,
            "--selector",
            SECOND_SELECTOR,
            "--cluster-mirror-source-namespaces",
            &elsewhere,
            "--leader-election-id",
            &lease,
        ],
    )
    .await;
    world
        .objects()
        .create(&ConfigMap::with_data("colors", &[("k", "v")], false))
        .await;
    world.namespace("a", false, &[("env", "prod")]).await;
    create_with(&world, "fought", spec(&world, "colors", None)).await;
    let events: Api<Event> = Api::namespaced(world.scene.client.clone(), "default");
    let conflict = testenv::wait_for(
        "a ClusterMirrorClassConflict Warning on fought",
        PATIENCE,
        || async {
            let listed = events.list(&ListParams::default()).await.ok()?;
            listed.items.into_iter().find(|e| {
                e.reason.as_deref() == Some("ClusterMirrorClassConflict")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("fought")
            })
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", second.log_text()));
    let note = conflict.note.unwrap_or_default();
    assert_eq!(conflict.type_.as_deref(), Some("Warning"));
    let named = [field_manager("configmap-mirror"), field_manager(&lease)];
    assert!(
        named.iter().any(|manager| note.contains(manager.as_str()))
            && note.contains("--cluster-mirror-class"),
        "{note}"
    );
    assert!(second.stop().success());
    clean_up(world, &["fought"]).await;
}
