//! The ClusterMirrors: each one's namespaces by state, and whether their
//! CRD is there. A ClusterMirror is an admin's object, few per cluster, so
//! its name is a label; the namespaces are never one.

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{family::Family, gauge::Gauge},
    registry::Registry,
};

use super::series::register_all;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TargetLabels {
    clustermirror: String,
    state: &'static str,
}

/// The states a ClusterMirror's namespaces are counted in.
const STATES: [&str; 3] = ["selected", "synced", "failed"];

#[derive(Default)]
pub(super) struct ClusterMirrors {
    targets: Family<TargetLabels, Gauge>,
    crd_present: Gauge,
}

impl ClusterMirrors {
    pub(super) fn register(&self, root: &mut Registry) {
        register_all(
            root,
            [
                (
                    "configmap_mirror_clustermirror_targets",
                    "Namespaces each ClusterMirror selects, holds an in-sync copy in, and failed in",
                    Box::new(self.targets.clone()),
                ),
                (
                    "configmap_mirror_clustermirror_crd_present",
                    "1 while the ClusterMirror CRD is installed and not being deleted; at 0, no ClusterMirror copy is removed",
                    Box::new(self.crd_present.clone()),
                ),
            ],
        );
    }

    pub(super) fn set_targets(&self, name: &str, counts: [usize; 3]) {
        for (state, count) in STATES.into_iter().zip(counts) {
            let labels = TargetLabels {
                clustermirror: name.to_owned(),
                state,
            };
            self.targets
                .get_or_create(&labels)
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
    }

    pub(super) fn forget(&self, name: &str) {
        for state in STATES {
            self.targets.remove(&TargetLabels {
                clustermirror: name.to_owned(),
                state,
            });
        }
    }

    pub(super) fn set_crd_present(&self, present: bool) {
        self.crd_present.set(i64::from(present));
    }
}
