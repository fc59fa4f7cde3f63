//! One way to register a module's series: a table of (name, help, metric),
//! registered by [`register_all`].

use prometheus_client::{
    encoding::{EncodeMetric, MetricEncoder},
    metrics::MetricType,
    registry::{Metric, Registry},
};

/// One series as it is registered: its name, its help text and the metric.
pub(super) type Series = (&'static str, &'static str, Box<dyn Metric>);

/// Registers every series of `table` in `registry`.
pub(super) fn register_all<const N: usize>(registry: &mut Registry, table: [Series; N]) {
    for (name, help, metric) in table {
        registry.register(name, help, Registered(metric));
    }
}

/// A boxed metric, encoded as the metric itself is (an empty family
/// included: it shows no descriptor).
#[derive(Debug)]
struct Registered(Box<dyn Metric>);

impl EncodeMetric for Registered {
    fn encode(&self, encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        self.0.encode(encoder)
    }

    fn metric_type(&self) -> MetricType {
        self.0.metric_type()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
