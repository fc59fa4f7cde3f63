//! Attack 4: a fresh read that lists the whole namespace. 100 sources of
//! about 1 MB in one namespace; the controller restarts, and one of them
//! changes. The code of issue 51 reads that one source by a LIST of the
//! namespace, paged by count (500), not bytes: 19 → 208 MiB peak to write
//! one 1 MB source. A fresh read costs the bytes of the sources written.

use super::*;

use configmap_mirror::contract::CHECKSUM_ANNOTATION;
use serde_json::json;

const SOURCES: usize = 100;

/// The most the restarted controller may have been resident once it has
/// written one 1 MB source: what it needs at rest, the source as read and
/// as written, and room to spare, far under the 100 MB of its namespace.
const PEAK_BOUND_MIB: u64 = 96;

/// The companion the controller writes for `source`, as `template` (one
/// it wrote) is but for the source's name, uid, content and checksum:
/// written by the test, so that the restarted controller finds every
/// companion exact without the test paying for 100 writes of 1 MB first.
fn companion_of(source: &ConfigMap, template: &ConfigMap) -> ConfigMap {
    let name = source.metadata.name.clone().expect("a name");
    let mut companion = mk_source(&contract::companion_name(&name, "-synced"), &[]);
    companion.metadata.labels = template.metadata.labels.clone();
    let mut annotations = template.metadata.annotations.clone().unwrap_or_default();
    annotations.insert(
        CHECKSUM_ANNOTATION.into(),
        contract::content_checksum(source),
    );
    companion.metadata.annotations = Some(annotations);
    let mut owner = template
        .metadata
        .owner_references
        .clone()
        .unwrap_or_default();
    for reference in &mut owner {
        reference.name = name.clone();
        reference.uid = source.metadata.uid.clone().expect("a uid");
    }
    companion.metadata.owner_references = Some(owner);
    companion.data = source.data.clone();
    companion
}

#[tokio::test]
async fn a_fresh_read_after_a_restart_costs_the_source_not_its_namespace() {
    let mut tenants = Tenants::new("ht-fresh").await;
    tenants.start(&[]).await;
    let template = tenants
        .other
        .configmaps()
        .get("calm-synced")
        .await
        .expect("a companion");
    tenants.stop();
    for i in 0..SOURCES {
        let name = format!("big{i:03}");
        let value = just_under_the_limit("blob", &name);
        let source = tenants
            .hostile
            .configmaps()
            .create(&mk_source(&name, &[("blob", &value)]))
            .await;
        tenants
            .hostile
            .configmaps()
            .create(&companion_of(&source, &template))
            .await;
    }
    tenants.start(&[]).await;
    let at_rest = tenants.peak_mib();
    tenants
        .hostile
        .configmaps()
        .patch("big042", json!({"data": {"v": "2"}}))
        .await;
    tenants
        .hostile
        .configmaps()
        .companion_in_sync("big042")
        .await;
    let peak = tenants.peak_mib();
    assert!(
        peak < PEAK_BOUND_MIB,
        "writing one source of {SOURCES} peaked at {peak} MiB ({at_rest} MiB before), \
         over {PEAK_BOUND_MIB} MiB"
    );
    // Only this companion: every other was exact.
    let writes = tenants.controller().writes_reaching(1.0).await;
    assert_eq!(writes, 1.0, "the restarted controller rewrote companions");
    tenants.still_leads().await;
}
