//! The ClusterMirrors and the Mirrors: their namespaces by state, and
//! whether each one's CRD is there. A ClusterMirror is an admin's object,
//! few per cluster, so its name is a label; a Mirror is a tenant's, as
//! many as tenants make, so the Mirrors are counted together, with no
//! name or namespace label. The target namespaces are never a label.

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{family::Family, gauge::Gauge},
    registry::Registry,
};

use std::{
    collections::HashMap,
    sync::{Mutex, PoisonError},
};

use super::series::register_all;
use crate::decisions::request_key::{RequestKey, RequestKind};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TargetLabels {
    clustermirror: String,
    state: &'static str,
}

/// The states a ClusterMirror's namespaces are counted in.
const STATES: [&str; 3] = ["selected", "synced", "failed"];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabel {
    state: &'static str,
}

#[derive(Default)]
pub(super) struct ClusterMirrors {
    targets: Family<TargetLabels, Gauge>,
    crd_present: Gauge,
    /// The Mirrors' namespaces by state, summed over every Mirror.
    mirror_targets: Family<StateLabel, Gauge>,
    /// Each Mirror's last counts, so that the sums move by its change.
    mirror_counts: Mutex<HashMap<RequestKey, [usize; 3]>>,
    mirror_crd_present: Gauge,
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
                (
                    "configmap_mirror_mirror_targets",
                    "Namespaces the Mirrors select, hold an in-sync copy in, and failed in, summed over every Mirror",
                    Box::new(self.mirror_targets.clone()),
                ),
                (
                    "configmap_mirror_mirror_crd_present",
                    "1 while the Mirror CRD is installed and not being deleted; at 0, no Mirror copy is removed",
                    Box::new(self.mirror_crd_present.clone()),
                ),
            ],
        );
    }

    pub(super) fn set_targets(&self, key: &RequestKey, counts: [usize; 3]) {
        if key.is_mirror() {
            self.move_mirror_sums(key, Some(counts));
            return;
        }
        for (state, count) in STATES.into_iter().zip(counts) {
            let labels = TargetLabels {
                clustermirror: key.name.clone(),
                state,
            };
            self.targets
                .get_or_create(&labels)
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
    }

    pub(super) fn forget(&self, key: &RequestKey) {
        if key.is_mirror() {
            self.move_mirror_sums(key, None);
            return;
        }
        for state in STATES {
            self.targets.remove(&TargetLabels {
                clustermirror: key.name.clone(),
                state,
            });
        }
    }

    /// Moves the Mirrors' sums by `key`'s change to `counts` (None: gone).
    fn move_mirror_sums(&self, key: &RequestKey, counts: Option<[usize; 3]>) {
        let mut all = self
            .mirror_counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let before = match counts {
            Some(counts) => all.insert(key.clone(), counts),
            None => all.remove(key),
        };
        let before = before.unwrap_or_default();
        let after = counts.unwrap_or_default();
        for (index, state) in STATES.into_iter().enumerate() {
            let change = i64::try_from(after[index]).unwrap_or(i64::MAX)
                - i64::try_from(before[index]).unwrap_or(i64::MAX);
            (self.mirror_targets.get_or_create(&StateLabel { state })).inc_by(change);
        }
    }

    pub(super) fn set_crd_present(&self, kind: RequestKind, present: bool) {
        match kind {
            RequestKind::ClusterMirror => self.crd_present.set(i64::from(present)),
            RequestKind::Mirror => self.mirror_crd_present.set(i64::from(present)),
        };
    }
}
