//! Who wrote a ClusterMirror's status, as its `managedFields` say: another
//! install of the same class writing it is a configuration error a person
//! is told of. Pure.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::contract::install::is_install_field_manager;

/// The field managers of other installs of this controller that wrote the
/// status in `meta` after this one (`own`) last did, or ever when it never
/// did, as its `managedFields` say: the entries of the status subresource
/// and their times. An entry outlives its writer's last write while it
/// shares a field with a later writer (the same value set by both), so only
/// its time says whether it is newer. Times are whole seconds: when the
/// stored status is not the one this install last wrote
/// (`stored_is_not_own_write`), another install's entry of the same second
/// as this one's is named too, since the status it stored is not this
/// install's; two installs writing in one second are then not missed.
pub fn other_status_writers(
    meta: &ObjectMeta,
    own: &str,
    stored_is_not_own_write: bool,
) -> Vec<String> {
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
            (Some(own_time), Some(time)) => own_time
                .is_none_or(|own| time.0 > own || (stored_is_not_own_write && time.0 == own)),
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
            other_status_writers(&fought, own, false),
            ["configmap-mirror/b/lease"]
        );
        // Handed over: the install before keeps the fields it shares, but
        // wrote before this one.
        let handed = meta(vec![
            entry("configmap-mirror/b/lease", Some("status"), 3),
            entry(own, Some("status"), 5),
        ]);
        assert!(other_status_writers(&handed, own, false).is_empty());
        assert!(
            other_status_writers(&handed, own, true).is_empty(),
            "written before this install's write, whatever the status"
        );
        let never = meta(vec![entry("configmap-mirror/b/lease", Some("status"), 3)]);
        assert_eq!(
            other_status_writers(&never, own, false),
            ["configmap-mirror/b/lease"]
        );
        assert!(other_status_writers(&ObjectMeta::default(), own, true).is_empty());
    }

    #[test]
    fn another_install_writing_in_the_same_second_is_named_when_the_stored_status_is_not_ours() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
        let entry = |manager: &str| ManagedFieldsEntry {
            manager: Some(manager.into()),
            subresource: Some("status".into()),
            time: Some(Time(Timestamp::from_second(5).unwrap())),
            ..ManagedFieldsEntry::default()
        };
        let own = "configmap-mirror/a/lease";
        let other = "configmap-mirror/b/lease";
        let meta = ObjectMeta {
            managed_fields: Some(vec![entry(own), entry(other)]),
            ..ObjectMeta::default()
        };
        assert_eq!(other_status_writers(&meta, own, true), [other]);
        assert!(
            other_status_writers(&meta, own, false).is_empty(),
            "the stored status is this install's last write: the other wrote first"
        );
    }
}
