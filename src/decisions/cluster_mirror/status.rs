//! A ClusterMirror's status, from what its reconcile found: how many
//! namespaces it selects, how many hold an in-sync copy, which failed and
//! why, and the conditions Ready, Reconciling and Stalled (as kstatus reads
//! them, so that Argo CD and Flux need no custom health check). Pure.
//!
//! Computed the same way from the same cluster, it is the same value: a
//! condition keeps its lastTransitionTime while its status stays, so an
//! idle ClusterMirror's status never changes, and is never written.

use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
    jiff::Timestamp,
};

use crate::api::{
    self, ClusterMirrorStatus,
    cluster_mirror::{MAX_FAILURE_MESSAGE_BYTES, MAX_FAILURES_LISTED, condition, reason},
};

/// Why a ClusterMirror mirrors nothing at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocked {
    /// Its spec cannot be read.
    InvalidSpec(String),
    /// Its source's namespace is not one ClusterMirror sources may come from.
    SourceNamespaceNotAllowed(String),
    SourceNotFound,
    /// A refused Secret type, a Helm record or a reserved name.
    SourceNotCopyable(String),
    /// A Secret source while the install mirrors no Secrets.
    SecretsDisabled,
    /// The keys copied would break the source's Secret type (as it says).
    KeysBreakType(String),
}

impl Blocked {
    pub fn reason(&self) -> &'static str {
        match self {
            Blocked::InvalidSpec(_) => reason::INVALID_SPEC,
            Blocked::SourceNamespaceNotAllowed(_) => reason::SOURCE_NAMESPACE_NOT_ALLOWED,
            Blocked::SourceNotFound => reason::SOURCE_NOT_FOUND,
            Blocked::SourceNotCopyable(_) => reason::SOURCE_NOT_COPYABLE,
            Blocked::SecretsDisabled => reason::SECRETS_DISABLED,
            Blocked::KeysBreakType(_) => reason::KEYS_BREAK_TYPE,
        }
    }

    /// Whether the status still counts the namespaces the spec selects:
    /// whatever the source's state, but not for a spec refused whole.
    pub fn counts_selected(&self) -> bool {
        !matches!(self, Blocked::InvalidSpec(_))
    }

    pub fn message(&self) -> String {
        match self {
            Blocked::InvalidSpec(why) => why.clone(),
            Blocked::SourceNamespaceNotAllowed(namespace) => format!(
                "namespace {namespace} is not one ClusterMirror sources may come from \
                 (--cluster-mirror-source-namespaces); nothing is written"
            ),
            Blocked::SourceNotFound => {
                "the source does not exist; copies already written are kept".into()
            }
            Blocked::SourceNotCopyable(why) => format!("the source is never copied: {why}"),
            Blocked::SecretsDisabled => {
                "the source is a Secret and this install mirrors no Secrets (--kinds)".into()
            }
            Blocked::KeysBreakType(why) => format!("{why}; nothing is written"),
        }
    }
}

/// One selected namespace without an in-sync copy, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub namespace: String,
    /// An Event reason, such as `NameTaken`.
    pub reason: &'static str,
    pub message: String,
    /// Whether the failure is retried by itself (else it waits for a person).
    pub retried: bool,
}

/// What one reconcile found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub selected: usize,
    pub synced: usize,
    pub failures: Vec<Failure>,
}

/// The Ready condition's status and reason, for Events and metrics.
pub fn ready_reason(tally: &Tally, blocked: Option<&Blocked>, suspended: bool) -> &'static str {
    match (blocked, suspended) {
        (Some(blocked), _) => blocked.reason(),
        (None, true) => reason::SUSPENDED,
        (None, false) if tally.synced == tally.selected => reason::SYNCED,
        (None, false) => reason::PARTIALLY_SYNCED,
    }
}

/// The status subresource as it should be now. `previous` is the status
/// the ClusterMirror has (its conditions' transition times are kept while
/// their statuses stay); `now` is the transition time of those that change.
pub fn status(
    generation: Option<i64>,
    tally: &Tally,
    blocked: Option<&Blocked>,
    suspended: bool,
    previous: Option<&ClusterMirrorStatus>,
    now: Timestamp,
) -> ClusterMirrorStatus {
    let reason = ready_reason(tally, blocked, suspended);
    let failed = tally.failures.len();
    let ready_message = match (blocked, suspended) {
        (Some(blocked), _) => blocked.message(),
        (None, true) => format!(
            "suspended: nothing is written or deleted; {} of {} selected namespaces hold an in-sync copy",
            tally.synced, tally.selected
        ),
        (None, false) => format!(
            "{} of {} selected namespaces hold an in-sync copy; {failed} failed",
            tally.synced, tally.selected
        ),
    };
    let waits_for_person = blocked.is_some()
        || (!suspended && failed > 0 && tally.failures.iter().all(|f| !f.retried));
    let in_progress = !waits_for_person && !suspended && tally.synced < tally.selected;
    let condition = |kind: &str, on: bool, reason: &str, message: &str| {
        let status = if on { "True" } else { "False" };
        let since = previous_transition(previous, kind, status).unwrap_or(now);
        Condition {
            type_: kind.to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message: message.to_owned(),
            observed_generation: generation,
            last_transition_time: Time(since),
        }
    };
    let conditions = vec![
        condition(
            condition::READY,
            reason == reason::SYNCED,
            reason,
            &ready_message,
        ),
        condition(
            condition::RECONCILING,
            in_progress,
            if in_progress {
                reason::PROGRESSING
            } else {
                reason
            },
            &ready_message,
        ),
        condition(condition::STALLED, waits_for_person, reason, &ready_message),
    ];
    let mut failures = tally.failures.clone();
    failures.sort_by(|a, b| a.namespace.cmp(&b.namespace));
    let failures = failures
        .iter()
        .take(MAX_FAILURES_LISTED)
        .map(|f| api::Failure {
            namespace: f.namespace.clone(),
            reason: f.reason.to_owned(),
            message: cut(&f.message, MAX_FAILURE_MESSAGE_BYTES),
        })
        .collect();
    ClusterMirrorStatus {
        observed_generation: generation,
        selected: count(tally.selected),
        synced: count(tally.synced),
        failed: count(failed),
        failures,
        conditions,
    }
}

/// A count as the status's integer; no cluster has more namespaces.
fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// The transition time of `kind` in `previous`, if it has that status.
fn previous_transition(
    previous: Option<&ClusterMirrorStatus>,
    kind: &str,
    status: &str,
) -> Option<Timestamp> {
    previous?
        .conditions
        .iter()
        .find(|c| c.type_ == kind && c.status == status)
        .map(|c| c.last_transition_time.0)
}

/// `text` cut to at most `max` bytes, on a character boundary.
pub fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// Whether the status the ClusterMirror has is `wanted` already.
pub fn unchanged(current: Option<&ClusterMirrorStatus>, wanted: &ClusterMirrorStatus) -> bool {
    current == Some(wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(namespace: &str, retried: bool) -> Failure {
        Failure {
            namespace: namespace.into(),
            reason: "NameTaken",
            message: "x".repeat(300),
            retried,
        }
    }

    fn condition<'a>(status: &'a ClusterMirrorStatus, kind: &str) -> &'a Condition {
        status.conditions.iter().find(|c| c.type_ == kind).unwrap()
    }

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    #[test]
    fn every_namespace_in_sync_is_ready() {
        let tally = Tally {
            selected: 3,
            synced: 3,
            failures: vec![],
        };
        let status = status(Some(2), &tally, None, false, None, at(0));
        assert_eq!(condition(&status, "Ready").status, "True");
        assert_eq!(condition(&status, "Ready").reason, "Synced");
        assert_eq!(condition(&status, "Stalled").status, "False");
        assert_eq!(condition(&status, "Reconciling").status, "False");
        assert_eq!(status.observed_generation, Some(2));
    }

    #[test]
    fn failures_are_sorted_bounded_and_cut_and_all_counted() {
        let failures = (0..25)
            .rev()
            .map(|i| failure(&format!("team-{i:02}"), false))
            .collect();
        let tally = Tally {
            selected: 30,
            synced: 5,
            failures,
        };
        let status = status(None, &tally, None, false, None, at(0));
        let listed = &status.failures;
        assert_eq!(listed.len(), MAX_FAILURES_LISTED);
        assert_eq!(status.failed, 25);
        assert_eq!(listed[0].namespace, "team-00");
        assert_eq!(listed[0].message.len(), MAX_FAILURE_MESSAGE_BYTES);
        assert_eq!(condition(&status, "Ready").reason, "PartiallySynced");
        assert_eq!(
            condition(&status, "Stalled").status,
            "True",
            "names taken wait for a person"
        );
    }

    #[test]
    fn a_retried_failure_is_reconciling_not_stalled() {
        let tally = Tally {
            selected: 2,
            synced: 1,
            failures: vec![failure("a", true)],
        };
        let status = status(None, &tally, None, false, None, at(0));
        assert_eq!(condition(&status, "Reconciling").status, "True");
        assert_eq!(condition(&status, "Stalled").status, "False");
    }

    #[test]
    fn a_blocked_mirror_is_stalled_with_its_reason() {
        for blocked in [
            Blocked::SourceNotFound,
            Blocked::SecretsDisabled,
            Blocked::SourceNamespaceNotAllowed("team-a".into()),
            Blocked::SourceNotCopyable("type".into()),
        ] {
            let status = status(None, &Tally::default(), Some(&blocked), false, None, at(0));
            assert_eq!(condition(&status, "Ready").status, "False");
            assert_eq!(condition(&status, "Ready").reason, blocked.reason());
            assert_eq!(condition(&status, "Stalled").status, "True");
        }
    }

    #[test]
    fn suspended_is_neither_ready_nor_stalled() {
        let tally = Tally {
            selected: 2,
            synced: 0,
            failures: vec![],
        };
        let status = status(None, &tally, None, true, None, at(0));
        assert_eq!(condition(&status, "Ready").reason, "Suspended");
        assert_eq!(condition(&status, "Stalled").status, "False");
        assert_eq!(condition(&status, "Reconciling").status, "False");
    }

    #[test]
    fn the_same_findings_later_give_the_same_status() {
        let tally = Tally {
            selected: 1,
            synced: 1,
            failures: vec![],
        };
        let first = status(Some(1), &tally, None, false, None, at(0));
        let again = status(Some(1), &tally, None, false, Some(&first), at(1));
        assert!(unchanged(Some(&first), &again));
        let worse = Tally {
            selected: 1,
            synced: 0,
            failures: vec![failure("a", false)],
        };
        let changed = status(Some(1), &worse, None, false, Some(&first), at(2));
        assert_eq!(condition(&changed, "Ready").last_transition_time.0, at(2));
        assert_eq!(
            condition(&changed, "Reconciling").last_transition_time.0,
            at(0)
        );
    }

    #[test]
    fn a_message_is_cut_on_a_character_boundary() {
        assert_eq!(cut("ééé", 3), "é");
        assert_eq!(cut("abc", 5), "abc");
    }
}
