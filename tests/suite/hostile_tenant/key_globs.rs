//! Attack 1: key globs whose matching costs seconds. One source of 60,000
//! keys whose `workshop.io/mirror-keys` keeps `k0` and excludes 99 globs
//! of 250 characters each, a legal annotation of 25 KB. Matched as the
//! code of issue 51 matches them, one reconcile holds the runtime's only
//! thread for many seconds: the Lease is not renewed within its deadline
//! and the leader exits.

use super::*;

use configmap_mirror::contract::MIRROR_KEYS_ANNOTATION;

/// Keys `k0` to `k59999`, empty: about 600 KB of data.
const KEYS: usize = 60_000;

/// `k0`, then 99 exclusions of about 250 characters, `*q*q…*q*<i>*`,
/// which no key matches (none holds a `q`).
fn costly_keys() -> String {
    let exclusions = (1..100).map(|i| {
        let tail = format!("*{i}*");
        format!("!{}{tail}", "*q".repeat((250 - tail.len()) / 2))
    });
    std::iter::once("k0".to_owned())
        .chain(exclusions)
        .collect::<Vec<_>>()
        .join(",")
}

#[tokio::test]
async fn costly_key_globs_leave_the_leader_leading_and_another_tenant_healing() {
    let mut tenants = Tenants::new("ht-globs").await;
    tenants.start(&[]).await;
    let keys = costly_keys();
    assert!(keys.len() > 24_000, "a 25 KB annotation: {}", keys.len());
    let mut source = source_with("globs", &[], &[(MIRROR_KEYS_ANNOTATION, &keys)]);
    source.data = Some(
        (0..KEYS)
            .map(|i| (format!("k{i}"), String::new()))
            .collect(),
    );
    tenants.hostile.configmaps().create(&source).await;

    // While the hostile source's reconcile runs or after: another tenant's
    // heal waits for neither.
    tenants.other_heals().await;
    holding(&tenants.hostile, "globs-synced", &["k0"]).await;
    tenants.still_leads().await;
}
