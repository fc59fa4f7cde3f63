//! Attack 3: memory that grows with the keys of sources carrying
//! `workshop.io/mirror-keys`. The code of issue 51 keeps a digest of every
//! key of such a source in its cache, about 60 bytes a key, even when the
//! annotation is malformed: six sources of 60,000 keys cost +19 MiB, and a
//! few dozen pass the chart's limit. What a source costs once cached does
//! not grow with its keys.

use super::*;

use configmap_mirror::contract::{MIRROR_KEYS_ANNOTATION, warning::INVALID_MIRROR_KEYS};

const KEYS: usize = 60_000;

/// Three lists of keys that are fine, three malformed.
const LISTS: [(&str, Option<&[&str]>); 6] = [
    ("k0,k1=one", Some(&["k0", "one"])),
    ("k2", Some(&["k2"])),
    ("k3=three", Some(&["three"])),
    ("k0,,k1", None),
    ("k0,!k1=x", None),
    ("k0,k 1", None),
];

#[tokio::test]
async fn the_keys_of_sources_carrying_mirror_keys_cost_no_memory_once_cached() {
    let mut tenants = Tenants::new("ht-keys").await;
    tenants.start(&[]).await;
    // Every code path the six take once, so that the figure before counts
    // what a reconcile needs whatever its source.
    tenants.other_heals().await;
    let reconciles = "controller_runtime_reconcile_total";
    let sync = "loop=\"sync\"";
    let before = tenants.controller().metric(reconciles, sync).await;
    let resident_before = tenants.controller().memory_kib("VmRSS");

    let data: std::collections::BTreeMap<String, String> = (0..KEYS)
        .map(|i| (format!("k{i}"), String::new()))
        .collect();
    let sources = LISTS.iter().enumerate().map(|(i, (keys, _))| {
        let mut source = source_with(&format!("keys{i}"), &[], &[(MIRROR_KEYS_ANNOTATION, keys)]);
        source.data = Some(data.clone());
        source
    });
    tenants.create_all(sources.collect()).await;
    for (i, (_, held)) in LISTS.iter().enumerate() {
        let name = format!("keys{i}");
        match held {
            Some(keys) => drop(holding(&tenants.hostile, &format!("{name}-synced"), keys).await),
            None => drop(warning(&tenants.hostile, &name, INVALID_MIRROR_KEYS).await),
        }
    }
    let done = before + LISTS.len() as f64;
    let after = tenants
        .controller()
        .metric_reaching(reconciles, sync, done)
        .await;
    assert!(after >= done, "{after} reconciles, not {done}");

    let grown_kib = tenants.controller().memory_kib("VmRSS") as i64 - resident_before as i64;
    eprintln!("six sources of {KEYS} keys: resident memory {grown_kib:+} KiB");
    assert!(
        grown_kib < GROWTH_BOUND_KIB,
        "six sources of {KEYS} keys grew the controller by {grown_kib} KiB, over {GROWTH_BOUND_KIB} KiB"
    );
    tenants.still_leads().await;
}

/// The bound on the growth, in KiB: 8 MiB.
const GROWTH_BOUND_KIB: i64 = 8 * 1024;
