//! Attack 5: copies in flight that multiply across reconciles. 16 sources
//! of about 1 MB mirrored into namespaces that accept mirrors from
//! anywhere, met at a cold start (issue 51 used 32 namespaces; 16 are
//! enough for every reconcile to have its 16 writes in flight, and halve
//! what the test's debug build of the controller must write). The code of issue 51 bounds the writes
//! of one reconcile (16) but runs 16 reconciles at once: 256 copies of
//! 1 MB in flight, +201 MiB while it runs and 542 MiB at the peak. One
//! budget of copies in flight, shared by every reconcile, keeps the peak
//! under half the chart's limit.

use super::*;

use crate::common::to;

const SOURCES: usize = 16;
const NAMESPACES: usize = 16;
const PEAK_BOUND_MIB: u64 = CHART_MEMORY_LIMIT_MIB / 2;

#[tokio::test]
async fn copies_in_flight_stay_bounded_across_reconciles_at_a_cold_start() {
    let mut tenants = Tenants::new("ht-flight").await;
    tenants.consenting_namespaces(NAMESPACES).await;
    // Every namespace that consents, as `*` would be on a cluster of its
    // own: only the test's are named, so that no other test's count.
    let targets = format!("{}-t*", tenants.hostile.namespace);
    let sources = (0..SOURCES).map(|i| {
        let name = format!("wide{i:02}");
        let value = just_under_the_limit("blob", &name);
        source_with(&name, &[("blob", &value)], &[to(&targets)])
    });
    tenants.create_all(sources.collect()).await;

    tenants.start(&[]).await;
    let wanted = SOURCES * NAMESPACES;
    tenants.wait_for_mirrors(wanted).await;
    let peak = tenants.peak_mib();
    assert!(
        peak < PEAK_BOUND_MIB,
        "writing {wanted} mirrors of 1 MB peaked at {peak} MiB, over {PEAK_BOUND_MIB} MiB"
    );
    tenants.other_heals().await;
    tenants.still_leads().await;
}
