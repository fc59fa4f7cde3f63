//! Attack 2: a copy larger than the API server accepts. One key `a` of
//! about 1 MB, copied under 100 names by `workshop.io/mirror-keys`: a
//! 100 MB copy, which the code of issue 51 builds whole (217 MiB peak for
//! one source) before the API server refuses it. It is refused before
//! anything is built, and the source is told the limit.

use super::*;

use configmap_mirror::contract::MIRROR_KEYS_ANNOTATION;
use serde_json::json;

use crate::cluster_mirror::{cluster_mirrors, condition, install_crd, resource};
use kube::api::DynamicObject;

/// What the source and the ClusterMirror are told.
const COPY_TOO_LARGE: &str = "CopyTooLarge";

/// `a`, then `a` copied again as `b1` to `b99`.
fn a_hundred_names_of_a() -> String {
    let renames = (1..100).map(|i| format!("a=b{i}"));
    std::iter::once("a".to_owned())
        .chain(renames)
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether `text` names the API server's limit, with or without digit
/// grouping.
fn names_the_limit(text: &str) -> bool {
    text.contains("1,048,576") || text.contains(&API_SERVER_LIMIT.to_string())
}

/// Half the chart's memory limit.
const PEAK_BOUND_MIB: u64 = CHART_MEMORY_LIMIT_MIB / 2;

#[tokio::test]
async fn a_copy_larger_than_the_api_server_accepts_is_refused_before_it_is_built() {
    let mut tenants = Tenants::new("ht-large").await;
    tenants.start(&[]).await;
    let value = just_under_the_limit("a", "huge");
    let names = a_hundred_names_of_a();
    let source = source_with(
        "huge",
        &[("a", &value)],
        &[(MIRROR_KEYS_ANNOTATION, &names)],
    );
    tenants.hostile.configmaps().create(&source).await;

    let warned = warning(&tenants.hostile, "huge", COPY_TOO_LARGE).await;
    let note = warned.note.unwrap_or_default();
    assert!(names_the_limit(&note), "the Warning names no limit: {note}");
    tenants.other_heals().await;
    assert!(
        tenants
            .hostile
            .configmaps()
            .get("huge-synced")
            .await
            .is_none(),
        "a copy was written"
    );
    let peak = tenants.peak_mib();
    assert!(
        peak < PEAK_BOUND_MIB,
        "the controller peaked at {peak} MiB, over {PEAK_BOUND_MIB} MiB"
    );
    tenants.still_leads().await;
}

/// The same copy asked for by a ClusterMirror: a failure of its copy, with
/// the reason the source's Warning has.
#[tokio::test]
async fn a_clustermirror_copy_larger_than_the_api_server_accepts_is_a_failure() {
    let mut tenants = Tenants::new("ht-large-cm").await;
    install_crd(&tenants.hostile.client).await;
    let sources = tenants.hostile.namespace.clone();
    tenants
        .start(&["--cluster-mirror-source-namespaces", &sources])
        .await;
    let value = just_under_the_limit("a", "huge");
    let mut huge = mk_source("huge", &[("a", &value)]);
    huge.metadata.labels = None;
    tenants.hostile.configmaps().create(&huge).await;
    let target = tenants.consenting_namespaces(1).await.remove(0);
    let keys: Vec<_> = std::iter::once(json!({"key": "a"}))
        .chain((1..100).map(|i| json!({"key": "a", "as": format!("b{i}")})))
        .collect();
    let name = format!("{}-huge", tenants.hostile.namespace);
    let spec = json!({
        "source": {"kind": "ConfigMap", "namespace": sources, "name": "huge"},
        "target": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": target}},
            "keys": keys,
        },
    });
    let mut object = DynamicObject::new(&name, &resource());
    object.data = json!({"spec": spec});
    let api = cluster_mirrors(&tenants.hostile.client);
    api.create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("create ClusterMirror {name}: {e}"));

    let failure = testenv::wait_for(&format!("a failure of {name}"), PATIENCE, || async {
        let object = api.get_opt(&name).await.ok()??;
        let failures = object.data["status"]["failures"].as_array()?.clone();
        failures.into_iter().next().map(|f| (f, object))
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    let (failure, object) = failure;
    let ready = condition(&object, "Ready").cloned();
    assert_eq!(
        failure["reason"], COPY_TOO_LARGE,
        "{failure}; Ready: {ready:?}"
    );
    assert!(
        names_the_limit(failure["message"].as_str().unwrap_or_default()),
        "the failure names no limit: {failure}"
    );
    assert!(
        Api::<ConfigMap>::namespaced(tenants.hostile.client.clone(), &target)
            .get_opt("huge")
            .await
            .expect("get")
            .is_none(),
        "a copy was written"
    );
    tenants.other_heals().await;
    let peak = tenants.peak_mib();
    assert!(
        peak < PEAK_BOUND_MIB,
        "the controller peaked at {peak} MiB, over {PEAK_BOUND_MIB} MiB"
    );
    tenants.still_leads().await;
    api.delete(&name, &Default::default())
        .await
        .expect("delete the ClusterMirror");
}
