//! A Secret's public part published as a ConfigMap (`spec.target.kind:
//! ConfigMap`): a cert-manager-style TLS Secret's `ca.crt` in every
//! selected namespace, as an ordinary ClusterMirror copy (labelled,
//! bound, checksummed keyed, healed, explained), holding only the exact
//! keys named. The private key is never published: it is looked for, by
//! value, in the copies, the status, the Events, explain's output and the
//! controller's log. `failures` holds a key the Secret lacks and a name
//! held by a tenant; `lifecycle` what deleting the ClusterMirror, switching
//! its kind and the sources never copied do.

use std::collections::BTreeMap;

use super::explain::explain_as_admin;
use super::shaped::spec_with;
use super::*;
use crate::explain::{row, verdict};
use configmap_mirror::contract::{
    CHECKSUM_ANNOTATION, KEYED_KEYS_CHECKSUM_PREFIX, MANAGED_BY_LABEL, MANAGER_NAME,
    MIRROR_OF_UID_ANNOTATION,
};
use k8s_openapi::{
    ByteString,
    api::{core::v1::Secret, events::v1::Event},
};
use kube::api::ListParams;

mod failures;
mod lifecycle;

/// A CA certificate, as PEM: what is published.
const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIBpublicCA0\n-----END CERTIFICATE-----\n";
const CRT: &str = "-----BEGIN CERTIFICATE-----\nMIIBleafCRT0\n-----END CERTIFICATE-----\n";
/// The private key's marker: found in no output, ever.
const NEVER: &str = "never-published-5d1e";
const PRIVATE: &str =
    "-----BEGIN PRIVATE KEY-----\nnever-published-5d1e\n-----END PRIVATE KEY-----\n";
/// Not UTF-8: a ConfigMap holds it in `binaryData`.
const BINARY: &[u8] = &[0x30, 0x82, 0xff, 0xfe, 0x00, 0x01];

/// A cert-manager-style TLS Secret: the API server checks only that
/// `tls.crt` and `tls.key` are there.
fn tls_secret(name: &str) -> Secret {
    let data = [("tls.crt", CRT), ("tls.key", PRIVATE), ("ca.crt", CA)];
    let mut tls = Secret::with_data(name, &data, false);
    tls.type_ = Some("kubernetes.io/tls".into());
    tls
}

/// A world mirroring Secrets, with the TLS Secret `corp-tls` in its own
/// namespace and a namespace labelled `env=prod` for each of `targets`.
pub(super) async fn with_a_tls_secret(tag: &str, targets: &[&str]) -> (World<Secret>, Vec<String>) {
    let world = super::world::<Secret>(tag).await;
    world.objects().create(&tls_secret("corp-tls")).await;
    let mut namespaces = Vec::new();
    for target in targets {
        namespaces.push(world.namespace(target, false, &[("env", "prod")]).await);
    }
    (world, namespaces)
}

/// The ClusterMirror `name` publishing `source`'s keys as ConfigMaps into
/// the test's namespaces labelled `env=prod`, `target` merged into its
/// target.
pub(super) async fn publish(world: &World<Secret>, name: &str, source: &str, target: Value) {
    let mut target = target;
    target["kind"] = json!("ConfigMap");
    create_with(world, name, spec_with(world, source, target)).await;
}

/// The ClusterMirror `name` publishing `corp-tls`'s `ca.crt` alone.
pub(super) async fn publish_ca(world: &World<Secret>, name: &str) {
    publish(
        world,
        name,
        "corp-tls",
        json!({"keys": [{"key": "ca.crt"}]}),
    )
    .await;
}

/// The copy's keys, across `data` and `binaryData`, each with its bytes.
fn held(copy: &ConfigMap) -> BTreeMap<String, Vec<u8>> {
    let text = copy.data.iter().flatten();
    let text = text.map(|(key, value)| (key.clone(), value.clone().into_bytes()));
    let binary = copy.binary_data.iter().flatten();
    text.chain(binary.map(|(key, value)| (key.clone(), value.0.clone())))
        .collect()
}

/// Waits until `namespace/name` is the ClusterMirror `cluster_mirror`'s
/// ConfigMap copy of the Secret `source` as it is now, holding exactly
/// the keys `keys` (`(its key, the Secret's key)`), and returns it.
pub(super) async fn published(
    world: &World<Secret>,
    namespace: &str,
    name: &str,
    cluster_mirror: &str,
    source: &str,
    keys: &[(&str, &str)],
) -> ConfigMap {
    let copies = world.configmaps(namespace);
    let of = format!("{}/{source}", world.prefix);
    testenv::wait_for(
        &format!("{namespace}/{name} to publish {keys:?} of {source}"),
        PATIENCE,
        || async {
            let secret = world.objects().api.get_opt(source).await.ok()??;
            let copy = copies.get_opt(name).await.ok()??;
            let values = secret.data.clone().unwrap_or_default();
            let wanted: BTreeMap<String, Vec<u8>> = keys
                .iter()
                .filter_map(|(held, from)| Some(((*held).to_owned(), values.get(*from)?.0.clone())))
                .collect();
            let ours = copy.labels().get(CLUSTER_MIRROR_LABEL).map(String::as_str)
                == Some(cluster_mirror)
                && copy.annotations().get(MIRROR_OF_ANNOTATION) == Some(&of);
            (ours && held(&copy) == wanted).then_some(copy)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()))
}

/// Waits until `namespace` holds no ConfigMap `name`.
pub(super) async fn no_configmap(world: &World<Secret>, namespace: &str, name: &str) {
    let api = world.configmaps(namespace);
    testenv::wait_for(
        &format!("no ConfigMap {name} in {namespace}"),
        PATIENCE,
        || async { matches!(api.get_opt(name).await, Ok(None)).then_some(()) },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
}

/// Deletes the ClusterMirrors `names`, waits until no ConfigMap copy of
/// the test's Secrets is left anywhere, and cleans up.
pub(super) async fn clean_up_published(world: World<Secret>, names: &[&str]) {
    let api = cluster_mirrors(&world.scene.client);
    for name in names {
        let _ = api.delete(name, &DeleteParams::default()).await;
    }
    let all: Api<ConfigMap> = Api::all(world.scene.client.clone());
    let ours = ListParams::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGER_NAME}"));
    testenv::wait_for("every published ConfigMap to go", PATIENCE, || async {
        let left = all.list(&ours).await.ok()?;
        let mine = left.items.iter().filter(|copy| {
            configmap_mirror::contract::mirror_of(kube::Resource::meta(*copy))
                .is_some_and(|(namespace, _)| namespace == world.prefix)
        });
        (mine.count() == 0).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    clean_up(world, &[]).await;
}

/// Fails if any of `texts` holds the private key, as text or as base64.
pub(super) fn never_holds_the_private_key(what: &str, texts: &[String]) {
    let encoded = serde_json::to_value(ByteString(PRIVATE.as_bytes().to_vec())).expect("base64");
    let encoded = encoded.as_str().unwrap_or_default().trim_end_matches('=');
    for text in texts {
        assert!(
            !text.contains(NEVER) && !text.contains(encoded),
            "{what} holds the private key"
        );
    }
}

/// Every Event of `namespaces`, as JSON.
async fn events_in(world: &World<Secret>, namespaces: &[&str]) -> Vec<String> {
    let mut all = Vec::new();
    for namespace in namespaces {
        let api: Api<Event> = Api::namespaced(world.scene.client.clone(), namespace);
        let events = api.list(&ListParams::default()).await.expect("list Events");
        all.extend(
            events
                .items
                .iter()
                .map(|e| serde_json::to_string(e).expect("JSON")),
        );
    }
    all
}

#[tokio::test]
async fn a_tls_secret_s_ca_is_published_as_a_configmap_holding_only_ca_crt() {
    let (world, targets) = with_a_tls_secret("pub-ca", &["a", "b"]).await;
    let (a, b) = (&targets[0], &targets[1]);
    publish_ca(&world, "corp-ca").await;
    counted(&world, "corp-ca", (2, 2, 0)).await;
    ready(&world, "corp-ca", "Synced").await;
    let secret = world.objects().get("corp-tls").await.expect("the Secret");
    let bound = format!("{}.", secret.uid().expect("a stored Secret has a uid"));
    let mut copies = Vec::new();
    for namespace in [a, b] {
        let copy = published(
            &world,
            namespace,
            "corp-tls",
            "corp-ca",
            "corp-tls",
            &[("ca.crt", "ca.crt")],
        )
        .await;
        assert_eq!(
            copy.data
                .as_ref()
                .and_then(|d| d.get("ca.crt"))
                .map(String::as_str),
            Some(CA)
        );
        assert_eq!(
            copy.labels().get(MANAGED_BY_LABEL).map(String::as_str),
            Some(MANAGER_NAME)
        );
        let uid = copy.annotations().get(MIRROR_OF_UID_ANNOTATION);
        assert!(
            uid.is_some_and(|uid| uid.starts_with(&bound)),
            "bound to the Secret: {uid:?}"
        );
        let checksum = copy.annotations().get(CHECKSUM_ANNOTATION);
        assert!(
            checksum.is_some_and(|c| c.starts_with(KEYED_KEYS_CHECKSUM_PREFIX)),
            "keyed, as a Secret copy's: {checksum:?}"
        );
        assert_ne!(copy.immutable, Some(true), "the Secret is not immutable");
        // Never a Secret beside it.
        assert!(
            world
                .api(namespace)
                .get_opt("corp-tls")
                .await
                .expect("get")
                .is_none()
        );
        copies.push(serde_json::to_string(&copy).expect("JSON"));
    }

    // explain lists the ConfigMap copies and the keys they hold.
    let run = explain_as_admin(&world, &["clustermirror/corp-ca", "-o", "json"]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    let json = run.json();
    assert_eq!(verdict(&json, "clustermirror", ""), "synced");
    for namespace in [a, b] {
        let copy = row(&json, "clustermirror-copy", namespace);
        assert_eq!(copy["kind"], "ConfigMap", "{copy}");
        assert_eq!(copy["ok"], true, "{copy}");
        let detail = copy["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("its copies hold ca.crt"), "{detail}");
    }

    // The private key is nowhere: not in the copies, the status, the
    // Events, explain's output or the log.
    let status = cluster_mirrors(&world.scene.client)
        .get("corp-ca")
        .await
        .expect("get");
    let events = events_in(&world, &[a, b, &world.prefix, "default"]).await;
    never_holds_the_private_key("a copy", &copies);
    never_holds_the_private_key(
        "the status",
        &[serde_json::to_string(&status).expect("JSON")],
    );
    never_holds_the_private_key("an Event", &events);
    never_holds_the_private_key("explain", &[run.stdout, run.stderr]);
    never_holds_the_private_key("the log", &[world.controller().log_text()]);
    clean_up_published(world, &["corp-ca"]).await;
}

#[tokio::test]
async fn a_published_key_is_renamed_with_as_and_a_binary_one_lands_in_binary_data() {
    let world = super::world::<Secret>("pub-rename").await;
    let mut trust = Secret::with_data("trust", &[("ca.crt", CA), ("password", PRIVATE)], false);
    let data = trust.data.get_or_insert_default();
    data.insert("truststore.p12".into(), ByteString(BINARY.to_vec()));
    trust.immutable = Some(true);
    world.objects().create(&trust).await;
    let prod = world.namespace("prod", false, &[("env", "prod")]).await;
    let keys = json!({"keys": [{"key": "ca.crt", "as": "ca.pem"}, {"key": "truststore.p12"}]});
    publish(&world, "trust", "trust", keys).await;
    ready(&world, "trust", "Synced").await;
    let held = [("ca.pem", "ca.crt"), ("truststore.p12", "truststore.p12")];
    let copy = published(&world, &prod, "trust", "trust", "trust", &held).await;
    let text = copy.data.clone().unwrap_or_default();
    assert_eq!(text.keys().collect::<Vec<_>>(), ["ca.pem"], "UTF-8 in data");
    let binary = copy.binary_data.clone().unwrap_or_default();
    assert_eq!(
        binary.keys().collect::<Vec<_>>(),
        ["truststore.p12"],
        "the rest in binaryData"
    );
    assert_eq!(copy.immutable, Some(true), "immutable, as the Secret is");
    never_holds_the_private_key("the copy", &[serde_json::to_string(&copy).expect("JSON")]);
    clean_up_published(world, &["trust"]).await;
}

#[tokio::test]
async fn a_change_of_tls_key_writes_nothing_and_a_change_of_ca_crt_updates_every_copy() {
    let (world, targets) = with_a_tls_secret("pub-quiet", &["a", "b"]).await;
    publish_ca(&world, "quiet").await;
    ready(&world, "quiet", "Synced").await;
    let ca = [("ca.crt", "ca.crt")];
    let before = published(&world, &targets[0], "corp-tls", "quiet", "corp-tls", &ca).await;

    // tls.key renewed, then a label asked of the copies: once the copy
    // carries it, the controller has compared it with the Secret holding
    // the new key, and changed nothing else.
    let renewed = PRIVATE.replace("5d1e", "5d1f");
    world
        .objects()
        .set_data("corp-tls", &[("tls.key", Some(&renewed))])
        .await;
    patch_spec(
        &world,
        "quiet",
        json!({"target": {"labels": {"tier": "silver"}}}),
    )
    .await;
    let copies = world.configmaps(&targets[0]);
    let after = testenv::wait_for("the copy to carry tier=silver", PATIENCE, || async {
        let copy = copies.get_opt("corp-tls").await.ok()??;
        (copy.labels().get("tier").map(String::as_str) == Some("silver")).then_some(copy)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
    assert_eq!(
        held(&after),
        held(&before),
        "the copy's content is unchanged"
    );
    let checksum = |copy: &ConfigMap| copy.annotations().get(CHECKSUM_ANNOTATION).cloned();
    assert_eq!(checksum(&after), checksum(&before), "so is its checksum");

    // ca.crt renewed: every copy follows.
    let renewed = CA.replace("CA0", "CA1");
    world
        .objects()
        .set_data("corp-tls", &[("ca.crt", Some(&renewed))])
        .await;
    for namespace in &targets {
        let copy = published(&world, namespace, "corp-tls", "quiet", "corp-tls", &ca).await;
        let value = copy.data.as_ref().and_then(|d| d.get("ca.crt")).cloned();
        assert_eq!(value, Some(renewed.clone()));
        assert_ne!(checksum(&copy), checksum(&before));
    }
    clean_up_published(world, &["quiet"]).await;
}

#[tokio::test]
async fn a_published_configmap_deleted_or_edited_heals() {
    let (world, targets) = with_a_tls_secret("pub-heal", &["a", "b"]).await;
    let (a, b) = (&targets[0], &targets[1]);
    publish_ca(&world, "heal").await;
    let ca = [("ca.crt", "ca.crt")];
    let deleted = published(&world, a, "corp-tls", "heal", "corp-tls", &ca).await;
    published(&world, b, "corp-tls", "heal", "corp-tls", &ca).await;

    world
        .configmaps(a)
        .delete("corp-tls", &DeleteParams::default())
        .await
        .expect("delete a copy");
    let healed = published(&world, a, "corp-tls", "heal", "corp-tls", &ca).await;
    assert_ne!(healed.uid(), deleted.uid(), "written again");
    let forged = json!({"data": {"ca.crt": "forged", "tls.key": "added"}});
    world
        .configmaps(b)
        .patch("corp-tls", &PatchParams::default(), &Patch::Merge(&forged))
        .await
        .expect("edit a copy");
    published(&world, b, "corp-tls", "heal", "corp-tls", &ca).await;
    ready(&world, "heal", "Synced").await;
    clean_up_published(world, &["heal"]).await;
}
