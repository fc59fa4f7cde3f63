//! A name a source gives its mirrors that is held already: by someone
//! else's object, by another source's mirror, by a ClusterMirror's claim,
//! or reserved. It stays with its holder, and nothing flaps.

use configmap_mirror::contract::{MANAGED_BY_LABEL, MANAGER_NAME};
use kube::{Api, api::ListParams};

use super::*;
use crate::cluster_mirror::{clean_up, cluster_copy_in_sync, create};
use crate::common::mk_unmanaged;

/// The tenant's own object at the name is left untouched, and the source
/// is told; a reserved name is refused.
#[tokio::test]
async fn a_mirror_name_held_by_a_tenant_s_object_or_reserved_is_never_taken() {
    let world = World::<ConfigMap>::new("mn-held").await;
    let team = world.namespace("team", true, &[]).await;
    let theirs = world
        .api(&team)
        .create(
            &Default::default(),
            &mk_unmanaged("palette", &[("k", "theirs")]),
        )
        .await
        .expect("create the tenant's object");
    named_source(&world, "colors", Some("palette")).await;
    let held = format!("{team}/palette already exist(s) and is not a mirror of this source");
    world.warned("colors", "MirrorNameTaken", &held).await;
    world.objects().companion_in_sync("colors").await;
    let now = world.api(&team).get("palette").await.expect("theirs");
    assert_eq!(
        now.resource_version(),
        theirs.resource_version(),
        "untouched"
    );
    assert!(!now.annotations().contains_key(MIRROR_OF_ANNOTATION));

    rename(&world, "colors", Some("kube-root-ca.crt")).await;
    world
        .warned(
            "colors",
            "MirrorNameReserved",
            "kube-root-ca.crt is reserved",
        )
        .await;
    let published = world
        .api(&team)
        .get_opt("kube-root-ca.crt")
        .await
        .expect("get");
    assert!(
        published.is_none_or(|cm| !cm.annotations().contains_key(MIRROR_OF_ANNOTATION)),
        "never a mirror at a reserved name"
    );
    world.clean_up().await;
}

/// Two sources of one namespace naming their mirrors alike: the first
/// holds the name, the second is told and does not fight for it; once the
/// first names its mirrors otherwise, the name is freed and the second
/// takes it.
#[tokio::test]
async fn two_sources_naming_their_mirrors_alike_one_holds_the_name_and_nothing_flaps() {
    let world = World::<ConfigMap>::new("mn-two").await;
    let team = world.namespace("team", true, &[]).await;
    named_source(&world, "first", Some("shared")).await;
    let held = world.mirror_at_in_sync(&team, "first", "shared").await;
    named_source(&world, "second", Some("shared")).await;
    let taken = format!("{team}/shared already exist(s) and is not a mirror of this source");
    world.warned("second", "MirrorNameTaken", &taken).await;

    // Both woken again: the second fails again, the first succeeds, and
    // neither writes.
    let controller = world.controller();
    let errors = controller.metric(ERRORS, "loop=\"sync\"").await;
    let successes = controller
        .metric(RECONCILES, "loop=\"sync\",result=\"success\"")
        .await;
    let writes = controller.writes().await;
    for name in ["first", "second"] {
        let patch = json!({"metadata": {"annotations": {"example.com/touched": "1"}}});
        world.objects().patch(name, patch).await;
    }
    controller
        .metric_reaching(ERRORS, "loop=\"sync\"", errors + 1.0)
        .await;
    let label = "loop=\"sync\",result=\"success\"";
    controller
        .metric_reaching(RECONCILES, label, successes + 1.0)
        .await;
    let now = world.api(&team).get("shared").await.expect("the mirror");
    assert_eq!(now.resource_version(), held.resource_version(), "no write");
    assert_eq!(controller.writes().await, writes, "no write");

    // The first renames its mirrors: the second takes the freed name.
    rename(&world, "first", Some("own")).await;
    world.mirror_at_in_sync(&team, "first", "own").await;
    world.mirror_at_in_sync(&team, "second", "shared").await;
    world.clean_up().await;
}

/// A ClusterMirror writing its copy at the name a tenant's source gives
/// its mirrors outranks the tenant, whose source is told so.
#[tokio::test]
async fn a_clustermirror_s_copy_outranks_a_tenant_s_mirror_renamed_onto_its_name() {
    let world = crate::cluster_mirror::world::<ConfigMap>("mn-claim").await;
    let cluster_mirror = "mn-claim-configmap";
    world
        .objects()
        .create(&ConfigMap::with_data(
            "corp-ca",
            &[("ca.crt", "the platform's")],
            false,
        ))
        .await;
    let target = world.namespace("prod", true, &[("env", "prod")]).await;
    create(&world, cluster_mirror, "corp-ca").await;
    let copy = cluster_copy_in_sync(&world, &target, "corp-ca", cluster_mirror).await;

    // The tenant's source, in the test's namespace, names its mirrors
    // after the ClusterMirror's copy.
    named_source(&world, "tenant-ca", Some("corp-ca")).await;
    let claimed = format!("{target}/corp-ca (ClusterMirror {cluster_mirror})");
    world.warned("tenant-ca", "MirrorNameTaken", &claimed).await;
    let now = world.api(&target).get("corp-ca").await.expect("the copy");
    assert_eq!(now.resource_version(), copy.resource_version(), "untouched");
    assert!(
        world
            .api(&target)
            .get_opt("tenant-ca")
            .await
            .expect("get")
            .is_none()
    );
    clean_up(world, &[cluster_mirror]).await;
}

/// A name the source cannot have (reserved, or held by a tenant's object)
/// takes away no mirror: the one under the old name stays, in sync, until
/// the mirror under the new name is written there. Renamed again onto a
/// free name, the new mirror is written and only then the old one goes.
#[tokio::test]
async fn a_rename_onto_a_name_it_cannot_have_keeps_the_mirror_it_had() {
    let world = World::<ConfigMap>::new("mn-keep").await;
    let team = world.namespace("team", true, &[]).await;
    world
        .api(&team)
        .create(
            &Default::default(),
            &mk_unmanaged("held", &[("k", "theirs")]),
        )
        .await
        .expect("create the tenant's object");
    named_source(&world, "colors", Some("palette")).await;
    world.mirror_at_in_sync(&team, "colors", "palette").await;
    let controller = world.controller();
    for (name, reason) in [
        ("kube-root-ca.crt", "MirrorNameReserved"),
        ("held", "MirrorNameTaken"),
    ] {
        let prunes = controller.metric(RECONCILES, "loop=\"prune\"").await;
        rename(&world, "colors", Some(name)).await;
        world.warned("colors", reason, name).await;
        // The rename woke the prune of the mirror under the old name.
        controller
            .metric_reaching(RECONCILES, "loop=\"prune\"", prunes + 1.0)
            .await;
        let kept = world.api(&team).get_opt("palette").await.expect("get");
        let kept = kept.unwrap_or_else(|| panic!("renamed onto {name}: the mirror went"));
        let of = kept.annotations().get(MIRROR_OF_ANNOTATION).cloned();
        assert_eq!(of, Some(format!("{}/colors", world.prefix)), "{name}");
    }
    rename(&world, "colors", Some("paint")).await;
    world.mirror_at_in_sync(&team, "colors", "paint").await;
    world.objects_in(&team).wait_gone("palette").await;
    world.clean_up().await;
}

/// Renamed while the controller is down onto a name a tenant's object
/// holds: the controller that starts keeps the mirror under the old name
/// (its first prune of every copy finds no mirror at the new name); once
/// the name is free, the new mirror is written and the old one goes.
#[tokio::test]
async fn a_rename_made_while_the_controller_is_down_keeps_the_mirror_until_the_new_one_is_there() {
    let mut world = World::<ConfigMap>::new("mn-down").await;
    let team = world.namespace("team", true, &[]).await;
    let tenant = world.api(&team);
    let held = mk_unmanaged("held", &[("k", "theirs")]);
    tenant
        .create(&Default::default(), &held)
        .await
        .expect("create the tenant's object");
    named_source(&world, "colors", Some("palette")).await;
    world.mirror_at_in_sync(&team, "colors", "palette").await;

    world.stop();
    rename(&world, "colors", Some("held")).await;
    let copies: Api<ConfigMap> = Api::all(world.scene.client.clone());
    let managed = format!("{MANAGED_BY_LABEL}={MANAGER_NAME}");
    let copies = copies
        .list(&ListParams::default().labels(&managed))
        .await
        .expect("list the copies")
        .items
        .len();
    world.start().await;
    world.warned("colors", "MirrorNameTaken", "held").await;
    world
        .controller()
        .metric_reaching(RECONCILES, "loop=\"prune\"", copies as f64)
        .await;
    let kept = tenant.get_opt("palette").await.expect("get");
    let kept = kept.unwrap_or_else(|| panic!("the mirror under the old name went at start"));
    let of = kept.annotations().get(MIRROR_OF_ANNOTATION).cloned();
    assert_eq!(of, Some(format!("{}/colors", world.prefix)));

    tenant
        .delete("held", &Default::default())
        .await
        .expect("the tenant lets the name go");
    // The tenant's object is no copy, so no watch of the controller sees
    // it go: the source's slow retry would find the name free, after a
    // backoff that doubled at each refusal so far. A change of the source
    // finds it at once.
    let touched = json!({"metadata": {"annotations": {"example.com/touched": "1"}}});
    world.objects().patch("colors", touched).await;
    world.mirror_at_in_sync(&team, "colors", "held").await;
    world.objects_in(&team).wait_gone("palette").await;
    world.clean_up().await;
}

/// A name held by a tenant's object, freed by the tenant: the source's
/// slow retry alone finds it free and writes the mirror there. The
/// tenant's object is no copy, so no watch of the controller sees it go,
/// and the source is not touched: nothing else wakes it.
#[tokio::test]
async fn a_mirror_name_the_tenant_frees_is_taken_by_the_slow_retry_alone() {
    let world = World::<ConfigMap>::new("mn-freed").await;
    let team = world.namespace("team", true, &[]).await;
    let tenant = world.api(&team);
    let theirs = mk_unmanaged("palette", &[("k", "theirs")]);
    (tenant.create(&Default::default(), &theirs).await).expect("create the tenant's object");
    named_source(&world, "colors", Some("palette")).await;
    world.warned("colors", "MirrorNameTaken", "palette").await;

    // Freed just after the first refusal: the world's `--slow-retry 1s`
    // has doubled a few times at most, well within the wait's patience.
    tenant
        .delete("palette", &Default::default())
        .await
        .expect("the tenant lets the name go");
    let mirror = world.mirror_at_in_sync(&team, "colors", "palette").await;
    let of = mirror.annotations().get(MIRROR_OF_ANNOTATION).cloned();
    assert_eq!(of, Some(format!("{}/colors", world.prefix)));
    world.clean_up().await;
}
