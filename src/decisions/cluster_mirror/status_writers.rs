//! Who wrote a ClusterMirror's status, as its `managedFields` say: another
//! install of the same class writing it is a configuration error a person
//! is told of. Pure.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::contract::install::is_install_field_manager;

/// The field managers of other installs of this controller that wrote the
/// status in `meta` after this one (`own`) last did, or ever when it never
/// did, as its `managedFields` say: the entries of the status subresource
/// and their times (whole seconds: a write in the same second as this
/// install's is not told apart, and not named). An entry outlives its
/// writer's last write while it shares a field with a later writer (the
/// same value set by both), so only its time says whether it is newer.
pub fn other_status_writers(meta: &ObjectMeta, own: &str) -> Vec<String> {
    let entries: Vec<_> = meta
        .managed_fields
        .iter()
        .flatten()
        .filter(|entry| entry.subresource.as_deref() == Some("status"))
        .collect();
    let own_time = entries
        .iter()
        .find(|entry| entry.manager.as_deref() == Some(own))
        .map(|entry| entry.time.as_ref().map(|t| t.0));
    let mut others: Vec<String> = entries
        .iter()
        .filter(|entry| match (own_time, entry.time.as_ref()) {
            (None, _) => true,
            (Some(own_time), Some(time)) => own_time.is_none_or(|own| time.0 > own),
            (Some(_), None) => false,
        })
        .filter_map(|entry| entry.manager.clone())
        .filter(|manager| manager != own && is_install_field_manager(manager))
        .collect();
    others.sort();
    others.dedup();
    others
}

#[cfg(test)]
mod tests {
    use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};

    use super::*;

    #[test]
    fn other_installs_writing_the_status_since_this_one_did_are_named_and_no_one_else() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
        let entry = |manager: &str, subresource: Option<&str>, second: i64| ManagedFieldsEntry {
            manager: Some(manager.into()),
            subresource: subresource.map(Into::into),
            time: Some(Time(Timestamp::from_second(second).unwrap())),
            ..ManagedFieldsEntry::default()
        };
        let meta = |entries: Vec<ManagedFieldsEntry>| ObjectMeta {
            managed_fields: Some(entries),
            ..ObjectMeta::default()
        };
        let own = "configmap-mirror/a/lease";
        let fought = meta(vec![
            entry("kubectl-client-side-apply", None, 9),
            entry(own, Some("status"), 5),
            entry("configmap-mirror/b/lease", Some("status"), 6),
            entry("configmap-mirror/c/lease", None, 7),
            entry("someone-else", Some("status"), 8),
            entry("configmap-mirror", Some("status"), 4),
        ]);
        assert_eq!(
            other_status_writers(&fought, own),
            ["configmap-mirror/b/lease"]
        );
        // Handed over: the install before keeps the fields it shares, but
        // wrote before this one.
        let handed = meta(vec![
            entry("configmap-mirror/b/lease", Some("status"), 3),
            entry(own, Some("status"), 5),
        ]);
        assert!(other_status_writers(&handed, own).is_empty());
        let never = meta(vec![entry("configmap-mirror/b/lease", Some("status"), 3)]);
        assert_eq!(
            other_status_writers(&never, own),
            ["configmap-mirror/b/lease"]
        );
        assert!(other_status_writers(&ObjectMeta::default(), own).is_empty());
    }
}
