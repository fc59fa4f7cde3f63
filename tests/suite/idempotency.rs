//! At steady state the controller writes nothing, and it never writes a
//! ConfigMap that is not its own.

use crate::common;

use std::collections::BTreeMap;

use common::{Scene, mk_source, mk_unmanaged};
use kube::{ResourceExt, api::ListParams};

const SOURCES: usize = 30;
const RESYNC: &str = "configmap_mirror_resync_objects_total";
const RESYNC_SYNC_IN_SYNC: &str = "loop=\"sync\",result=\"in_sync\"";
const RESYNC_PRUNE_IN_SYNC: &str = "loop=\"prune\",result=\"in_sync\"";

async fn resource_versions(scene: &Scene<'_>) -> BTreeMap<String, String> {
    let list = scene
        .configmaps()
        .api
        .list(&ListParams::default())
        .await
        .expect("list configmaps");
    list.items
        .into_iter()
        .map(|cm| (cm.name_any(), cm.resource_version().unwrap_or_default()))
        .collect()
}

#[tokio::test]
async fn a_converged_cluster_sees_no_write_across_a_restart() {
    let scene = Scene::new("steady").await;
    let controller = scene.configmaps().start_controller(&[]).await;
    for i in 0..SOURCES {
        scene
            .configmaps()
            .create(&mk_source(&format!("source-{i}"), &[("i", &i.to_string())]))
            .await;
    }
    for i in 0..SOURCES {
        scene
            .configmaps()
            .companion_in_sync(&format!("source-{i}"))
            .await;
    }
    assert_eq!(
        controller.writes_reaching(SOURCES as f64).await,
        SOURCES as f64
    );
    let converged = resource_versions(&scene).await;
    assert!(
        controller.stop().success(),
        "SIGTERM ends the controller with exit 0"
    );

    // The restart reads its first lists the other way: both must fill the
    // caches with the same objects.
    let restarted = scene
        .configmaps()
        .start_controller(&["--initial-list", "list"])
        .await;
    // Once its caches were full, the restarted controller compared every
    // source and every companion with what it should be...
    for checked in [RESYNC_SYNC_IN_SYNC, RESYNC_PRUNE_IN_SYNC] {
        let seen = restarted
            .metric_reaching(RESYNC, checked, SOURCES as f64)
            .await;
        assert!(seen >= SOURCES as f64, "{checked}: {seen} of {SOURCES}");
    }
    // ...found nothing to do...
    assert_eq!(restarted.metric(RESYNC, "result=\"queued\"").await, 0.0);
    // ...and none of them needed a write.
    assert_eq!(restarted.writes().await, 0.0);
    assert_eq!(resource_versions(&scene).await, converged);
}

#[tokio::test]
async fn unmanaged_configmaps_are_never_written() {
    let scene = Scene::new("unmanaged").await;
    let _mirror = scene.configmaps().start_controller(&[]).await;
    let mut bystanders = BTreeMap::new();
    for name in ["plain", "other-synced", "colors-synced-not", "x"] {
        let cm = scene
            .configmaps()
            .create(&mk_unmanaged(name, &[("k", "v")]))
            .await;
        bystanders.insert(name.to_owned(), cm.resource_version());
    }

    // A whole life of a source happens around them.
    scene.live_through_change_and_heal("colors").await;
    scene.configmaps().unlabel("colors").await;
    scene.configmaps().wait_gone("colors-synced").await;

    for (name, version) in bystanders {
        let now = scene
            .configmaps()
            .get(&name)
            .await
            .expect("bystander still exists");
        assert_eq!(now.resource_version(), version, "{name} was written");
    }
}
