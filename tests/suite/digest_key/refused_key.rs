//! With the key refused, no Secret copy is written, but those no longer
//! wanted still go.

use super::*;

#[tokio::test]
async fn with_the_key_refused_a_source_unlabeled_still_loses_its_copy() {
    let scene = Scene::new("key-prune").await;
    let secrets = Objects::<Secret>::of(&scene);
    let controller = secrets.start_controller(&[]).await;
    for name in ["db", "kept"] {
        secrets
            .create(&mk_secret(name, "Opaque", &[("password", name)]))
            .await;
        secrets.companion_in_sync(name).await;
    }
    assert!(controller.stop().success());
    // No release can use this key.
    secrets.patch(KEY_SECRET, key_patch(&[0x44; 31])).await;
    let kept = secrets.get("kept-synced").await.expect("the copy");

    let controller = start_unready(&scene, &[]).await;
    unready_because(&controller, "digest key").await;
    secrets
        .patch("db", json!({"metadata": {"labels": {SOURCE_LABEL: null}}}))
        .await;
    secrets.wait_gone("db-synced").await;
    let still = secrets.get("kept-synced").await.expect("the kept copy");
    assert_eq!(still.resource_version(), kept.resource_version());
    unready_because(&controller, "digest key").await;
}

/// Apart from the other tests' control planes, one test at a time: the
/// controller of
/// [`with_the_key_refused_mirrors_still_go_when_consent_or_the_source_goes`]
/// watches the whole cluster.
static KEY_PLANE: Apart = Apart::new();

#[tokio::test]
async fn with_the_key_refused_mirrors_still_go_when_consent_or_the_source_goes() {
    let mut world = World::<Secret>::on(&KEY_PLANE, Runs::AsAdmin, "key-mirrors").await;
    // Accepting mirrors of every kind.
    let target = world
        .namespace("t", true, &[(ConfigMap::CONSENT_LABEL, "true")])
        .await;
    world.start().await;
    let mirrors = world.api(&target);
    for name in ["by-consent", "by-deletion"] {
        let mut source = mk_secret(name, "Opaque", &[("password", name)]);
        source.metadata.annotations = Some(BTreeMap::from([(
            "workshop.io/mirror-to".to_owned(),
            target.clone(),
        )]));
        world.objects().create(&source).await;
        wait_for(&format!("the mirror of {name}"), PATIENCE, || async {
            mirrors.get_opt(name).await.ok()?
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
    }
    world.stop();
    world
        .objects()
        .patch(KEY_SECRET, key_patch(&[0x55; 31]))
        .await;

    world.start_unready().await;
    unready_because(world.controller(), "digest key").await;
    world.objects().delete("by-deletion").await;
    world.objects_in(&target).wait_gone("by-deletion").await;
    for label in [ConfigMap::CONSENT_LABEL, Secret::CONSENT_LABEL] {
        world.label_namespace(&target, label, None).await;
    }
    world.objects_in(&target).wait_gone("by-consent").await;
    Api::<Namespace>::all(world.scene.client.clone())
        .delete(&target, &Default::default())
        .await
        .expect("delete the target namespace");
}
