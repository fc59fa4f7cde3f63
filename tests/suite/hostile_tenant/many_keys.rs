//! Attack 3: sources of many keys. A ConfigMap of 60,000 empty keys holds
//! next to no bytes of values, but decoded it costs about 150 bytes a key
//! (its map of keys, and the managedFields entry naming each one): some
//! 10 MiB, read afresh for every write, besides the copy, the answer and
//! the watch's own decoding. The code of issue 51 counted a source by its
//! values' bytes, so it read any number of them at once: eight such
//! sources, with and without `workshop.io/mirror-keys`, took the
//! controller past half the chart's limit. A source is counted with what
//! its keys cost decoded, and the reads in flight share one budget.

use super::*;

use configmap_mirror::contract::{MIRROR_KEYS_ANNOTATION, warning::INVALID_MIRROR_KEYS};

use crate::common::to;

const KEYS: usize = 60_000;
const PEAK_BOUND_MIB: u64 = CHART_MEMORY_LIMIT_MIB / 2;

/// The sources' `workshop.io/mirror-keys`, and the keys their companions
/// hold: None for a list the controller refuses.
const SOURCES: [(Option<&str>, Option<&[&str]>); 8] = [
    (None, Some(&[])),
    (None, Some(&[])),
    (None, Some(&[])),
    (None, Some(&[])),
    (Some("k0"), Some(&["k0"])),
    (Some("k1=one"), Some(&["one"])),
    (Some("k0,,k1"), None),
    (Some("k0,k 1"), None),
];

#[tokio::test]
async fn sources_of_many_keys_are_read_within_the_budget_of_reads() {
    let mut tenants = Tenants::new("ht-keys").await;
    tenants.start(&[]).await;

    let data: std::collections::BTreeMap<String, String> = (0..KEYS)
        .map(|i| (format!("k{i}"), String::new()))
        .collect();
    let every_key: Vec<&str> = data.keys().map(String::as_str).collect();
    // One at a time: objects of this size, a few at once, outlast the API
    // server's timeouts on a busy two-core machine, whatever the controller.
    for (i, (keys, _)) in SOURCES.iter().enumerate() {
        let annotations: Vec<(&str, &str)> = keys
            .iter()
            .map(|keys| (MIRROR_KEYS_ANNOTATION, *keys))
            .collect();
        let mut source = source_with(&format!("keys{i}"), &[], &annotations);
        source.data = Some(data.clone());
        tenants.hostile.configmaps().create(&source).await;
    }

    for (i, (_, held)) in SOURCES.iter().enumerate() {
        let name = format!("keys{i}");
        match held {
            Some([]) => {
                drop(holding(&tenants.hostile, &format!("{name}-synced"), &every_key).await)
            }
            Some(keys) => drop(holding(&tenants.hostile, &format!("{name}-synced"), keys).await),
            None => drop(warning(&tenants.hostile, &name, INVALID_MIRROR_KEYS).await),
        }
    }
    let peak = tenants.peak_mib();
    eprintln!("eight sources of {KEYS} keys: the controller peaked at {peak} MiB");
    assert!(
        peak < PEAK_BOUND_MIB,
        "eight sources of {KEYS} keys peaked at {peak} MiB, over {PEAK_BOUND_MIB} MiB"
    );
    tenants.other_heals().await;
    tenants.still_leads().await;
}

/// Namespaces the wide source is mirrored into: as many as one reconcile
/// writes at once.
const NAMESPACES: usize = 16;

#[tokio::test]
async fn a_source_of_many_keys_mirrored_wide_is_written_within_the_budget_of_copies() {
    let mut tenants = Tenants::new("ht-wide-keys").await;
    tenants.consenting_namespaces(NAMESPACES).await;
    tenants.start(&[]).await;

    let targets = format!("{}-t*", tenants.hostile.namespace);
    let mut source = source_with("wide", &[], &[to(&targets)]);
    source.data = Some(
        (0..KEYS)
            .map(|i| (format!("k{i}"), String::new()))
            .collect(),
    );
    tenants.hostile.configmaps().create(&source).await;

    tenants.wait_for_mirrors(NAMESPACES).await;
    let peak = tenants.peak_mib();
    eprintln!(
        "one source of {KEYS} keys into {NAMESPACES} namespaces: the controller peaked at {peak} MiB"
    );
    assert!(
        peak < PEAK_BOUND_MIB,
        "{NAMESPACES} mirrors of {KEYS} keys peaked at {peak} MiB, over {PEAK_BOUND_MIB} MiB"
    );
    tenants.other_heals().await;
    tenants.still_leads().await;
}
