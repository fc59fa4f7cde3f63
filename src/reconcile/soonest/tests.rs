use super::*;
use crate::reconcile::error::Retry;

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
