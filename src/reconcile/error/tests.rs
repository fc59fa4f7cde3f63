use super::*;

#[test]
fn a_too_long_name_waits_for_the_source_to_change() {
    let err = Error::NameTooLong {
        name: "n".into(),
        len: 254,
    };
    assert_eq!(err.retry(), Retry::OnChange);
}

/// One error of each variant.
fn every_variant() -> Vec<Error> {
    let s = String::new;
    let too_large = CopyTooLarge { size: 2, kind: s() };
    vec![
        Error::NameTooLong {
            name: s(),
            len: 254,
        },
        Error::NeverASource { reason: s() },
        Error::NameTaken { name: s() },
        Error::NameClaimed {
            name: s(),
            cluster_mirror: s(),
        },
        Error::MirrorNameTaken {
            names: vec![],
            claimed: vec![],
        },
        Error::MirrorNamespaceProtected { namespaces: vec![] },
        Error::ReservedName { name: s() },
        Error::Contested {
            name: s(),
            times: 3,
        },
        Error::InvalidCopyList(s()),
        Error::CopyKeyRefused(s()),
        Error::InvalidMirrorKeys(s()),
        Error::InvalidMirrorName(s()),
        Error::KeysBreakType(s()),
        Error::KeyMissing(s()),
        Error::CopyTooLarge(too_large),
        Error::InvalidTargets(s()),
        Error::Rejected(s()),
        Error::Forbidden(s()),
        Error::Stale(s()),
        Error::NamespaceTerminating,
        Error::NotLeading,
        Error::ShuttingDown,
        Error::NoDigestKey,
        Error::Transient(kube::Error::Service("x".into())),
        Error::Several(Vec::new()),
    ]
}

/// What dashboards, alerts and the backoff know each of [`every_variant`]
/// by: its metric label, Warning reason (`-` for none) and retry.
const KNOWN_AS: &str = "
name_too_long CompanionNameTooLong OnChange
never_a_source SourceNotCopyable OnChange
name_taken CompanionNameTaken Slowly
mirror_name_taken MirrorNameTaken Slowly
mirror_name_taken MirrorNameTaken Slowly
mirror_namespace_protected MirrorNamespaceProtected Slowly
reserved_name MirrorNameReserved OnChange
contested CopyContested Slowly
invalid_copy_list InvalidCopyList OnChange
copy_key_refused CopyKeyRefused OnChange
invalid_mirror_keys InvalidMirrorKeys OnChange
invalid_mirror_name InvalidMirrorName OnChange
keys_break_type KeysBreakType OnChange
key_missing KeyMissing OnChange
copy_too_large CopyTooLarge OnChange
invalid_targets InvalidMirrorTargets OnChange
rejected CompanionRejected Slowly
forbidden CompanionForbidden Slowly
stale_cache - Soon
namespace_terminating - OnChange
not_leading - OnChange
shutting_down - OnChange
no_digest_key - OnChange
transient - Soon
several_conditions - Slowly
";

#[test]
fn every_variant_keeps_its_label_reason_and_retry() {
    let known_as: Vec<&str> = KNOWN_AS.trim().lines().collect();
    let errors = every_variant();
    assert_eq!(errors.len(), known_as.len());
    for (error, known_as) in errors.iter().zip(known_as) {
        let reason = error.event_reason().unwrap_or("-");
        let is = format!("{} {reason} {:?}", error.metric_label(), error.retry());
        assert_eq!(is, known_as, "{error:?}");
    }
}
