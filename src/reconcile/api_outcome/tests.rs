use super::*;
use crate::reconcile::error::Retry;
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
