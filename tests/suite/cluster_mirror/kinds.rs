//! Which ClusterMirrors an install reports on, by the kinds it mirrors
//! (`--kinds`): one loop serves every ClusterMirror, each by the writer of
//! its copies' kind.

use super::*;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;

/// With `--kinds=secrets` alone, the ClusterMirrors of Secrets are served
/// and those of ConfigMaps get no status at all, as `--kinds` documents.
#[tokio::test]
async fn an_install_of_secrets_alone_serves_the_clustermirrors_of_secrets_only() {
    let world = super::world_with::<ConfigMap>("cmir-secrets-only", &["--kinds=secrets"]).await;
    let prod = world.namespace("a", false, &[("env", "prod")]).await;
    world
        .objects()
        .create(&ConfigMap::with_data("colors", &[("k", "v")], false))
        .await;
    create(&world, "plain", "colors").await;
    let prod_only = json!({
        "namespaceSelector": {"matchLabels": {"env": "prod"}},
        "namespaces": [format!("{}-*", world.prefix)],
    });
    super::secret_clustermirror(&world, "secret", "v", prod_only).await;
    ready(&world, "secret", "Synced").await;
    let copies: Api<Secret> = Api::namespaced(world.scene.client.clone(), &prod);
    let copy = copies.get("s").await.expect("the Secret's copy");
    assert_eq!(
        copy.labels().get(CLUSTER_MIRROR_LABEL).map(String::as_str),
        Some("secret")
    );
    // Compared, never printed: a Secret's value stays out of test output.
    let value = copy.data.and_then(|mut data| data.remove("k"));
    assert!(
        value == Some(ByteString(b"v".to_vec())),
        "the source's value"
    );

    // The barrier: a change of `plain`, then one of `secret`, each a
    // ClusterMirror watch event, delivered in order; once `secret`'s is
    // followed (its status written for it), `plain`'s was looked at.
    let api = cluster_mirrors(&world.scene.client);
    let relabel =
        |value: &str| json!({"spec": {"target": {"labels": {"corp.example/round": value}}}});
    for name in ["plain", "secret"] {
        api.patch(name, &PatchParams::default(), &Patch::Merge(&relabel("2")))
            .await
            .unwrap_or_else(|e| panic!("change {name}: {e}"));
    }
    observed(&world, "secret").await;
    let plain = api.get("plain").await.expect("plain");
    assert!(
        plain.data["status"].is_null(),
        "no status for a ConfigMap's ClusterMirror: {}",
        plain.data["status"]
    );
    assert!(
        world
            .api(&prod)
            .get_opt("colors")
            .await
            .expect("read")
            .is_none(),
        "no ConfigMap copy"
    );
    clean_up(world, &["plain", "secret"]).await;
}

/// A ClusterMirror that comes to ask for copies of a kind the install does
/// not report on (`--kinds=secrets`, its Secret's keys now published as
/// ConfigMaps) is forgotten: its series leave the metrics.
#[tokio::test]
async fn a_clustermirror_an_install_no_longer_reports_on_is_forgotten() {
    let world = super::world_with::<ConfigMap>("cmir-secrets-forgot", &["--kinds=secrets"]).await;
    world.namespace("a", false, &[("env", "prod")]).await;
    let prod_only = json!({
        "namespaceSelector": {"matchLabels": {"env": "prod"}},
        "namespaces": [format!("{}-*", world.prefix)],
    });
    super::secret_clustermirror(&world, "published", "v", prod_only).await;
    ready(&world, "published", "Synced").await;
    let series = "configmap_mirror_clustermirror_targets{clustermirror=\"published\"";
    let controller = world.controller();
    let exported = |present: bool| async move {
        let what = format!("the metrics to hold {series} {present}");
        testenv::wait_for(&what, PATIENCE, || async {
            let (_, text) = controller.get("/metrics").await.ok()?;
            (text.contains(series) == present).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
    };
    exported(true).await;
    patch_spec(
        &world,
        "published",
        json!({"target": {"kind": "ConfigMap", "keys": [{"key": "k"}]}}),
    )
    .await;
    exported(false).await;
    clean_up(world, &["published"]).await;
}
