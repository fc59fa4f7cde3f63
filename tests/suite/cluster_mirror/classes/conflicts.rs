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
    // Each install has followed the rewrite, which a conflict would be told
    // of (an Event published in the background: its log line is not).
    caught_up(&world, None).await;
    caught_up(&world, Some(CLASS)).await;
    for log in [world.controller().log_text(), second.log_text()] {
        assert!(!log.contains("ClusterMirrorClassConflict"), "{log}");
    }
    let conflicts = conflicts_told(&world, &["plain"]).await;
    assert!(conflicts.is_empty(), "{conflicts:?}");
    // Deleted, its copy goes with the install that now serves it.
    api.delete("plain", &DeleteParams::default())
        .await
        .expect("delete");
    world.objects_in(&prod).wait_gone("colors").await;
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

/// An install of the same class and of a newer version may write only the
/// status fields this version does not read: a write all the same, two
/// installs serving one class, told of.
#[tokio::test]
async fn a_newer_install_writing_only_status_fields_this_version_does_not_read_is_told_of() {
    let mut world = crate::common::World::<ConfigMap>::new_stopped("cmir-newer-status").await;
    install_crd(&world.scene.client).await;
    let own = field_manager("configmap-mirror");
    let newer_install = field_manager(&format!("{}-newer", world.prefix));
    let name = format!("{}-shared", world.prefix);
    let status = "/spec/versions/0/schema/openAPIV3Schema/properties/status/properties";
    let mut newer_crd = install_newer_crd(&world, |crd| {
        let fields = crd
            .pointer_mut(status)
            .and_then(Value::as_object_mut)
            .expect("the status fields of the CRD");
        fields.insert("keysCopied".into(), json!({"type": "integer"}));
    })
    .await;
    newer_crd.made = vec![name.clone()];
    world
        .objects()
        .create(&ConfigMap::with_data("colors", &[("k", "v")], false))
        .await;
    world.namespace("a", false, &[("env", "prod")]).await;
    create_with(&world, &name, spec(&world, "colors", None)).await;

    let api = cluster_mirrors(&world.scene.client);
    let resource = crate::cluster_mirror::resource();
    let theirs = json!({
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "status": {"keysCopied": 1},
    });
    let write = PatchParams::apply(&newer_install).force();
    // The API server prunes by the newer CRD a moment after it reads back
    // changed: a dry run keeping the field says it does.
    testenv::wait_for("the API server to keep keysCopied", PATIENCE, || async {
        let dry_run = write.clone().dry_run();
        let kept = api
            .patch_status(&name, &dry_run, &Patch::Apply(&theirs))
            .await
            .ok()?;
        kept.data["status"].get("keysCopied").map(drop)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    // The controller watches from the newer CRD on: the watches of the CRD
    // before are ended, and the list that follows takes in whatever was
    // written meanwhile, as no write.
    let sources = world.prefix.clone();
    world
        .start_with(&["--cluster-mirror-source-namespaces", &sources])
        .await;
    ready(&world, &name, "Synced").await;
    let ours = status_written_by(&world, &name, &own).await;
    // managedFields times are whole seconds: a write of the same second as
    // this install's own is not known to be later.
    let own_second = ours
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .find(|e| e.subresource.as_deref() == Some("status") && e.manager.as_deref() == Some(&own))
        .and_then(|e| e.time.as_ref())
        .map(|t| t.0.as_second())
        .expect("the time of its own status write");
    testenv::wait_for("a second after its own write", PATIENCE, || async {
        (k8s_openapi::jiff::Timestamp::now().as_second() > own_second).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    let written = api
        .patch_status(&name, &write, &Patch::Apply(&theirs))
        .await
        .expect("the newer install's status write");
    assert_eq!(
        written.data["status"]["synced"], ours.data["status"]["synced"],
        "a write of only the fields this version does not read"
    );
    let events: Api<Event> = Api::namespaced(world.scene.client.clone(), "default");
    let conflict = testenv::wait_for(
        &format!("a ClusterMirrorClassConflict Warning on {name}"),
        PATIENCE,
        || async {
            let listed = events.list(&ListParams::default()).await.ok()?;
            listed.items.into_iter().find(|e| {
                e.reason.as_deref() == Some("ClusterMirrorClassConflict")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(&name)
            })
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
    let note = conflict.note.unwrap_or_default();
    assert!(note.contains(&newer_install), "{note}");
    drop(newer_crd);
    clean_up(world, &[]).await;
}
