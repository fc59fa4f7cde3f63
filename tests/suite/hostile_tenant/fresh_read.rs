//! Attack 4: a fresh read that lists the whole namespace. 100 sources of
//! about 1 MB in one namespace; the controller restarts, and one of them
//! changes. The code of issue 51 reads that one source by a LIST of the
//! namespace, paged by count (500), not bytes: 19 → 208 MiB peak to write
//! one 1 MB source. A fresh read costs the bytes of the sources written.

use super::*;

use serde_json::json;

const SOURCES: usize = 100;

/// The most the restarted controller may have been resident once it has
/// written one 1 MB source: what it needs at rest, the source as read and
/// as written, and room to spare, far under the 100 MB of its namespace.
const PEAK_BOUND_MIB: u64 = 96;

#[tokio::test]
async fn a_fresh_read_after_a_restart_costs_the_source_not_its_namespace() {
    let mut tenants = Tenants::new("ht-fresh").await;
    tenants.start(&[]).await;
    let sources = (0..SOURCES).map(|i| {
        let name = format!("big{i:03}");
        let value = just_under_the_limit("blob", &name);
        mk_source(&name, &[("blob", &value)])
    });
    tenants.create_all(sources.collect()).await;
    let namespace = tenants.hostile.namespace.clone();
    testenv::wait_for("every companion to be written", PATIENCE * 4, || async {
        let copies = tenants.copies().await;
        let mine = copies
            .iter()
            .filter(|c| c.metadata.namespace.as_ref() == Some(&namespace));
        (mine.count() == SOURCES).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));

    tenants.stop();
    tenants.start(&[]).await;
    let at_rest = tenants.peak_mib();
    tenants
        .hostile
        .patch_json("big042", json!({"data": {"v": "2"}}))
        .await;
    tenants.hostile.companion_in_sync("big042").await;
    let peak = tenants.peak_mib();
    assert!(
        peak < PEAK_BOUND_MIB,
        "writing one source of {SOURCES} peaked at {peak} MiB ({at_rest} MiB before), \
         over {PEAK_BOUND_MIB} MiB"
    );
    tenants.still_leads().await;
}
