//! A source's `workshop.io/mirror-name` names its mirrors in other
//! namespaces: they are written under it, the companion keeps
//! `<name>-synced`, a new name prunes the mirrors under the old one, a
//! malformed name is warned about and leaves every mirror as it is, and a
//! name someone else holds, a reserved one or one a ClusterMirror claims is
//! never taken.
//!
//! On the cluster-wide control plane of `mirroring` (its `World`).

use configmap_mirror::contract::{MIRROR_NAME_ANNOTATION, MIRROR_OF_ANNOTATION};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use serde_json::json;

use crate::common::TestKind;
use crate::common::{World, to};

mod held;

crate::for_each_kind!(a_renamed_source_s_mirrors_follow_its_name_and_its_companion_keeps_its_own,);

const RECONCILES: &str = "controller_runtime_reconcile_total";
const ERRORS: &str = "controller_runtime_reconcile_errors_total";

/// A source in the test's namespace mirrored to `<prefix>-*`, its mirrors
/// named `mirror_name` (None: no annotation).
async fn named_source<K: TestKind>(world: &World<K>, name: &str, mirror_name: Option<&str>) -> K {
    let targets = format!("{}-*", world.prefix);
    let mut annotations = vec![to(&targets)];
    annotations.extend(mirror_name.map(|named| (MIRROR_NAME_ANNOTATION, named)));
    world.mirrored(name, &annotations).await
}

/// Sets (or, with None, removes) the source's `workshop.io/mirror-name`.
async fn rename<K: TestKind>(world: &World<K>, source: &str, mirror_name: Option<&str>) {
    let patch = json!({"metadata": {"annotations": {MIRROR_NAME_ANNOTATION: mirror_name}}});
    world.objects().patch(source, patch).await;
}

async fn a_renamed_source_s_mirrors_follow_its_name_and_its_companion_keeps_its_own<K: TestKind>() {
    let world = World::<K>::new("mn-rename").await;
    let team = world.namespace("team", true, &[]).await;
    named_source(&world, "colors", Some("palette")).await;
    world.mirror_at_in_sync(&team, "colors", "palette").await;
    let companion = world.objects().companion_in_sync("colors").await;
    assert_eq!(companion.name_any(), "colors-synced");
    let at_source_name = world.api(&team).get_opt("colors").await.expect("get");
    assert!(
        at_source_name.is_none(),
        "no mirror under the source's name"
    );

    // A new name: the mirror under the old one is pruned.
    rename(&world, "colors", Some("hues")).await;
    world.mirror_at_in_sync(&team, "colors", "hues").await;
    world.objects_in(&team).wait_gone("palette").await;

    // The annotation removed: the mirror takes the source's name again.
    rename(&world, "colors", None).await;
    world.mirror_in_sync(&team, "colors").await;
    world.objects_in(&team).wait_gone("hues").await;
    world.objects().companion_in_sync("colors").await;
    world.clean_up().await;
}

/// Each malformed name gets an `InvalidMirrorName` Warning saying why, and
/// the mirrors written under the name before are neither rewritten nor
/// pruned: a prune and a sync woken after the Warning, by an edit of each
/// mirror, leave it as edited.
#[tokio::test]
async fn each_malformed_mirror_name_is_warned_about_and_leaves_the_mirrors_as_they_are() {
    let world = World::<ConfigMap>::new("mn-typo").await;
    let team = world.namespace("team", true, &[]).await;
    let too_long = "a".repeat(254);
    let malformed = [
        ("", "it is empty"),
        ("Palette", "is not an object name"),
        ("pal_ette", "is not an object name"),
        ("palette.", "is not an object name"),
        ("pal ette", "holds whitespace"),
        (" palette", "holds whitespace"),
        (
            too_long.as_str(),
            "254 characters long, over the limit of 253",
        ),
        ("sh.helm.release.v1.web.v1", "Helm release record"),
    ];
    // One source each: the Events of one object and reason are one series.
    for at in 0..malformed.len() {
        let name = format!("typo-{at}");
        named_source(&world, &name, Some(&format!("named-{at}"))).await;
        world
            .mirror_at_in_sync(&team, &name, &format!("named-{at}"))
            .await;
    }
    for (at, (asked, says)) in malformed.iter().enumerate() {
        let name = format!("typo-{at}");
        rename(&world, &name, Some(asked)).await;
        world.warned(&name, "InvalidMirrorName", says).await;
    }
    // Each source's content changes: its companion follows, its mirror,
    // whose name is malformed now, is left as it was.
    let controller = world.controller();
    let prunes = controller.metric(RECONCILES, "loop=\"prune\"").await;
    let mirrors = world.api(&team);
    let mut before = Vec::new();
    for at in 0..malformed.len() {
        let mirror = mirrors
            .get(&format!("named-{at}"))
            .await
            .expect("the mirror");
        before.push(mirror.resource_version());
        world
            .objects()
            .set_data(&format!("typo-{at}"), &[("color", Some("green"))])
            .await;
    }
    for at in 0..malformed.len() {
        world
            .objects()
            .companion_in_sync(&format!("typo-{at}"))
            .await;
    }
    // Each change woke the prune of its source's mirror too.
    let woken = prunes + malformed.len() as f64;
    controller
        .metric_reaching(RECONCILES, "loop=\"prune\"", woken)
        .await;
    for (at, version) in before.into_iter().enumerate() {
        let mirror = mirrors
            .get_opt(&format!("named-{at}"))
            .await
            .expect("get")
            .unwrap_or_else(|| panic!("{:?}: the mirror is kept", malformed[at].0));
        assert_eq!(
            mirror.resource_version(),
            version,
            "{:?}: the mirror is left as it is",
            malformed[at].0
        );
    }
    world.clean_up().await;
}

/// What `explain` says of a renamed source: its mirror under its name, in
/// sync; a malformed name as such; a mirror kept under an earlier name
/// while the new one is held by someone else as `earlier-name`.
#[tokio::test]
async fn explain_shows_the_mirror_under_its_name_and_a_malformed_name() {
    use crate::explain::{explain, rows};
    let world = World::<ConfigMap>::new("mn-explain").await;
    let team = world.namespace("team", true, &[]).await;
    named_source(&world, "told", Some("palette")).await;
    world.mirror_at_in_sync(&team, "told", "palette").await;
    let kubeconfig = world.scene.control_plane.kubeconfig_path();
    let source_ref = format!("{}/told", world.prefix);
    let args = ["--kind", "configmap", source_ref.as_str(), "-o", "json"];
    let json = explain(kubeconfig, &args).json();
    let mirror_rows: Vec<_> = rows(&json)
        .into_iter()
        .filter(|row| row["what"] == "mirror" && row["namespace"] == team.as_str())
        .collect();
    assert_eq!(mirror_rows.len(), 1, "{mirror_rows:?}");
    assert_eq!(mirror_rows[0]["name"], "palette", "{mirror_rows:?}");
    assert_eq!(mirror_rows[0]["verdict"], "in-sync", "{mirror_rows:?}");

    rename(&world, "told", Some("Not A Name")).await;
    world
        .warned("told", "InvalidMirrorName", "holds whitespace")
        .await;
    let json = explain(kubeconfig, &args).json();
    let invalid = rows(&json)
        .into_iter()
        .find(|row| row["verdict"] == "invalid-mirror-name")
        .unwrap_or_else(|| panic!("no invalid-mirror-name row: {json}"));
    let detail = invalid["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("holds whitespace"), "{detail}");
    assert!(detail.contains("Warning InvalidMirrorName"), "{detail}");
    let kept = rows(&json)
        .into_iter()
        .find(|row| row["namespace"] == team.as_str() && row["name"] == "palette")
        .unwrap_or_else(|| panic!("no row for the mirror kept: {json}"));
    assert_eq!(kept["verdict"], "invalid-mirror-name", "{kept}");

    // A name held by the tenant's object: the mirror under the old name is
    // kept until one under the new name can be written.
    let theirs = crate::common::mk_unmanaged("held", &[("k", "theirs")]);
    (world.api(&team).create(&Default::default(), &theirs).await).expect("the tenant's object");
    rename(&world, "told", Some("held")).await;
    world.warned("told", "MirrorNameTaken", "held").await;
    let json = explain(kubeconfig, &args).json();
    let earlier = rows(&json)
        .into_iter()
        .find(|row| row["namespace"] == team.as_str() && row["name"] == "palette")
        .unwrap_or_else(|| panic!("no row for the mirror kept: {json}"));
    assert_eq!(earlier["verdict"], "earlier-name", "{earlier}");
    world.clean_up().await;
}
