//! A ClusterMirror's copies are removed only for a deletion made by
//! someone. One that went while the controller was not running, of copies
//! that record no CRD (written by an earlier version), leaves them as
//! orphans: kept as they are, counted, told about once and explained;
//! applied again under the same name, it adopts them in place; deleted
//! then, it removes them. (Copies that record their CRD are removed:
//! `unseen_deletion`.)

use super::*;
use crate::common::{Objects, Scene};
use crate::explain::{described, rows, verdict};
use configmap_mirror::contract::{
    DELETION_POLICY_ANNOTATION, MIRROR_OF_UID_ANNOTATION, WRITTEN_UNDER_CRD_ANNOTATION,
};
use k8s_openapi::api::{
    core::v1::{ConfigMap, Secret},
    events::v1::Event,
};
use kube::api::ListParams;

const ORPHANS: &str = "configmap_mirror_clustermirror_orphans";

/// The copy in `namespace` as it is, which must be there.
async fn present<K: TestKind>(world: &World<K>, namespace: &str, name: &str) -> K {
    world
        .api(namespace)
        .get_opt(name)
        .await
        .expect("get the copy")
        .unwrap_or_else(|| {
            panic!(
                "{namespace}/{name} is gone\n{}",
                world.controller().log_text()
            )
        })
}

/// Stops the controller; meanwhile makes its copy `copy` in each of
/// `namespaces` as an earlier version wrote it, recording no CRD, and
/// deletes the ClusterMirror `name`; then starts it again. Returns the
/// copies as left then.
async fn deleted_while_stopped<K: TestKind>(
    world: &mut World<K>,
    name: &str,
    copy: &str,
    namespaces: &[&str],
) -> Vec<K> {
    for namespace in namespaces {
        let api = world.api(namespace);
        testenv::wait_for(
            &format!("{namespace}/{copy} to record its CRD"),
            PATIENCE,
            || async {
                let copy = api.get_opt(copy).await.ok()??;
                (copy.annotations())
                    .contains_key(WRITTEN_UNDER_CRD_ANNOTATION)
                    .then_some(())
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
    }
    world.stop();
    let mut unmarked = Vec::new();
    let unmark = json!({"metadata": {"annotations": {
        DELETION_POLICY_ANNOTATION: null,
        WRITTEN_UNDER_CRD_ANNOTATION: null,
    }}});
    for namespace in namespaces {
        let api = world.api(namespace);
        let patched = api
            .patch(copy, &PatchParams::default(), &Patch::Merge(&unmark))
            .await
            .expect("unmark the copy");
        unmarked.push(patched);
    }
    cluster_mirrors(&world.scene.client)
        .delete(name, &DeleteParams::default())
        .await
        .expect("delete the ClusterMirror");
    let sources = world.prefix.clone();
    world
        .start_with(&["--cluster-mirror-source-namespaces", &sources])
        .await;
    unmarked
}

/// The Warning Events `reason` about objects called `name` in `namespaces`.
async fn warnings(scene: &Scene<'_>, namespaces: &[&str], name: &str, reason: &str) -> usize {
    let mut found = 0;
    for namespace in namespaces {
        let events: Api<Event> = Api::namespaced(scene.client.clone(), namespace);
        let listed = events.list(&ListParams::default()).await.expect("events");
        found += listed
            .items
            .iter()
            .filter(|e| {
                e.reason.as_deref() == Some(reason)
                    && e.type_.as_deref() == Some("Warning")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
            })
            .count();
    }
    found
}

/// Applies the ClusterMirror `name` again, waits until it has adopted the
/// copy in each of `namespaces` (bound to its new uid), and returns them.
async fn reapplied<K: TestKind>(
    world: &World<K>,
    name: &str,
    source: &str,
    namespaces: &[&str],
) -> Vec<K> {
    let again = create(world, name, source).await;
    let uid = again.metadata.uid.clone().unwrap_or_default();
    let mut adopted = Vec::new();
    for namespace in namespaces {
        let api = world.api(namespace);
        let copy = testenv::wait_for(
            &format!("{namespace}/{source} bound to the ClusterMirror applied again"),
            PATIENCE,
            || async {
                let copy = api.get_opt(source).await.ok()??;
                let bound = copy.annotations().get(MIRROR_OF_UID_ANNOTATION)?;
                bound.ends_with(&format!(".{uid}")).then_some(copy)
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
        adopted.push(copy);
    }
    adopted
}

#[tokio::test]
async fn a_clustermirror_deleted_while_the_controller_is_down_leaves_its_copies_as_orphans() {
    let mut world = super::world::<ConfigMap>("cmir-orphan-restart").await;
    world
        .objects()
        .create(&ConfigMap::with_data("corp-ca", &[("ca", "one")], false))
        .await;
    let a = world.namespace("a", false, &[("env", "prod")]).await;
    let b = world.namespace("b", false, &[("env", "prod")]).await;
    create(&world, "gone", "corp-ca").await;
    cluster_copy_in_sync(&world, &a, "corp-ca", "gone").await;
    cluster_copy_in_sync(&world, &b, "corp-ca", "gone").await;
    ready(&world, "gone", "Synced").await;

    let before = deleted_while_stopped(&mut world, "gone", "corp-ca", &[&a, &b]).await;
    let orphans = world
        .controller()
        .metric_reaching(ORPHANS, "clustermirror=\"gone\"", 2.0)
        .await;
    assert_eq!(orphans, 2.0, "{}", world.controller().log_text());
    let told = testenv::wait_for("the orphans to be told about", PATIENCE, || async {
        let found = warnings(&world.scene, &[&a, &b], "corp-ca", "CopyOrphaned").await;
        (found > 0).then_some(found)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
    // Told of once, whichever prune came first: the other's too is made.
    let copies = [format!("{a}/corp-ca"), format!("{b}/corp-ca")];
    kept_as_orphans(world.controller(), &copies.each_ref().map(String::as_str)).await;
    for (namespace, before) in [&a, &b].into_iter().zip(&before) {
        let kept = present(&world, namespace, "corp-ca").await;
        assert_eq!(kept.uid(), before.uid(), "{namespace}: the same object");
        assert_eq!(
            kept.resource_version(),
            before.resource_version(),
            "{namespace}: never rewritten"
        );
    }
    assert_eq!(told, 1, "told once for the ClusterMirror, not per copy");
    assert_eq!(
        warnings(&world.scene, &[&a, &b], "corp-ca", "CopyOrphaned").await,
        1
    );
    assert!(
        world
            .controller()
            .log_text()
            .contains("ClusterMirror gone is gone and its deletion was not seen")
    );

    // explain says so of the copy, and of its namespace.
    let copy = format!("{a}/corp-ca");
    let run = super::explain::explain_as_admin(&world, &[&copy, "-o", "json"]);
    assert_eq!(run.code, Some(1), "{}", described(&run.json()));
    assert_eq!(verdict(&run.json(), "clustermirror-copy", &a), "orphaned");
    let view = super::explain::explain_as_admin(&world, &["--namespace", &b, "-o", "json"]).json();
    let orphan = rows(&view)
        .into_iter()
        .find(|row| row["clusterMirror"] == "gone")
        .unwrap_or_else(|| panic!("no row of the orphan:\n{}", described(&view)));
    assert_eq!(orphan["verdict"], "orphaned", "{}", described(&view));
    assert_eq!(orphan["name"], "corp-ca");

    // The way out: apply it again, then delete it.
    reapplied(&world, "gone", "corp-ca", &[&a, &b]).await;
    // Its own: the copies of earlier tests, in namespaces still being
    // deleted, are orphans to this controller too, which never saw their
    // ClusterMirrors go.
    let orphans = (world.controller())
        .metric(ORPHANS, "clustermirror=\"gone\"")
        .await;
    assert_eq!(orphans, 0.0, "adopted");
    cluster_mirrors(&world.scene.client)
        .delete("gone", &DeleteParams::default())
        .await
        .expect("delete the ClusterMirror");
    world.objects_in(&a).wait_gone("corp-ca").await;
    world.objects_in(&b).wait_gone("corp-ca").await;
    clean_up(world, &[]).await;
}

/// An orphan adopted by the ClusterMirror applied again: the same object,
/// its content as it was; only what binds it to its ClusterMirror changes.
async fn adopts_in_place<K: TestKind>(tag: &str) {
    let mut world = super::world::<K>(tag).await;
    // Immutable: an adoption that rewrote the content would have to
    // delete and create it.
    world
        .objects()
        .create(&Objects::<K>::immutable(K::with_data(
            "pull",
            &[("k", "v")],
            false,
        )))
        .await;
    let prod = world.namespace("a", false, &[("env", "prod")]).await;
    create(&world, "pull", "pull").await;
    cluster_copy_in_sync(&world, &prod, "pull", "pull").await;
    ready(&world, "pull", "Synced").await;

    let [before] =
        <[K; 1]>::try_from(deleted_while_stopped(&mut world, "pull", "pull", &[&prod]).await)
            .unwrap_or_else(|_| unreachable!("one namespace"));
    world
        .controller()
        .metric_reaching(ORPHANS, "clustermirror=\"pull\"", 1.0)
        .await;
    let kept = present(&world, &prod, "pull").await;
    assert_eq!(kept.uid(), before.uid());

    let [adopted] = <[K; 1]>::try_from(reapplied(&world, "pull", "pull", &[&prod]).await)
        .unwrap_or_else(|_| unreachable!("one namespace"));
    assert_eq!(adopted.uid(), before.uid(), "adopted in place");
    assert!(adopted.same_content(&before), "its content as it was");
    ready(&world, "pull", "Synced").await;
    let orphans = (world.controller())
        .metric(ORPHANS, "clustermirror=\"pull\"")
        .await;
    assert_eq!(orphans, 0.0, "adopted");
    clean_up(world, &["pull"]).await;
}

#[tokio::test]
async fn a_clustermirror_applied_again_adopts_its_configmap_orphans_in_place() {
    adopts_in_place::<ConfigMap>("cmir-adopt-cm").await;
}

#[tokio::test]
async fn a_clustermirror_applied_again_adopts_its_secret_orphans_in_place() {
    adopts_in_place::<Secret>("cmir-adopt-secret").await;
}

#[tokio::test]
async fn reserving_a_name_later_removes_the_clustermirror_copies_at_that_name() {
    let mut world = super::world::<ConfigMap>("cmir-reserved-later").await;
    world
        .objects()
        .create(&ConfigMap::with_data("shared-ca", &[("ca", "one")], false))
        .await;
    let prod = world.namespace("a", false, &[("env", "prod")]).await;
    create(&world, "shared", "shared-ca").await;
    cluster_copy_in_sync(&world, &prod, "shared-ca", "shared").await;
    world.stop();
    let sources = world.prefix.clone();
    world
        .start_with(&[
            "--cluster-mirror-source-namespaces",
            &sources,
            "--reserved-names",
            "other,shared-ca",
        ])
        .await;
    world.objects_in(&prod).wait_gone("shared-ca").await;
    let refused = ready(&world, "shared", "SourceNotCopyable").await;
    let message = condition(&refused, "Ready").expect("Ready")["message"].clone();
    assert!(
        message.as_str().unwrap_or_default().contains("reserved"),
        "{message}"
    );
    clean_up(world, &["shared"]).await;
}
