//! `explain mirror/NAMESPACE/NAME`, run as a user runs it, against the
//! controller that acted on the same Mirror: each namespace's verdict says
//! how it consents (by its labels, or by which grant) or why it refuses,
//! and the exit code says whether every copy is in place. A Mirror's copy
//! explained from its side, or in its namespace, is the Mirror's, not a
//! source's own mirror.

use super::*;
use crate::explain::{VALUE, described, explain, never_shows_the_value, row, verdict};

fn explained<K: TestKind>(world: &World<K>, args: &[&str]) -> crate::explain::Run {
    let sources = format!("--cluster-mirror-source-namespaces={}", world.prefix);
    let mut all = args.to_vec();
    all.push(&sources);
    all.extend_from_slice(K::ARGS);
    let run = explain(world.scene.control_plane.kubeconfig_path(), &all);
    never_shows_the_value(&run);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    run
}

#[tokio::test]
async fn explain_a_mirror_says_how_each_namespace_consents_and_exits_1_for_a_missing_copy() {
    let mut world = world::<ConfigMap>("mir-explain").await;
    crate::grants::install_grant_crd(&world.scene.client).await;
    let labelled = world.namespace("labelled", true, &[]).await;
    let granting = world.namespace("granting", false, &[]).await;
    let refusing = world.namespace("refusing", false, &[]).await;
    crate::grants::grant(
        &world,
        &granting,
        "from-tenant",
        &world.prefix,
        &["ConfigMap"],
    )
    .await;
    world
        .objects()
        .create(&ConfigMap::with_data("ca", &[("ca.crt", VALUE)], false))
        .await;
    create(
        &world,
        "team-ca",
        "ca",
        json!({"namespaces": [labelled, granting, refusing]}),
    )
    .await;
    copy_in_sync(&world, &labelled, "ca", "ca", "team-ca").await;
    copy_in_sync(&world, &granting, "ca", "ca", "team-ca").await;
    status_of(&world, "team-ca", [3, 2, 1]).await;

    let subject = format!("mirror/{}/team-ca", world.prefix);
    let run = explained(&world, &[&subject, "-o", "json"]);
    assert_eq!(
        run.code,
        Some(1),
        "a named namespace refuses:\n{}",
        run.stdout
    );
    let json = run.json();
    assert_eq!(json["subject"]["is"], "mirror", "{json}");
    let copies = "namespaced-mirror-copy";
    assert_eq!(
        verdict(&json, copies, &labelled),
        "in-sync",
        "{}",
        described(&json)
    );
    assert_eq!(verdict(&json, copies, &granting), "in-sync");
    assert_eq!(verdict(&json, copies, &refusing), "not-consenting");
    let detail = |namespace: &str| row(&json, copies, namespace)["detail"].to_string();
    assert!(detail(&labelled).contains("consents by its labels"));
    assert!(detail(&granting).contains("consents by MirrorGrant from-tenant"));
    assert!(detail(&refusing).contains("NotConsenting"));
    let mirror = format!("{}/team-ca", world.prefix);
    assert_eq!(row(&json, copies, &granting)["mirror"], mirror.as_str());
    assert_eq!(
        json["mirror"]["status"]["failed"], 1,
        "as the controller counts"
    );

    // Named no more: everything asked for is in place.
    patch_spec(
        &world,
        "team-ca",
        json!({"target": {"namespaces": [labelled, granting]}}),
    )
    .await;
    status_of(&world, "team-ca", [2, 2, 0]).await;
    let run = explained(&world, &[&subject]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert!(
        run.stdout.contains("Everything asked for is in place."),
        "{}",
        run.stdout
    );

    // The copy explained from its side is the Mirror's.
    let copy = format!("{granting}/ca");
    let json = explained(&world, &[&copy, "-o", "json"]).json();
    assert_eq!(json["subject"]["is"], "copy");
    assert_eq!(
        verdict(&json, copies, &granting),
        "in-sync",
        "{}",
        described(&json)
    );
    // A namespace explained shows it as the Mirror's, not among the
    // mirrors of sources.
    let json = explained(&world, &["--namespace", &granting, "-o", "json"]).json();
    assert!(
        crate::explain::rows(&json)
            .iter()
            .all(|row| row["what"] != "mirror"),
        "{}",
        described(&json)
    );
    assert_eq!(
        verdict(&json, copies, &granting),
        "in-sync",
        "{}",
        described(&json)
    );
    assert_eq!(row(&json, copies, &granting)["mirror"], mirror.as_str());

    // With no controller running, a copy deleted stays missing.
    world.stop();
    world
        .api(&granting)
        .delete("ca", &DeleteParams::default())
        .await
        .expect("delete the copy");
    world.objects_in(&granting).wait_gone("ca").await;
    let run = explained(&world, &[&subject, "-o", "json"]);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert_eq!(verdict(&run.json(), copies, &granting), "missing");

    let sources = world.prefix.clone();
    world
        .start_with(&["--cluster-mirror-source-namespaces", &sources])
        .await;
    copy_in_sync(&world, &granting, "ca", "ca", "team-ca").await;
    clean_up(world, &["team-ca"]).await;
}

/// Rights a tenant of `receiving` has, as ServiceAccount `account` of
/// `home` (the Mirror's namespace): to read `receiving` and what is in it,
/// the Mirror and its source in `home`; nothing across namespaces.
fn tenant_rights(home: &str, receiving: &str, account: &str) -> String {
    format!(
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {home}-{account}}}
rules:
- {{apiGroups: [""], resources: [namespaces], resourceNames: [{receiving}], verbs: [get]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {home}-{account}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {home}-{account}}}
subjects: [{{kind: ServiceAccount, name: {account}, namespace: {home}}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: {account}, namespace: {receiving}}}
rules:
- {{apiGroups: [""], resources: [configmaps, events], verbs: [get, list]}}
- {{apiGroups: [mirror.workshop.io], resources: [mirrorgrants], verbs: [get, list]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: {account}, namespace: {receiving}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: {account}}}
subjects: [{{kind: ServiceAccount, name: {account}, namespace: {home}}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: {account}, namespace: {home}}}
rules:
- {{apiGroups: [""], resources: [configmaps], verbs: [get]}}
- {{apiGroups: [mirror.workshop.io], resources: [mirrors], verbs: [get]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: {account}, namespace: {home}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: {account}}}
subjects: [{{kind: ServiceAccount, name: {account}, namespace: {home}}}]
"#
    )
}

/// A tenant who may list neither ClusterMirrors nor Mirrors across
/// namespaces still sees, in its namespace, the Mirror's copy as the
/// Mirror's (in sync), with notes saying what it could not list.
#[tokio::test]
async fn a_tenant_who_may_not_list_mirrors_sees_the_mirror_s_copy_in_its_namespace() {
    let world = world::<ConfigMap>("mir-tenant").await;
    let receiving = world.namespace("receiving", true, &[]).await;
    world
        .objects()
        .create(&ConfigMap::with_data("ca", &[("ca.crt", VALUE)], false))
        .await;
    create(&world, "team-ca", "ca", json!({"namespaces": [receiving]})).await;
    copy_in_sync(&world, &receiving, "ca", "ca", "team-ca").await;
    status_of(&world, "team-ca", [1, 1, 0]).await;

    let account = "tenant";
    crate::common::kubectl_apply(
        &world.scene,
        &crate::common::service_account(&world.prefix, account),
    );
    crate::common::kubectl_apply(
        &world.scene,
        &tenant_rights(&world.prefix, &receiving, account),
    );
    let kubeconfig = world.scene.token_kubeconfig(account).await;
    let run = explain(&kubeconfig, &["--namespace", &receiving, "-o", "json"]);
    never_shows_the_value(&run);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let json = run.json();
    let copies = "namespaced-mirror-copy";
    assert_eq!(
        verdict(&json, copies, &receiving),
        "in-sync",
        "{}",
        described(&json)
    );
    let notes = json["notes"].to_string();
    assert!(notes.contains("cannot list the ClusterMirrors"), "{notes}");
    assert!(
        notes.contains("cannot list the Mirrors across namespaces"),
        "{notes}"
    );
    clean_up(world, &["team-ca"]).await;
}
