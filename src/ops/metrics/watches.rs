//! `configmap_mirror_watch_failing_seconds{watch}`: how long each watch has
//! been failing, read from [`Health`] at each scrape, so that an alert sees
//! a failure while it lasts, before (or without) /healthz failing.

use std::{sync::Arc, time::Instant};

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{MetricType, gauge::ConstGauge},
};

use crate::ops::health::Health;

#[derive(Debug)]
pub struct WatchCollector(pub Arc<Health>);

impl Collector for WatchCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut family = encoder.encode_descriptor(
            "configmap_mirror_watch_failing_seconds",
            "How long each watch has been failing: from its first error until the API server accepts a watch again or it delivers an event; 0 while it works",
            None,
            MetricType::Gauge,
        )?;
        for (watch, failing) in self.0.failing_for(Instant::now()) {
            let gauge = ConstGauge::new(failing.as_secs_f64());
            gauge.encode(family.encode_family(&[("watch", watch)])?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use prometheus_client::{encoding::text::encode, registry::Registry};

    use super::*;
    use crate::ops::health::ErrorSource;

    #[test]
    fn every_watch_has_a_series_and_a_failing_one_counts_its_seconds() {
        let health = Arc::new(Health::new(Duration::from_secs(60)));
        health.register("sources");
        health.register("companions");
        let started = Instant::now() - Duration::from_secs(90);
        health.watch_failed("companions", "403".into(), ErrorSource::Refused, started);
        let mut registry = Registry::default();
        registry.register_collector(Box::new(WatchCollector(health.clone())));
        let mut text = String::new();
        encode(&mut text, &registry).expect("encode");
        assert!(
            text.contains("# TYPE configmap_mirror_watch_failing_seconds gauge"),
            "{text}"
        );
        assert!(
            text.contains("configmap_mirror_watch_failing_seconds{watch=\"sources\"} 0"),
            "{text}"
        );
        let failing: f64 = text
            .lines()
            .find_map(|line| {
                line.strip_prefix("configmap_mirror_watch_failing_seconds{watch=\"companions\"} ")
            })
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| panic!("no companions series in {text}"));
        assert!(failing >= 90.0, "{failing}");

        health.watch_ok("companions", Instant::now());
        let mut text = String::new();
        encode(&mut text, &registry).expect("encode");
        assert!(
            text.contains("configmap_mirror_watch_failing_seconds{watch=\"companions\"} 0"),
            "{text}"
        );
    }
}
