use super::*;

#[test]
fn a_too_long_name_waits_for_the_source_to_change() {
    let err = Error::NameTooLong {
        name: "n".into(),
        len: 254,
    };
    assert_eq!(err.retry(), Retry::OnChange);
}
