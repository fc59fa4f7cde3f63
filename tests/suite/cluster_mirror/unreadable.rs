//! A ClusterMirror this version cannot read (written under an older or
//! newer CRD) is told as such, and hides no other one: neither from the
//! watch nor from the list of a controller starting.

use super::*;
use k8s_openapi::api::core::v1::ConfigMap;
use std::io::Write;
use std::process::{Command, Stdio};
use testenv::ControlPlane;

/// A newer CRD than this version's in place: whatever way the test ends,
/// when dropped it deletes the ClusterMirrors `made` and puts back the CRD
/// this version ships, so that no later test meets either.
struct NewerCrd {
    control_plane: &'static ControlPlane,
    made: Vec<String>,
}

impl Drop for NewerCrd {
    fn drop(&mut self) {
        // A drop cannot await: kubectl, as the other guards of the suite.
        let mut delete = self.control_plane.kubectl();
        delete
            .args([
                "delete",
                "clustermirrors",
                "--ignore-not-found",
                "--wait=false",
            ])
            .args(&self.made);
        let deleted = output(delete, None);
        let shipped = serde_json::to_string(&ClusterMirror::crd()).expect("the CRD as JSON");
        let mut replace = self.control_plane.kubectl();
        replace.args(["replace", "-f", "-"]);
        let replaced = output(replace, Some(&shipped));
        for (what, ran) in [
            ("delete the ClusterMirrors", deleted),
            ("put the CRD back", replaced),
        ] {
            assert!(ran.is_ok() || std::thread::panicking(), "{what}: {ran:?}");
        }
    }
}

/// Runs `command` with `stdin`; its stderr when it fails.
fn output(mut command: Command, stdin: Option<&str>) -> Result<(), String> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
    }
    let done = child.wait_with_output().map_err(|e| e.to_string())?;
    match done.status.success() {
        true => Ok(()),
        false => Err(String::from_utf8_lossy(&done.stderr).into_owned()),
    }
}

/// Lets the CRD's schema accept `kind` as a source kind and a list of
/// strings as `spec.target.keys`, as a newer CRD naming a kind and a field
/// this version does not know would; put back when the guard returned
/// drops.
async fn accept_newer_specs<K: TestKind>(world: &World<K>, kind: &str) -> NewerCrd {
    let client = &world.scene.client;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut crd = serde_json::to_value(crds.get(ClusterMirror::crd_name()).await.unwrap()).unwrap();
    let spec = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties";
    let kinds = crd
        .pointer_mut(&format!("{spec}/source/properties/kind/enum"))
        .and_then(Value::as_array_mut)
        .expect("the source kinds of the CRD");
    kinds.push(json!(kind));
    let target = crd
        .pointer_mut(&format!("{spec}/target/properties"))
        .and_then(Value::as_object_mut)
        .expect("the target fields of the CRD");
    let keys = json!({"type": "array", "items": {"type": "string"}});
    target.insert("keys".into(), keys);
    let crd: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
    let newer = NewerCrd {
        control_plane: world.scene.control_plane,
        made: Vec::new(),
    };
    crds.replace(ClusterMirror::crd_name(), &PostParams::default(), &crd)
        .await
        .expect("replace the CRD");
    // The CRD reads back changed a moment before the API server validates
    // and prunes by it: only a create it accepts, keeping the new field,
    // says it does.
    let mut probe = DynamicObject::new(&format!("{}-probe", world.prefix), &resource());
    probe.data = json!({"spec": {
        "source": {"kind": kind, "namespace": "default", "name": "probe"},
        "target": {"namespaceSelector": {}, "keys": ["k"]},
    }});
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let api = cluster_mirrors(client);
    testenv::wait_for(
        "the API server to accept the kind and field",
        PATIENCE,
        || async {
            let accepted = api.create(&dry_run, &probe).await.ok()?;
            accepted.data["spec"]["target"].get("keys").map(drop)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    newer
}

#[tokio::test]
async fn a_clustermirror_this_version_cannot_read_is_told_and_hides_no_other() {
    let mut world = super::world::<ConfigMap>("cmir-unreadable").await;
    world
        .objects()
        .create(&ConfigMap::with_data("colors", &[("k", "v")], false))
        .await;
    world
        .objects()
        .create(&ConfigMap::with_data("shapes", &[("k", "v")], false))
        .await;
    let prod = world.namespace("a", false, &[("env", "prod")]).await;
    let [newer, readable, narrowed] =
        ["newer", "readable", "narrowed"].map(|name| format!("{}-{name}", world.prefix));
    let mut newer_crd = accept_newer_specs(&world, "Job").await;
    newer_crd.made = vec![newer.clone(), readable.clone(), narrowed.clone()];
    let spec = |kind: &str| {
        json!({
            "source": {"kind": kind, "namespace": world.prefix, "name": "colors"},
            "target": {
                "namespaceSelector": {"matchLabels": {"env": "prod"}},
                "namespaces": [format!("{}-*", world.prefix)],
            },
        })
    };
    create(&world, &narrowed, "shapes").await;
    copy_in_sync(&world, &prod, "shapes", &narrowed).await;
    create_with(&world, &newer, spec("Job")).await;
    create_with(&world, &readable, spec("ConfigMap")).await;
    let refused = ready(&world, &newer, "InvalidSpec").await;
    let message = condition(&refused, "Ready").unwrap()["message"].to_string();
    assert!(message.contains("Job"), "{message}");
    copy_in_sync(&world, &prod, "colors", &readable).await;
    ready(&world, &readable, "Synced").await;
    // A field it does not know may ask for less than the spec without it:
    // not ignored, it makes the spec unreadable, its copy kept as it is.
    patch_spec(&world, &narrowed, json!({"target": {"keys": ["k"]}})).await;
    let refused = ready(&world, &narrowed, "InvalidSpec").await;
    let message = condition(&refused, "Ready").unwrap()["message"].to_string();
    assert!(message.contains("unknown field `keys`"), "{message}");

    // A controller starting lists both: the readable one is still served.
    world.stop();
    world
        .objects()
        .set_data("colors", &[("k", Some("changed while stopped"))])
        .await;
    world
        .objects()
        .set_data("shapes", &[("k", Some("changed while stopped"))])
        .await;
    let sources = world.prefix.clone();
    world
        .start_with(&["--cluster-mirror-source-namespaces", &sources])
        .await;
    let copy = copy_in_sync(&world, &prod, "colors", &readable).await;
    assert_eq!(
        copy.data.unwrap_or_default()["k"],
        "changed while stopped",
        "{}",
        world.controller().log_text()
    );
    tokio::time::sleep(QUIET).await;
    let kept = world.api(&prod).get("shapes").await.unwrap();
    let by = kept.labels().get(CLUSTER_MIRROR_LABEL).cloned();
    let value = kept.data.unwrap_or_default().remove("k");
    assert_eq!(
        (by, value),
        (Some(narrowed), Some("v".to_owned())),
        "the copy of a ClusterMirror it cannot read is kept as it was"
    );
    drop(newer_crd);
    world.clean_up().await;
}
