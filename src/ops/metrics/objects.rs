//! The objects the controller holds: the managed sources in its cache, the
//! objects failing to reconcile, and what each resync found.

use prometheus_client::{
    encoding::{EncodeLabelSet, EncodeLabelValue},
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};

use super::reconciles::Loop;
use super::series::register_all;

/// What a resync did with one cached object.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
enum Verdict {
    queued,
    in_sync,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResyncLabels {
    r#loop: Loop,
    result: Verdict,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: String,
}

#[derive(Default)]
pub(super) struct Objects {
    managed_sources: Family<KindLabel, Gauge>,
    failing: Gauge,
    resynced: Family<ResyncLabels, Counter>,
}

impl Objects {
    pub(super) fn register(&self, root: &mut Registry) {
        register_all(
            root,
            [
                (
                    "configmap_mirror_managed_sources",
                    "Managed sources in the cache, by kind",
                    Box::new(self.managed_sources.clone()),
                ),
                (
                    "configmap_mirror_failing_objects",
                    "Objects whose last reconcile failed, for which retry state is kept",
                    Box::new(self.failing.clone()),
                ),
                (
                    "configmap_mirror_resync_objects",
                    "Cached objects compared after a (re)list or a change of leader, by whether their reconcile was queued",
                    Box::new(self.resynced.clone()),
                ),
            ],
        );
    }

    /// The gauge the retry bookkeeping keeps at its size.
    pub(super) fn failing(&self) -> Gauge {
        self.failing.clone()
    }

    pub(super) fn set_managed_sources(&self, kind: &str, count: usize) {
        self.managed_sources
            .get_or_create(&KindLabel { kind: kind.into() })
            .set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    pub(super) fn resynced(&self, which: Loop, checked: usize, queued: usize) {
        let count = |result, n: usize| {
            self.resynced
                .get_or_create(&ResyncLabels {
                    r#loop: which,
                    result,
                })
                .inc_by(u64::try_from(n).unwrap_or(u64::MAX));
        };
        count(Verdict::queued, queued);
        count(Verdict::in_sync, checked.saturating_sub(queued));
    }
}
