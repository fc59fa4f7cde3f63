//! A ClusterMirror's copies of chosen keys: `spec.target.keys` and
//! `excludeKeys` choose, rename and exclude; a change of a key no copy
//! holds writes nothing; a Secret's type that the keys would break stalls
//! the ClusterMirror unless it asks for an Opaque copy; an exact key the
//! source lacks is a failure of each copy, written without it (a Secret's
//! keys published as a ConfigMap: `published`). A Secret's values are
//! never printed: the tests compare keys and checksums.

use super::explain::explain_as_admin;
use super::*;
use crate::explain::{row, verdict};
use configmap_mirror::contract::{
    CHECKSUM_ANNOTATION, KEYED_KEYS_CHECKSUM_PREFIX, KEYS_CHECKSUM_PREFIX,
};
use k8s_openapi::api::core::v1::Secret;

crate::for_each_kind!(
    a_clustermirror_s_copies_hold_the_keys_its_spec_chooses,
    a_change_of_a_key_no_clustermirror_copy_holds_writes_nothing,
    a_key_the_source_lacks_fails_each_copy_which_is_written_without_it,
);

/// The spec copying `source` into the test's namespaces labelled
/// `env=prod`, with `target` merged into its target.
pub(super) fn spec_with<K: TestKind>(world: &World<K>, source: &str, target: Value) -> Value {
    let mut spec = json!({
        "source": {"kind": K::kind(&()), "namespace": world.prefix, "name": source},
        "target": {
            "namespaceSelector": {"matchLabels": {"env": "prod"}},
            "namespaces": [format!("{}-*", world.prefix)],
        },
    });
    for (key, value) in target.as_object().cloned().unwrap_or_default() {
        spec["target"][key] = value;
    }
    spec
}

async fn a_clustermirror_s_copies_hold_the_keys_its_spec_chooses<K: TestKind>() {
    let world = super::world::<K>("cs-choose").await;
    let data = [
        ("a", "1"),
        ("b", "2"),
        ("c", "3"),
        ("keep.me", "4"),
        ("skip.me", "5"),
    ];
    world
        .objects()
        .create(&K::with_data("app", &data, false))
        .await;
    let prod = world.namespace("prod", false, &[("env", "prod")]).await;
    let target = json!({
        "keys": [{"key": "a"}, {"key": "b", "as": "bee"}, {"key": "*.me"}],
        "excludeKeys": ["skip.*"],
    });
    create_with(&world, "chosen", spec_with(&world, "app", target)).await;
    ready(&world, "chosen", "Synced").await;
    let copy = world.holding(&prod, "app", &["a", "bee", "keep.me"]).await;
    let prefix = match K::kind(&()).as_ref() {
        "Secret" => KEYED_KEYS_CHECKSUM_PREFIX,
        _ => KEYS_CHECKSUM_PREFIX,
    };
    let checksum = copy.annotations().get(CHECKSUM_ANNOTATION).cloned();
    assert!(
        checksum.is_some_and(|c| c.starts_with(prefix)),
        "the copy records a checksum of the keys it holds"
    );
    // Compared, not printed: a Secret's values never appear in the output.
    let source = world.objects().get("app").await.expect("the source");
    for (held, from) in [("bee", "b"), ("a", "a"), ("keep.me", "keep.me")] {
        let same = copy.value(held).is_some() && copy.value(held) == source.value(from);
        assert!(same, "the copy's {held} holds the source's {from}");
    }

    // Every key once the spec names none.
    patch_spec(
        &world,
        "chosen",
        json!({"target": {"keys": null, "excludeKeys": null}}),
    )
    .await;
    cluster_copy_in_sync(&world, &prod, "app", "chosen").await;
    clean_up(world, &["chosen"]).await;
}

async fn a_change_of_a_key_no_clustermirror_copy_holds_writes_nothing<K: TestKind>() {
    let world = super::world::<K>("cs-quiet").await;
    world
        .objects()
        .create(&K::with_data("app", &[("a", "1"), ("b", "2")], false))
        .await;
    let prod = world.namespace("prod", false, &[("env", "prod")]).await;
    let target = json!({"keys": [{"key": "a"}]});
    create_with(&world, "quiet", spec_with(&world, "app", target)).await;
    ready(&world, "quiet", "Synced").await;
    let copy = world.holding(&prod, "app", &["a"]).await;

    // The change of a key no copy holds, then one the copy shows: once it
    // carries the new label, the controller has compared it with the source
    // holding the new key.
    world.objects().set_data("app", &[("b", Some("22"))]).await;
    let labels = json!({"target": {"labels": {"tier": "silver"}}});
    patch_spec(&world, "quiet", labels).await;
    let api: Api<K> = world.api(&prod);
    let now = testenv::wait_for("the copy to carry tier=silver", PATIENCE, || async {
        let now = api.get_opt("app").await.ok()??;
        (now.labels().get("tier").map(String::as_str) == Some("silver")).then_some(now)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
    assert!(now.same_content(&copy), "the copy's content is unchanged");
    let checksum = |copy: &K| copy.annotations().get(CHECKSUM_ANNOTATION).cloned();
    assert_eq!(checksum(&now), checksum(&copy), "so is its checksum");
    let copy = now;

    world.objects().set_data("app", &[("a", Some("11"))]).await;
    testenv::wait_for("the copy to change", PATIENCE, || async {
        let then = world.api(&prod).get_opt("app").await.ok()??;
        (then.resource_version() != copy.resource_version()).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    clean_up(world, &["quiet"]).await;
}

async fn a_key_the_source_lacks_fails_each_copy_which_is_written_without_it<K: TestKind>() {
    let world = super::world::<K>("cs-missing").await;
    world
        .objects()
        .create(&K::with_data("app", &[("a", "1")], false))
        .await;
    let prod = world.namespace("prod", false, &[("env", "prod")]).await;
    let target = json!({"keys": [{"key": "a"}, {"key": "nope"}, {"key": "other.*"}]});
    create_with(&world, "lacking", spec_with(&world, "app", target)).await;
    world.holding(&prod, "app", &["a"]).await;
    let object = counted(&world, "lacking", (1, 0, 1)).await;
    let failure = &object.data["status"]["failures"][0];
    assert_eq!(failure["reason"], "KeyMissing");
    assert_eq!(failure["namespace"], prod.as_str());
    let message = failure["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("nope") && !message.contains("other"),
        "{message}"
    );
    let json = explain_as_admin(&world, &["clustermirror/lacking", "-o", "json"]).json();
    let detail = row(&json, "clustermirror-copy", &prod)["detail"].clone();
    let detail = detail.as_str().unwrap_or_default();
    assert!(
        detail.contains("its copies hold a") && detail.contains("not in the source: nope"),
        "explain says which keys the copy holds and which it lacks"
    );
    assert_eq!(
        json["clusterMirror"]["status"]["failed"], 1,
        "as the controller counts"
    );

    // The key arrives: copied, and the ClusterMirror is Ready.
    world
        .objects()
        .set_data("app", &[("nope", Some("2"))])
        .await;
    world.holding(&prod, "app", &["a", "nope"]).await;
    ready(&world, "lacking", "Synced").await;
    clean_up(world, &["lacking"]).await;
}

/// A TLS Secret's copy of its CA alone would not be a TLS Secret: the
/// ClusterMirror is stalled until it asks for an Opaque copy.
#[tokio::test]
async fn a_secret_copy_that_would_break_its_type_stalls_the_clustermirror_unless_opaque() {
    let world = super::world::<Secret>("cs-type").await;
    let data = [("tls.crt", "crt"), ("tls.key", "key"), ("ca.crt", "ca")];
    let mut tls = Secret::with_data("cert", &data, false);
    tls.type_ = Some("kubernetes.io/tls".into());
    world.objects().create(&tls).await;
    let prod = world.namespace("prod", false, &[("env", "prod")]).await;
    let target = json!({"keys": [{"key": "ca.crt"}]});
    create_with(&world, "ca", spec_with(&world, "cert", target)).await;
    let stalled = ready(&world, "ca", "KeysBreakType").await;
    assert_eq!(
        condition(&stalled, "Stalled").map(|c| &c["status"]),
        Some(&json!("True"))
    );
    let message = condition(&stalled, "Ready").map(|c| c["message"].to_string());
    let message = message.unwrap_or_default();
    assert!(
        message.contains("tls.key") && message.contains("Opaque"),
        "{message}"
    );
    world.objects_in(&prod).wait_gone("cert").await;
    let json = explain_as_admin(&world, &["clustermirror/ca", "-o", "json"]).json();
    assert_eq!(verdict(&json, "clustermirror", ""), "keys-break-type");

    patch_spec(&world, "ca", json!({"target": {"type": "Opaque"}})).await;
    ready(&world, "ca", "Synced").await;
    let copy = world.holding(&prod, "cert", &["ca.crt"]).await;
    assert_eq!(copy.type_.as_deref(), Some("Opaque"));

    // The same keys with the type's own: a TLS copy.
    let both = json!({"target": {"type": null, "keys": [{"key": "tls.crt"}, {"key": "tls.key"}]}});
    patch_spec(&world, "ca", both).await;
    ready(&world, "ca", "Synced").await;
    testenv::wait_for("a TLS copy", PATIENCE, || async {
        let copy = world.api(&prod).get_opt("cert").await.ok()??;
        (copy.type_.as_deref() == Some("kubernetes.io/tls")).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    world.holding(&prod, "cert", &["tls.crt", "tls.key"]).await;
    clean_up(world, &["ca"]).await;
}

/// The CRD allows 100 entries in each list: a spec of 60 keys and 60
/// exclusions is stored, so it is served.
#[tokio::test]
async fn a_clustermirror_with_many_keys_and_many_exclusions_is_served() {
    let world = super::world::<ConfigMap>("cs-many").await;
    world
        .objects()
        .create(&ConfigMap::with_data(
            "app",
            &[("a", "1"), ("b", "2")],
            false,
        ))
        .await;
    let prod = world.namespace("prod", false, &[("env", "prod")]).await;
    let mut keys = vec![json!({"key": "a"})];
    keys.extend((1..60).map(|n| json!({"key": format!("g{n}-*")})));
    let excluded: Vec<String> = (0..60).map(|n| format!("x{n}-*")).collect();
    let target = json!({"keys": keys, "excludeKeys": excluded});
    create_with(&world, "many", spec_with(&world, "app", target)).await;
    ready(&world, "many", "Synced").await;
    world.holding(&prod, "app", &["a"]).await;
    clean_up(world, &["many"]).await;
}

/// A key renamed onto one a TLS Secret's type requires does not keep the
/// type: the API server checks more than a name.
#[tokio::test]
async fn a_clustermirror_renaming_a_key_onto_a_tls_key_is_stalled() {
    let world = super::world::<Secret>("cs-onto").await;
    let data = [("tls.crt", "crt"), ("tls.key", "key"), ("ca.crt", "ca")];
    let mut tls = Secret::with_data("cert", &data, false);
    tls.type_ = Some("kubernetes.io/tls".into());
    world.objects().create(&tls).await;
    let prod = world.namespace("prod", false, &[("env", "prod")]).await;
    let target = json!({"keys": [{"key": "ca.crt", "as": "tls.crt"}, {"key": "tls.key"}]});
    create_with(&world, "onto", spec_with(&world, "cert", target)).await;
    let stalled = ready(&world, "onto", "KeysBreakType").await;
    let message = condition(&stalled, "Ready").map(|c| c["message"].to_string());
    let message = message.unwrap_or_default();
    assert!(message.contains("tls.crt"), "{message}");
    world.objects_in(&prod).wait_gone("cert").await;
    clean_up(world, &["onto"]).await;
}
