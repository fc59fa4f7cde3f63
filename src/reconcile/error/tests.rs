use super::*;
use crate::test_fixtures::mk_api_error;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

fn classified(err: kube::Error) -> Option<&'static str> {
    match classify::<ConfigMap>(err) {
        ApiOutcome::NamespaceTerminating => None,
        ApiOutcome::Failed(e) => Some(e.metric_label()),
    }
}

#[test]
fn conflicts_and_missing_objects_mean_the_cache_was_stale() {
    assert_eq!(
        classified(mk_api_error(409, "Conflict", "x")),
        Some("stale_cache")
    );
    assert_eq!(
        classified(mk_api_error(409, "AlreadyExists", "x")),
        Some("stale_cache")
    );
    assert_eq!(
        classified(mk_api_error(404, "NotFound", "x")),
        Some("stale_cache")
    );
}

#[test]
fn refusals_of_the_object_itself_are_terminal() {
    let invalid = mk_api_error(422, "Invalid", "too long");
    assert_eq!(classified(invalid), Some("rejected"));
    let too_large = mk_api_error(413, "RequestEntityTooLarge", "too large");
    assert_eq!(classified(too_large), Some("rejected"));
    assert!(Error::Rejected(String::new()).is_terminal());
    assert!(Error::Forbidden(String::new()).is_terminal());
}

#[test]
fn server_errors_are_retried_soon() {
    let err = mk_api_error(500, "InternalError", "etcd");
    match classify::<ConfigMap>(err) {
        ApiOutcome::Failed(e) => assert_eq!(e.retry(), Retry::Soon),
        ApiOutcome::NamespaceTerminating => panic!("a 500 is not a terminating namespace"),
    }
}

#[test]
fn a_terminating_namespace_is_recognised() {
    let err = mk_api_error(
        403,
        "Forbidden",
        "configmaps \"a\" is forbidden: unable to create new content in namespace x because it is being terminated",
    );
    assert!(matches!(
        classify::<Secret>(err),
        ApiOutcome::NamespaceTerminating
    ));
}

#[test]
fn the_soonest_retry_stands_for_all_parts() {
    let too_long = || Error::NameTooLong {
        name: "n".into(),
        len: 254,
    };
    let transient = || Error::Stale("conflict".into());
    let outcome = soonest([Err(too_long()), Ok(()), Err(transient())]);
    assert_eq!(outcome.unwrap_err().retry(), Retry::Soon);
    let outcome = soonest([Err(too_long()), Err(Error::Forbidden("no".into()))]);
    assert_eq!(outcome.unwrap_err().retry(), Retry::Slowly);
    assert!(soonest([Ok(()), Ok(())]).is_ok());
}

#[test]
fn every_condition_a_person_must_hear_of_is_kept() {
    let too_long = Error::NameTooLong {
        name: "n".into(),
        len: 254,
    };
    let outcome = soonest([Err(Error::Rejected("no".into())), Err(too_long)]).unwrap_err();
    let labels: Vec<_> = outcome.parts().iter().map(Error::metric_label).collect();
    assert_eq!(labels, ["rejected", "name_too_long"]);
    assert_eq!(outcome.retry(), Retry::Slowly);
    // Nested outcomes are flattened.
    let nested = soonest([Err(outcome), Err(Error::CopyKeyRefused("k".into()))]).unwrap_err();
    assert_eq!(nested.parts().len(), 3);
    assert_eq!(nested.event_reason(), None);
}

#[test]
fn a_too_long_name_waits_for_the_source_to_change() {
    let err = Error::NameTooLong {
        name: "n".into(),
        len: 254,
    };
    assert_eq!(err.retry(), Retry::OnChange);
}
