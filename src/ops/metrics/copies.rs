//! The copies (companions and mirrors): the writes made to them, and the
//! restores held back because someone else keeps undoing them.

use prometheus_client::{
    encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder},
    metrics::{counter::Counter, family::Family},
    registry::Registry,
};

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
}

impl Copies {
    pub(super) fn new() -> Self {
        Copies {
            writes: Family::default(),
            contested_restores: Counter::default(),
        }
    }

    pub(super) fn register(&self, root: &mut Registry) {
        root.register(
            // Named before there were mirrors; it counts theirs too, and
            // keeps its name for the dashboards and alerts that use it.
            "configmap_mirror_companion_writes",
            "Companion writes by operation",
            self.writes.clone(),
        );
        root.register(
            "configmap_mirror_contested_restores",
            "Restores of a copy held back because someone else keeps undoing it (Warning CopyContested)",
            self.contested_restores.clone(),
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
}
