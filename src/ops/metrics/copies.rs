//! The copies (companions and mirrors): the writes made to them, the
//! restores held back because someone else keeps undoing them, and how
//! long they take to follow a change.

use std::time::Duration;

use prometheus_client::{
    encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder},
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};

use super::series::register_all;

use crate::contract::Operation;

impl EncodeLabelValue for Operation {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        std::fmt::Write::write_str(encoder, self.as_str())
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabel {
    operation: Operation,
}

pub(super) struct Copies {
    writes: Family<OperationLabel, Counter>,
    contested_restores: Counter,
    heal_duration: Histogram,
    bytes_in_flight: Gauge,
    read_bytes_in_flight: Gauge,
}

impl Copies {
    pub(super) fn new() -> Self {
        Copies {
            writes: Family::default(),
            contested_restores: Counter::default(),
            // 1 ms to about 2 minutes, as the queue's timings.
            heal_duration: Histogram::new(exponential_buckets(0.001, 2.0, 18)),
            bytes_in_flight: Gauge::default(),
            read_bytes_in_flight: Gauge::default(),
        }
    }

    pub(super) fn register(&self, root: &mut Registry) {
        register_all(
            root,
            [
                // Named before there were mirrors; it counts theirs too, and
                // keeps its name for the dashboards and alerts that use it.
                (
                    "configmap_mirror_companion_writes",
                    "Companion writes by operation",
                    Box::new(self.writes.clone()),
                ),
                (
                    "configmap_mirror_contested_restores",
                    "Restores of a copy held back because someone else keeps undoing it (Warning CopyContested)",
                    Box::new(self.contested_restores.clone()),
                ),
                (
                    "configmap_mirror_heal_duration_seconds",
                    "Time from a wakeup reaching the sync loop or the ClusterMirror loop (a change of a source, of a copy, of a namespace or of a ClusterMirror seen by a watch, or a resync) to the end of the successful reconcile it woke: how long copies take to heal or to follow their source",
                    Box::new(self.heal_duration.clone()),
                ),
                (
                    "configmap_mirror_copy_bytes_in_flight",
                    "What the copies being written cost, in bytes (their values, and their keys at 256 bytes each beside their names), of the budget every reconcile shares",
                    Box::new(self.bytes_in_flight.clone()),
                ),
                (
                    "configmap_mirror_read_bytes_in_flight",
                    "What the sources read afresh cost decoded, in bytes (their keys', labels' and annotations' names and values, and 256 bytes for each), held until their reconcile ends, of the budget every reconcile shares",
                    Box::new(self.read_bytes_in_flight.clone()),
                ),
            ],
        );
    }

    pub(super) fn written(&self, operation: Operation) {
        self.writes
            .get_or_create(&OperationLabel { operation })
            .inc();
    }

    pub(super) fn restore_held_back(&self) {
        self.contested_restores.inc();
    }

    pub(super) fn bytes_in_flight(&self) -> Gauge {
        self.bytes_in_flight.clone()
    }

    pub(super) fn read_bytes_in_flight(&self) -> Gauge {
        self.read_bytes_in_flight.clone()
    }

    pub(super) fn healed(&self, after: Duration) {
        self.heal_duration.observe(after.as_secs_f64());
    }
}
