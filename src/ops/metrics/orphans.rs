//! `configmap_mirror_clustermirror_orphans{clustermirror}`: the copies kept
//! whose ClusterMirror is gone without its deletion having been seen, and
//! `configmap_mirror_mirror_orphans`, those of Mirrors, summed (a tenant's
//! Mirror names no label); counted from the caches at each scrape, so that
//! the count is never left behind by a copy that went some other way.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, PoisonError},
};

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{MetricType, gauge::ConstGauge},
};

/// The orphans counted: by ClusterMirror name, and of every Mirror.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct OrphanCounts {
    pub by_cluster_mirror: BTreeMap<String, u64>,
    pub of_mirrors: u64,
}

/// Adds one kind's orphans to the counts.
pub type CountOrphans = Box<dyn Fn(&mut OrphanCounts) + Send + Sync>;

/// The counters of every kind, added as each kind starts.
#[derive(Clone, Default)]
pub struct Orphans(Arc<Mutex<Vec<CountOrphans>>>);

impl Orphans {
    pub fn add(&self, count: CountOrphans) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(count);
    }

    fn counts(&self) -> OrphanCounts {
        let mut counts = OrphanCounts::default();
        for count in self.0.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            count(&mut counts);
        }
        counts
    }
}

impl std::fmt::Debug for Orphans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Orphans").finish_non_exhaustive()
    }
}

#[derive(Debug)]
pub(super) struct OrphanCollector(pub(super) Orphans);

impl Collector for OrphanCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut family = encoder.encode_descriptor(
            "configmap_mirror_clustermirror_orphans",
            "Copies kept as orphans, by ClusterMirror: their ClusterMirror went with its CRD (deleted or replaced), or while the controller was not running and they record no CRD; apply it again to adopt them",
            None,
            MetricType::Gauge,
        )?;
        let counts = self.0.counts();
        for (name, count) in &counts.by_cluster_mirror {
            let gauge = ConstGauge::new(i64::try_from(*count).unwrap_or(i64::MAX));
            gauge.encode(family.encode_family(&[("clustermirror", name.as_str())])?)?;
        }
        let of_mirrors = encoder.encode_descriptor(
            "configmap_mirror_mirror_orphans",
            "Copies kept as orphans of Mirrors, summed over every Mirror: their Mirror went with its CRD (deleted or replaced), or while the controller was not running and they record no CRD; apply it again to adopt them",
            None,
            MetricType::Gauge,
        )?;
        let gauge = ConstGauge::new(i64::try_from(counts.of_mirrors).unwrap_or(i64::MAX));
        gauge.encode(of_mirrors)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::{encoding::text::encode, registry::Registry};

    use super::*;

    #[test]
    fn each_kind_adds_its_orphans_by_clustermirror() {
        let orphans = Orphans::default();
        let mut registry = Registry::default();
        registry.register_collector(Box::new(OrphanCollector(orphans.clone())));
        orphans.add(Box::new(|counts| {
            *counts
                .by_cluster_mirror
                .entry("corp-ca".into())
                .or_default() += 2;
            counts.of_mirrors += 1;
        }));
        orphans.add(Box::new(|counts| {
            *counts
                .by_cluster_mirror
                .entry("corp-ca".into())
                .or_default() += 1;
            *counts.by_cluster_mirror.entry("pull".into()).or_default() += 4;
            counts.of_mirrors += 2;
        }));
        let mut text = String::new();
        encode(&mut text, &registry).expect("encode");
        assert!(
            text.contains("# TYPE configmap_mirror_clustermirror_orphans gauge"),
            "{text}"
        );
        assert!(
            text.contains("configmap_mirror_clustermirror_orphans{clustermirror=\"corp-ca\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("configmap_mirror_clustermirror_orphans{clustermirror=\"pull\"} 4"),
            "{text}"
        );
        assert!(
            text.contains("\nconfigmap_mirror_mirror_orphans 3\n"),
            "{text}"
        );
    }
}
