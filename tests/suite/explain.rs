//! `configmap-mirror explain`, run as users run it (the binary, their
//! kubeconfig, `-o json`), against a cluster-wide controller: for each
//! reason a copy is or is not where its source asks, the situation is set
//! up, the controller acts, and explain's verdict must be what the
//! controller did.
//!
//! These run on the cluster-wide control plane, one at a time (see
//! `common::World`). No assertion message prints explain's output: for
//! Secrets it is checked never to hold their data, and must not be the
//! place that leaks it.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
    process::Command,
};

use configmap_mirror::contract::{
    MANAGED_BY_LABEL, MANAGER_NAME, MIRROR_OF_ANNOTATION, SOURCE_SELECTOR_ANNOTATION, mirror_of,
};
use k8s_openapi::{
    ByteString,
    api::core::v1::{ConfigMap, Secret},
};
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::common::{TestKind, World, kubectl_apply, service_account, to};

const ACCEPT_FROM: &str = "workshop.io/accept-mirrors-from";
/// The data of every source here, which no output may show.
pub(crate) const VALUE: &str = "do-not-print-me-7f3a";
/// A source's data here.
const HOLDING_VALUE: &[(&str, &str)] = &[("color", VALUE)];

/// What a run of explain gave.
pub(crate) struct Run {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).expect("explain -o json prints JSON")
    }
}

/// Runs `configmap-mirror explain ARGS` with `kubeconfig`, in an
/// environment without the controller's variables.
pub(crate) fn explain(kubeconfig: &Path, args: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_configmap-mirror"));
    command
        .arg("explain")
        .args(args)
        .env("KUBECONFIG", kubeconfig);
    run(command)
}

fn run(mut command: Command) -> Run {
    for (key, _) in std::env::vars() {
        if key.starts_with("MIRROR_") || key == "POD_NAMESPACE" || key == "KUBERNETES_SERVICE_HOST"
        {
            command.env_remove(key);
        }
    }
    let output = command.output().expect("run explain");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Explain, as the test's administrator.
fn admin_explain<K: TestKind>(world: &World<K>, args: &[&str]) -> Run {
    let mut all = vec!["--kind", kind_flag::<K>()];
    all.extend_from_slice(args);
    explain(world.scene.control_plane.kubeconfig_path(), &all)
}

/// `explain --kind`'s name of `K`.
pub(crate) fn kind_flag<K: TestKind>() -> &'static str {
    match K::kind(&()).as_ref() {
        "Secret" => "secret",
        _ => "configmap",
    }
}

/// The namespace label that consents to the other kind only.
fn other_consent_label<K: TestKind>() -> &'static str {
    match K::CONSENT_LABEL == ConfigMap::CONSENT_LABEL {
        true => Secret::CONSENT_LABEL,
        false => ConfigMap::CONSENT_LABEL,
    }
}

/// Each row as `what namespace/name: verdict`, which never holds data.
pub(crate) fn described(json: &Value) -> String {
    rows(json)
        .iter()
        .map(|row| {
            format!(
                "{} {}/{}: {}",
                row["what"].as_str().unwrap_or_default(),
                row["namespace"].as_str().unwrap_or_default(),
                row["name"].as_str().unwrap_or_default(),
                row["verdict"].as_str().unwrap_or_default(),
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn rows(json: &Value) -> Vec<Value> {
    json["rows"].as_array().cloned().unwrap_or_default()
}

/// The row about `what` in `namespace`.
pub(crate) fn row(json: &Value, what: &str, namespace: &str) -> Value {
    rows(json)
        .into_iter()
        .find(|row| row["what"] == what && row["namespace"] == namespace)
        .unwrap_or_else(|| panic!("no {what} row for {namespace}:\n{}", described(json)))
}

pub(crate) fn verdict(json: &Value, what: &str, namespace: &str) -> String {
    row(json, what, namespace)["verdict"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// An object of someone else named `name` in `namespace`.
async fn bystander<K: TestKind>(world: &World<K>, namespace: &str, name: &str) {
    world
        .api(namespace)
        .create(
            &PostParams::default(),
            &K::with_data(name, &[("theirs", "1")], false),
        )
        .await
        .expect("create the bystander");
}

/// Whether `namespace` holds a mirror of the test's source `name`.
async fn has_mirror<K: TestKind>(world: &World<K>, namespace: &str, name: &str) -> bool {
    let found = world.api(namespace).get_opt(name).await.expect("get");
    found
        .is_some_and(|copy| mirror_of(copy.meta()) == Some((world.prefix.clone(), name.to_owned())))
}

/// For each namespace, explain's mirror row is in place exactly when the
/// controller wrote the mirror there.
async fn matches_the_cluster<K: TestKind>(
    world: &World<K>,
    json: &Value,
    namespaces: &[&str],
    name: &str,
) {
    for namespace in namespaces {
        let said = row(json, "mirror", namespace);
        assert_eq!(
            said["ok"].as_bool(),
            Some(has_mirror(world, namespace, name).await),
            "{namespace}: explain says {}",
            said["verdict"]
        );
    }
}

/// Neither the text nor the JSON output holds the Secret's data.
pub(crate) fn never_shows_the_value(run: &Run) {
    let encoded = serde_json::to_value(ByteString(VALUE.as_bytes().to_vec())).expect("base64");
    let encoded = encoded.as_str().unwrap_or_default().trim_end_matches('=');
    for text in [&run.stdout, &run.stderr] {
        assert!(
            !text.contains(VALUE) && !text.contains(encoded),
            "explain printed the data of a source"
        );
    }
}

crate::for_each_kind!(
    each_namespace_asked_for_gets_the_verdict_the_controller_acted_on,
    copies_out_of_place_are_said_so_until_the_controller_restores_them,
    why_a_source_is_not_mirrored_is_what_the_controller_warned_of,
    a_preview_names_the_namespaces_that_then_receive_the_mirror,
    a_contested_copy_is_said_to_be_contested,
);

async fn each_namespace_asked_for_gets_the_verdict_the_controller_acted_on<K: TestKind>() {
    let mut world = World::<K>::new("ex-verdicts").await;
    let open = world.namespace("open", true, &[]).await;
    let refusing = world.namespace("refusing", false, &[]).await;
    let other_kind = world
        .namespace("other", false, &[(other_consent_label::<K>(), "true")])
        .await;
    let picky = world.namespace("picky", true, &[]).await;
    world
        .annotate_namespace(&picky, ACCEPT_FROM, Some("platform"))
        .await;
    let typo = world.namespace("typo", true, &[]).await;
    world
        .annotate_namespace(&typo, ACCEPT_FROM, Some("platform,,Not_A_Name"))
        .await;
    let taken = world.namespace("taken", true, &[]).await;
    bystander(&world, &taken, "shared").await;
    let guarded = world.namespace("guarded", true, &[]).await;
    world.stop();
    let protected = format!("--protected-namespaces=kube-system,{guarded}");
    world.start_with(&[&protected]).await;
    let missing = format!("{}-missing", world.prefix);
    let glob = format!("{}-*,{missing}", world.prefix);
    world
        .objects()
        .source("shared", HOLDING_VALUE, &[to(&glob)])
        .await;

    // What shows that the controller has acted on every namespace: one
    // reconcile compares them all. (Of its Warnings, the name taken
    // stands for the protected namespace's too.)
    world.mirror_in_sync(&open, "shared").await;
    world.objects().companion_in_sync("shared").await;
    world.scene.wait_event("shared", "MirrorNameTaken").await;
    world
        .scene
        .namespace_event(&typo, "InvalidAcceptMirrorsFrom")
        .await;

    let source_ref = format!("{}/shared", world.prefix);
    let explained = admin_explain(&world, &[&source_ref, "-o", "json", &protected]);
    never_shows_the_value(&explained);
    assert_eq!(
        explained.code,
        Some(1),
        "something asked for is not in place"
    );
    let json = explained.json();
    assert_eq!(json["version"], 1);
    assert_eq!(json["subject"]["is"], "source");
    assert_eq!(verdict(&json, "source", &world.prefix), "managed");
    let in_sync = match K::kind(&()).as_ref() {
        "Secret" => "in-sync-unverified",
        _ => "in-sync",
    };
    assert_eq!(verdict(&json, "companion", &world.prefix), in_sync);
    for (namespace, expected) in [
        (&open, in_sync),
        (&refusing, "not-consenting"),
        (&other_kind, "kind-not-accepted"),
        (&picky, "source-namespace-not-accepted"),
        (&typo, "invalid-accept-mirrors-from"),
        (&taken, "name-taken"),
        (&guarded, "protected"),
        (&missing, "no-such-namespace"),
    ] {
        assert_eq!(
            verdict(&json, "mirror", namespace),
            expected,
            "{namespace}:\n{}",
            described(&json)
        );
    }
    matches_the_cluster(
        &world,
        &json,
        &[
            &open,
            &refusing,
            &other_kind,
            &picky,
            &typo,
            &taken,
            &guarded,
        ],
        "shared",
    )
    .await;

    // The table says the same, one line per namespace.
    let table = admin_explain(&world, &[&source_ref, &protected]);
    never_shows_the_value(&table);
    assert_eq!(table.code, Some(1));
    for (namespace, expected) in [(&open, in_sync), (&picky, "source-namespace-not-accepted")] {
        assert!(
            table.stdout.lines().any(|line| {
                line.starts_with("mirror")
                    && line.contains(namespace.as_str())
                    && line.contains(expected)
            }),
            "no table line says {namespace}: {expected}"
        );
    }

    // Each namespace, explained on its own, says the same of the source.
    let picky_view = admin_explain(&world, &["--namespace", &picky, "-o", "json"]).json();
    let asking = rows(&picky_view)
        .into_iter()
        .find(|row| row["source"] == source_ref.as_str())
        .unwrap_or_else(|| panic!("no row for the source:\n{}", described(&picky_view)));
    assert_eq!(asking["verdict"], "source-namespace-not-accepted");
    assert_eq!(verdict(&picky_view, "accept-from", &picky), "from-listed");
    let open_view = admin_explain(&world, &["--namespace", &open, "-o", "json"]);
    assert_eq!(open_view.code, Some(0), "{}", described(&open_view.json()));
    never_shows_the_value(&open_view);
    world.clean_up().await;
}

async fn copies_out_of_place_are_said_so_until_the_controller_restores_them<K: TestKind>() {
    let mut world = World::<K>::new("ex-states").await;
    let a = world.namespace("a", true, &[]).await;
    let b = world.namespace("b", true, &[]).await;
    world
        .objects()
        .source("shared", HOLDING_VALUE, &[to(&format!("{a},{b}"))])
        .await;
    world.mirror_in_sync(&a, "shared").await;
    world.mirror_in_sync(&b, "shared").await;
    world.objects().companion_in_sync("shared").await;
    let source_ref = format!("{}/shared", world.prefix);
    let in_place = admin_explain(&world, &[&source_ref, "-o", "json"]);
    assert_eq!(in_place.code, Some(0), "{}", described(&in_place.json()));

    // Each copy, explained on its own, names its source.
    for copy in [
        format!("{a}/shared"),
        format!("{}/shared-synced", world.prefix),
    ] {
        let run = admin_explain(&world, &[&copy, "-o", "json"]);
        never_shows_the_value(&run);
        let json = run.json();
        assert_eq!(run.code, Some(0), "{copy}:\n{}", described(&json));
        assert_eq!(json["subject"]["is"], "copy");
        assert_eq!(rows(&json)[0]["source"], source_ref.as_str());
    }

    // As a kubectl plugin, the same answer.
    let plugin_dir = world
        .scene
        .control_plane
        .log_dir()
        .join(format!("{}-plugin", world.prefix));
    std::fs::create_dir_all(&plugin_dir).expect("a directory for the plugin");
    let plugin = plugin_dir.join("kubectl-mirror");
    let _ = std::fs::remove_file(&plugin);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_configmap-mirror"), &plugin)
        .expect("link the plugin");
    let mut kubectl = Command::new(world.scene.control_plane.bin_dir().join("kubectl"));
    let path = format!(
        "{}:{}",
        plugin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    kubectl
        .env("PATH", path)
        .env("KUBECONFIG", world.scene.control_plane.kubeconfig_path())
        .args([
            "mirror",
            "explain",
            &source_ref,
            "--kind",
            kind_flag::<K>(),
            "-o",
            "json",
        ]);
    let as_plugin = run(kubectl);
    assert_eq!(as_plugin.code, Some(0), "{}", as_plugin.stderr);
    assert_eq!(described(&as_plugin.json()), described(&in_place.json()));

    // With the controller stopped, copies out of place stay so.
    world.stop();
    world
        .objects()
        .set_data("shared", &[("color", Some("changed"))])
        .await;
    world
        .api(&a)
        .patch(
            "shared",
            &PatchParams::default(),
            &Patch::Merge(&K::data_patch(&[("color", Some("edited"))])),
        )
        .await
        .expect("edit the mirror");
    world
        .api(&b)
        .delete("shared", &Default::default())
        .await
        .expect("delete the mirror");
    let out_of_place = admin_explain(&world, &[&source_ref, "-o", "json"]);
    never_shows_the_value(&out_of_place);
    assert_eq!(out_of_place.code, Some(1));
    let json = out_of_place.json();
    let (behind, edited) = match K::kind(&()).as_ref() {
        // Without the install's key, which of the two cannot be told.
        "Secret" => ("differs", "differs"),
        _ => ("source-changed", "drifted"),
    };
    assert_eq!(verdict(&json, "companion", &world.prefix), behind);
    assert_eq!(verdict(&json, "mirror", &a), edited);
    assert_eq!(verdict(&json, "mirror", &b), "missing");
    let namespace_view = admin_explain(&world, &["--namespace", &b, "-o", "json"]);
    assert_eq!(namespace_view.code, Some(1));
    let asking = rows(&namespace_view.json())
        .into_iter()
        .find(|row| row["source"] == source_ref.as_str())
        .expect("a row for the source");
    assert_eq!(asking["verdict"], "missing");

    world.start().await;
    world.mirror_in_sync(&a, "shared").await;
    world.mirror_in_sync(&b, "shared").await;
    world.objects().companion_in_sync("shared").await;
    let restored = admin_explain(&world, &[&source_ref, "-o", "json"]);
    assert_eq!(restored.code, Some(0), "{}", described(&restored.json()));
    world.clean_up().await;
}

async fn why_a_source_is_not_mirrored_is_what_the_controller_warned_of<K: TestKind>() {
    let mut world = World::<K>::new("ex-why").await;
    world.stop();
    world.start_with(&["--reserved-names=reserved-one"]).await;
    let a = world.namespace("a", true, &[]).await;
    let objects = world.objects();
    objects
        .create(&K::with_data("plain", &[("color", VALUE)], false))
        .await;
    world
        .objects()
        .source("reserved-one", HOLDING_VALUE, &[to(&a)])
        .await;
    let long = "n".repeat(250);
    world
        .objects()
        .source(&long, HOLDING_VALUE, &[to(&a)])
        .await;
    world
        .objects()
        .source("typo", HOLDING_VALUE, &[to("Team_*")])
        .await;
    let many: Vec<String> = (0..101).map(|i| format!("ns-{i}")).collect();
    world
        .objects()
        .source("many", HOLDING_VALUE, &[to(&many.join(","))])
        .await;
    bystander(&world, &world.prefix, "taken-synced").await;
    world.objects().source("taken", HOLDING_VALUE, &[]).await;
    let mut odd = K::with_data("odd", &[("color", VALUE)], true);
    odd.meta_mut()
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(MANAGED_BY_LABEL.to_owned(), MANAGER_NAME.to_owned());
    objects.create(&odd).await;

    world
        .scene
        .wait_event("reserved-one", "MirrorNameReserved")
        .await;
    world.scene.wait_event(&long, "CompanionNameTooLong").await;
    world.scene.wait_event("typo", "InvalidMirrorTargets").await;
    world.scene.wait_event("many", "InvalidMirrorTargets").await;
    world.scene.wait_event("taken", "CompanionNameTaken").await;
    world.objects().companion_in_sync("reserved-one").await;
    // The long name's mirror is written all the same.
    world.mirror_in_sync(&a, &long).await;

    let ns = world.prefix.clone();
    let reserved = "--reserved-names=reserved-one";
    let explained = |name: &str| {
        let run = admin_explain(&world, &[&format!("{ns}/{name}"), "-o", "json", reserved]);
        never_shows_the_value(&run);
        assert_eq!(run.code, Some(1), "{name}: something is not in place");
        run.json()
    };
    assert_eq!(verdict(&explained("plain"), "source", &ns), "not-selected");
    assert!(objects.get("plain-synced").await.is_none());

    let json = explained("reserved-one");
    assert_eq!(verdict(&json, "mirror", &a), "reserved-name");
    matches_the_cluster(&world, &json, &[&a], "reserved-one").await;

    let json = explained(&long);
    assert_eq!(verdict(&json, "source", &ns), "name-too-long");
    assert!(rows(&json).iter().all(|row| row["what"] != "companion"));
    matches_the_cluster(&world, &json, &[&a], &long).await;

    for name in ["typo", "many"] {
        let json = explained(name);
        let row = row(&json, "mirror", "");
        assert_eq!(row["verdict"], "invalid-targets");
        if name == "many" {
            let detail = row["detail"].as_str().unwrap_or_default();
            assert!(detail.contains("limit of 100"), "{detail}");
        }
    }

    let json = explained("taken");
    assert_eq!(verdict(&json, "companion", &ns), "name-taken");
    // The object at the companion's name, explained, is nobody's copy.
    let json = explained("taken-synced");
    assert_eq!(json["subject"]["is"], "copy");
    assert_eq!(verdict(&json, "companion", &ns), "not-a-copy");

    // A source that carries the label of a copy is never one: no companion.
    let json = explained("odd");
    assert_eq!(json["subject"]["is"], "copy");
    let refused = rows(&json)
        .into_iter()
        .find(|row| row["what"] == "source")
        .unwrap_or_else(|| panic!("no source row:\n{}", described(&json)));
    assert_eq!(refused["verdict"], "is-a-copy");
    assert!(objects.get("odd-synced").await.is_none());

    // A mirror of another install is left to it.
    let mut foreign = K::with_data("foreign", &[("color", "x")], false);
    foreign.meta_mut().labels = Some(BTreeMap::from([(
        MANAGED_BY_LABEL.to_owned(),
        MANAGER_NAME.to_owned(),
    )]));
    foreign.meta_mut().annotations = Some(BTreeMap::from([
        (
            SOURCE_SELECTOR_ANNOTATION.to_owned(),
            "team=other".to_owned(),
        ),
        (
            MIRROR_OF_ANNOTATION.to_owned(),
            "elsewhere/foreign".to_owned(),
        ),
    ]));
    world
        .api(&a)
        .create(&PostParams::default(), &foreign)
        .await
        .expect("create another install's mirror");
    let run = admin_explain(&world, &[&format!("{a}/foreign"), "-o", "json"]);
    assert_eq!(run.code, Some(1));
    assert_eq!(verdict(&run.json(), "mirror", &a), "other-install");
    world
        .api(&a)
        .delete("foreign", &Default::default())
        .await
        .expect("delete it");
    world.clean_up().await;
}

async fn a_preview_names_the_namespaces_that_then_receive_the_mirror<K: TestKind>() {
    let world = World::<K>::new("ex-preview").await;
    let named = world.namespace("named", true, &[]).await;
    let selected = world
        .namespace("selected", true, &[("env", &world.prefix)])
        .await;
    let refusing = world.namespace("refusing", false, &[]).await;
    let other_kind = world
        .namespace("other", false, &[(other_consent_label::<K>(), "true")])
        .await;
    world.objects().source("shared", HOLDING_VALUE, &[]).await;
    world.objects().companion_in_sync("shared").await;

    let mirror_to = format!("{named},{refusing},{other_kind}");
    let selector = format!("env={}", world.prefix);
    let source_ref = format!("{}/shared", world.prefix);
    let preview = admin_explain(
        &world,
        &[
            &source_ref,
            "--mirror-to",
            &mirror_to,
            "--mirror-to-selector",
            &selector,
            "-o",
            "json",
        ],
    );
    never_shows_the_value(&preview);
    assert_eq!(preview.code, Some(1), "two namespaces refuse");
    let json = preview.json();
    assert_eq!(json["preview"]["mirrorTo"], mirror_to.as_str());
    let receiving: BTreeSet<String> = rows(&json)
        .into_iter()
        .filter(|row| row["verdict"] == "would-receive")
        .filter_map(|row| row["namespace"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(receiving, BTreeSet::from([named.clone(), selected.clone()]));
    assert_eq!(verdict(&json, "mirror", &refusing), "not-consenting");
    assert_eq!(verdict(&json, "mirror", &other_kind), "kind-not-accepted");
    assert!(
        !has_mirror(&world, &named, "shared").await,
        "a preview writes nothing"
    );

    world
        .objects()
        .patch(
            "shared",
            json!({"metadata": {"annotations": {
                "workshop.io/mirror-to": mirror_to,
                "workshop.io/mirror-to-selector": selector,
            }}}),
        )
        .await;
    for namespace in &receiving {
        world.mirror_in_sync(namespace, "shared").await;
    }
    let mut mirrored_now = BTreeSet::new();
    for namespace in [&named, &selected, &refusing, &other_kind] {
        if has_mirror(&world, namespace, "shared").await {
            mirrored_now.insert(namespace.clone());
        }
    }
    assert_eq!(mirrored_now, receiving);
    world.clean_up().await;
}

async fn a_contested_copy_is_said_to_be_contested<K: TestKind>() {
    let mut world = World::<K>::new("ex-contest").await;
    world.objects().source("shared", HOLDING_VALUE, &[]).await;
    let objects = world.objects();
    objects.companion_in_sync("shared").await;
    for _ in 0..5 {
        objects.delete("shared-synced").await;
        objects.companion_in_sync("shared").await;
    }
    objects.delete("shared-synced").await;
    world.scene.wait_event("shared", "CopyContested").await;
    world.stop();
    let held = world.objects().get("shared-synced").await;

    let source_ref = format!("{}/shared", world.prefix);
    let run = admin_explain(&world, &[&source_ref, "-o", "json"]);
    never_shows_the_value(&run);
    let json = run.json();
    let companion = row(&json, "companion", &world.prefix);
    let detail = companion["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("CopyContested"), "{detail}");
    match held {
        None => {
            assert_eq!(companion["verdict"], "contested");
            assert_eq!(run.code, Some(1));
        }
        // Restored, slowly, before the controller stopped.
        Some(_) => assert_eq!(companion["ok"], true, "{}", companion["verdict"]),
    }
    let warnings = json["warnings"].as_array().cloned().unwrap_or_default();
    assert!(
        warnings.iter().any(|w| w["reason"] == "CopyContested"),
        "the Warning is shown"
    );
    world.clean_up().await;
}

/// A caller who may read the source's namespace only is told what it
/// cannot read, and exit code 1: never a crash, never a claim.
#[tokio::test]
async fn a_caller_without_rights_to_a_namespace_is_told_it_cannot_read_it() {
    let world = World::<ConfigMap>::new("ex-rbac").await;
    let a = world.namespace("a", true, &[]).await;
    world
        .objects()
        .source("shared", HOLDING_VALUE, &[to(&a)])
        .await;
    world.mirror_in_sync(&a, "shared").await;
    world.objects().companion_in_sync("shared").await;

    let ns = &world.prefix;
    kubectl_apply(&world.scene, &service_account(ns, "reader"));
    kubectl_apply(&world.scene, &reader_role(ns));
    let kubeconfig: PathBuf = world.scene.token_kubeconfig("reader").await;
    let source_ref = format!("{ns}/shared");
    for output in ["json", "table"] {
        let run = explain(&kubeconfig, &[&source_ref, "-o", output]);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
        assert_eq!(run.code, Some(1), "{}{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("cannot-read"), "{}", run.stdout);
    }
    let json = explain(&kubeconfig, &[&source_ref, "-o", "json"]).json();
    assert_eq!(verdict(&json, "source", ns), "managed");
    assert_eq!(verdict(&json, "companion", ns), "in-sync");
    let denied = row(&json, "mirror", &a);
    assert_eq!(denied["verdict"], "cannot-read");
    let detail = denied["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("forbidden"), "{detail}");

    let run = explain(&kubeconfig, &["--namespace", &a, "-o", "json"]);
    assert_eq!(run.code, Some(1));
    assert_eq!(run.json()["rows"][0]["verdict"], "cannot-read");
    world.clean_up().await;
}

/// get and list on ConfigMaps and core Events in one namespace.
fn reader_role(namespace: &str) -> String {
    format!(
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: reader, namespace: {namespace}}}
rules:
- {{apiGroups: [""], resources: ["configmaps", "events"], verbs: ["get", "list"]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: reader, namespace: {namespace}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}}
subjects: [{{kind: ServiceAccount, name: reader, namespace: {namespace}}}]
"#
    )
}

/// A Secret the token controller owns is refused as the kind refuses it.
#[tokio::test]
async fn a_service_account_token_is_explained_as_refused() {
    let world = World::<Secret>::new("ex-token").await;
    let mut token = Secret::with_data("token", &[], true);
    token.type_ = Some("kubernetes.io/service-account-token".into());
    token.data = None;
    token.metadata.annotations = Some(BTreeMap::from([(
        "kubernetes.io/service-account.name".into(),
        "default".into(),
    )]));
    world.objects().create(&token).await;
    world.scene.wait_event("token", "SourceNotCopyable").await;
    let run = admin_explain(&world, &[&format!("{}/token", world.prefix), "-o", "json"]);
    assert_eq!(run.code, Some(1));
    let json = run.json();
    assert_eq!(verdict(&json, "source", &world.prefix), "refused-type");
    assert!(world.objects().get("token-synced").await.is_none());
    let token = world.objects().get("token").await.expect("the token");
    for value in token.data.iter().flat_map(|data| data.values()) {
        let text = String::from_utf8_lossy(&value.0).into_owned();
        assert!(
            text.is_empty() || !run.stdout.contains(&text),
            "explain printed the token"
        );
    }
    world.clean_up().await;
}

/// A Helm 2 release record (Tiller's `OWNER=TILLER`) is refused, and
/// explain says why as the controller's Warning does.
#[tokio::test]
async fn a_helm_2_release_record_is_explained_as_refused() {
    let world = World::<ConfigMap>::new("ex-tiller").await;
    let mut record = ConfigMap::with_data("web.v1", &[("release", VALUE)], true);
    record
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .extend([
            ("OWNER".into(), "TILLER".into()),
            ("NAME".into(), "web".into()),
        ]);
    world.objects().create(&record).await;
    world.scene.wait_event("web.v1", "SourceNotCopyable").await;
    let run = admin_explain(&world, &[&format!("{}/web.v1", world.prefix), "-o", "json"]);
    assert_eq!(run.code, Some(1));
    let json = run.json();
    let source = row(&json, "source", &world.prefix);
    assert_eq!(source["verdict"], "refused-type");
    let detail = source["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("OWNER=TILLER"), "{detail}");
    assert!(world.objects().get("web.v1-synced").await.is_none());
    world.clean_up().await;
}

/// Input that can never work is refused before any API call, with exit
/// code 2 and a message naming it.
#[test]
fn bad_input_exits_with_code_2() {
    let nowhere = Path::new("/nonexistent/kubeconfig");
    let cases: &[(&[&str], &str)] = &[
        (&[], "NAMESPACE/NAME"),
        (&["no-slash"], "NAMESPACE/NAME"),
        (&["Bad_Ns/x"], "namespace"),
        (&["a/b", "--kind", "pod"], "--kind"),
        (&["a/b", "--namespace", "c"], "--namespace"),
        (&["a/b", "--mirror-to", "Team_A"], "--mirror-to"),
        (
            &["a/b", "--mirror-to-selector", "a in b"],
            "--mirror-to-selector",
        ),
        (&["a/b", "-o", "yaml"], "--output"),
        (&["a/b", "--selector="], "--selector"),
        (&["a/b", "--suffix=..x"], "--suffix"),
        (&["a/b", "--never-carry=a b"], "--never-carry"),
        (&["a/b"], "kubeconfig"),
    ];
    for (args, names) in cases {
        let run = explain(nowhere, args);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(names), "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{args:?}: {}", run.stderr);
    }
}

/// Installed as `kubectl-mirror`, the binary runs subcommands only: never
/// the controller.
#[test]
fn as_a_kubectl_plugin_it_never_runs_the_controller() {
    let dir = std::env::temp_dir().join(format!("kubectl-mirror-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let plugin = dir.join("kubectl-mirror");
    let _ = std::fs::remove_file(&plugin);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_configmap-mirror"), &plugin)
        .expect("link the plugin");
    let mut bare = Command::new(&plugin);
    bare.env("KUBECONFIG", "/nonexistent/kubeconfig");
    let bare = run(bare);
    let mut help = Command::new(&plugin);
    help.arg("--help");
    let help = run(help);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(bare.code, Some(2), "{}", bare.stderr);
    assert!(bare.stderr.contains("kubectl mirror"), "{}", bare.stderr);
    assert!(help.stdout.contains("explain"), "{}", help.stdout);
    assert!(!help.stdout.contains("--leader-elect"), "{}", help.stdout);
}
