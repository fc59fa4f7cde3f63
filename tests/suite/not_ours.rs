//! Objects that look like ours but are not: a copy of a companion under
//! another name, the copies of another install, and a source on its way
//! out. (A fabricated mirror is in `mirroring`: it needs the cluster-wide
//! controller.) None is deleted, written or reported on where it
//! should not be. For every kind.

use crate::common;

use common::{Objects, PATIENCE, Scene, TestKind};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{ResourceExt, api::ObjectMeta};
use serde_json::json;

crate::for_each_kind!(
    a_copy_of_a_companion_under_another_name_is_never_pruned,
    two_installs_with_different_suffixes_leave_each_other_s_copies_alone,
    a_source_being_deleted_gets_no_new_companion,
    an_object_with_a_plain_owner_reference_to_the_source_is_not_adopted,
);

/// The barrier before a check that nothing happened to a copy: each
/// install of `suffixes` has followed every event its copies watch
/// delivered before the call, and handed on what each woke. The watch
/// delivers in order, so the deletion of the companion of the source
/// `canary`, made here, comes after them all: once the install has put it
/// back, it had followed them.
async fn copies_followed<K: TestKind>(objects: &Objects<'_, K>, canary: &str, suffixes: &[&str]) {
    for suffix in suffixes {
        let name = format!("{canary}{suffix}");
        let first = testenv::wait_for(&name, PATIENCE, || objects.get(&name))
            .await
            .unwrap_or_else(|e| panic!("{e:#}"));
        objects.delete(&name).await;
        testenv::wait_for(&format!("{name} put back"), PATIENCE, || async {
            let again = objects.get(&name).await?;
            (again.uid() != first.uid()).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    }
}

/// Fails unless `name` is still there once the copies watch is followed.
async fn stays<K: TestKind>(objects: &Objects<'_, K>, name: &str) {
    copies_followed(objects, "canary", &["-synced"]).await;
    assert!(objects.get(name).await.is_some(), "{name} was deleted");
}

/// A copy of `source`'s companion under `name`, metadata and all.
async fn copy_of_companion<K: TestKind>(objects: &Objects<'_, K>, source: &str, name: &str) -> K {
    let mut copy = objects.companion_in_sync(source).await;
    let companion = copy.meta().clone();
    *copy.meta_mut() = ObjectMeta {
        name: Some(name.into()),
        labels: companion.labels,
        annotations: companion.annotations,
        owner_references: companion.owner_references,
        ..ObjectMeta::default()
    };
    objects.create(&copy).await
}

async fn a_copy_of_a_companion_under_another_name_is_never_pruned<K: TestKind>() {
    let scene = Scene::new("not-ours-backup").await;
    let objects = Objects::<K>::of(&scene);
    let _mirror = objects.start_controller(&[]).await;
    objects.source("canary", &[("a", "1")], &[]).await;
    objects.source("colors", &[("a", "1")], &[]).await;
    copy_of_companion(&objects, "colors", "colors-backup").await;
    stays(&objects, "colors-backup").await;
    // Even once its source is no longer managed.
    objects.unlabel("colors").await;
    objects.wait_gone("colors-synced").await;
    stays(&objects, "colors-backup").await;
}

async fn two_installs_with_different_suffixes_leave_each_other_s_copies_alone<K: TestKind>() {
    let scene = Scene::new("not-ours-suffix").await;
    let objects = Objects::<K>::of(&scene);
    let synced = objects.start_controller(&[]).await;
    let copied = objects.start_controller(&["--suffix=-copy"]).await;
    objects.source("canary", &[("a", "1")], &[]).await;
    objects.source("colors", &[("a", "1")], &[]).await;
    objects.companion_in_sync("colors").await;
    testenv::wait_for("colors-copy", PATIENCE, || async {
        objects.get("colors-copy").await.map(|_| ())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    copies_followed(&objects, "canary", &["-synced", "-copy"]).await;
    for name in ["colors-synced", "colors-copy"] {
        assert!(objects.get(name).await.is_some(), "{name} was deleted");
    }
    for controller in [&synced, &copied] {
        assert_eq!(
            controller
                .metric(
                    "configmap_mirror_companion_writes_total",
                    "operation=\"delete\""
                )
                .await,
            0.0
        );
    }
}

async fn a_source_being_deleted_gets_no_new_companion<K: TestKind>() {
    let scene = Scene::new("not-ours-deleting").await;
    let objects = Objects::<K>::of(&scene);
    let _mirror = objects.start_controller(&[]).await;
    objects.source("canary", &[("a", "1")], &[]).await;
    let mut source = K::with_data("colors", &[("a", "1")], true);
    source.meta_mut().finalizers = Some(vec!["workshop.io/test-hold".into()]);
    objects.create(&source).await;
    objects.companion_in_sync("colors").await;

    objects.delete("colors").await;
    let deleting = objects.get("colors").await.expect("held by its finalizer");
    assert!(deleting.meta().deletion_timestamp.is_some());
    if objects.get("colors-synced").await.is_some() {
        objects.delete("colors-synced").await;
    }
    copies_followed(&objects, "canary", &["-synced"]).await;
    assert!(
        objects.get("colors-synced").await.is_none(),
        "a companion was recreated for a source being deleted"
    );
    objects
        .patch("colors", json!({"metadata": {"finalizers": null}}))
        .await;
    objects.wait_gone("colors").await;
}

/// An object at the companion's name that refers to the source without
/// being controlled by it (a plain owner reference, as any user may write)
/// is somebody else's: never adopted, never overwritten, warned about.
async fn an_object_with_a_plain_owner_reference_to_the_source_is_not_adopted<K: TestKind>() {
    let scene = Scene::new("not-ours-plain-owner").await;
    let objects = Objects::<K>::of(&scene);
    let source = objects.source("colors", &[("a", "1")], &[]).await;
    let mut theirs = K::with_data("colors-synced", &[("theirs", "x")], false);
    theirs.meta_mut().owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: K::kind(&()).into_owned(),
        name: "colors".into(),
        uid: source.uid().expect("a stored source has a uid"),
        controller: None,
        block_owner_deletion: None,
    }]);
    let theirs = objects.create(&theirs).await;
    let _mirror = objects.start_controller(&["--slow-retry", "500ms"]).await;

    let event = scene.wait_event("colors", "CompanionNameTaken").await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    let untouched = objects.get("colors-synced").await.expect("theirs stays");
    assert_eq!(untouched.resource_version(), theirs.resource_version());
    assert!(untouched.same_content(&theirs));
}
