//! Leader election: whether this replica leads (client-go's
//! `leader_election_master_status`, labeled with the Lease's `name`), and
//! whether the API server refuses its Lease requests.

use prometheus_client::{metrics::gauge::Gauge, registry::Registry};

#[derive(Default)]
pub(super) struct Leader {
    leading: Gauge,
    refused: Gauge,
}

impl Leader {
    /// Registers the status in `election`, the registry labeled with the
    /// Lease's name.
    pub(super) fn register(&self, election: &mut Registry) {
        election.register(
            "leader_election_master_status",
            "1 while this replica holds the lease",
            self.leading.clone(),
        );
    }

    /// Registers the refusal, unlabeled, in `root`.
    pub(super) fn register_refusal(&self, root: &mut Registry) {
        root.register(
            "configmap_mirror_leader_election_failing",
            "1 while the API server refuses this replica's Lease requests (see /readyz for why)",
            self.refused.clone(),
        );
    }

    pub(super) fn set_leading(&self, leading: bool) {
        self.leading.set(i64::from(leading));
    }

    pub(super) fn set_refused(&self, refused: bool) {
        self.refused.set(i64::from(refused));
    }
}
