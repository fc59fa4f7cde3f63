//! The Warnings explain shows, and the copies they say are contested.

use super::*;

/// A Warning Event, as explain shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// What it is about: `namespace/name`, or a Namespace's name.
    pub regarding: String,
    pub reason: String,
    pub message: String,
    pub count: i32,
    pub last_seen: Option<Timestamp>,
}

/// How long after its last Warning a copy still counts as contested.
pub const CONTESTED_RECENTLY: SignedDuration = SignedDuration::from_mins(10);

/// The copies (`namespace/name`) a `CopyContested` Warning seen within
/// [`CONTESTED_RECENTLY`] of `now` names.
pub fn contested_copies(warnings: &[Warning], now: Timestamp) -> BTreeSet<String> {
    warnings
        .iter()
        .filter(|w| w.reason == warning::COPY_CONTESTED)
        .filter(|w| {
            w.last_seen
                .is_some_and(|seen| now.duration_since(seen) <= CONTESTED_RECENTLY)
        })
        .filter_map(|w| {
            w.message
                .split_once(" was rewritten")
                .map(|(copy, _)| copy.to_owned())
        })
        .collect()
}
