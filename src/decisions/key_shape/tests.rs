use super::*;

/// A content's keys as (field, name), values being the names upper-cased.
fn keys<'a>(entries: &[(Field, &'a str)]) -> Vec<SourceKey<'a, String>> {
    let keys = entries.iter().map(|&(field, key)| SourceKey {
        field,
        key,
        value: key.to_uppercase(),
    });
    keys.collect()
}

fn text(names: &[&'static str]) -> Vec<SourceKey<'static, String>> {
    keys(&names.iter().map(|n| (Field::Data, *n)).collect::<Vec<_>>())
}

/// What the copy holds: (name, value), sorted by name.
fn held(shaped: &Shaped<String>) -> Vec<(&str, &str)> {
    let copied = shaped.copied.iter();
    copied
        .map(|k| (k.name.as_str(), k.value.as_str()))
        .collect()
}

fn parse(text: &str) -> KeyShape {
    KeyShape::parse_annotation(text).unwrap_or_else(|why| panic!("{text:?}: {why}"))
}

#[test]
fn a_list_of_keys_copies_those_only() {
    let shaped =
        parse("ca.crt, tls.crt").shape_naming_left_out(text(&["ca.crt", "tls.crt", "tls.key"]));
    assert_eq!(
        held(&shaped),
        [("ca.crt", "CA.CRT"), ("tls.crt", "TLS.CRT")]
    );
    assert_eq!(shaped.left_out, [("tls.key".to_owned(), LeftOut::NotNamed)]);
    assert!(shaped.missing.is_empty());
    assert!(!shaped.holds_every_key_as_is());
}

#[test]
fn globs_include_and_exclusions_apply_after() {
    let shaped = parse("tls.*,ca.*,!*.key")
        .shape_naming_left_out(text(&["ca.crt", "ca.key", "tls.crt", "x"]));
    assert_eq!(
        held(&shaped),
        [("ca.crt", "CA.CRT"), ("tls.crt", "TLS.CRT")]
    );
    assert_eq!(
        shaped.left_out,
        [
            ("ca.key".to_owned(), LeftOut::Excluded("*.key".into())),
            ("x".to_owned(), LeftOut::NotNamed)
        ]
    );
}

#[test]
fn exclusions_alone_copy_every_other_key() {
    let shaped = parse("!tls.key").shape(text(&["ca.crt", "tls.crt", "tls.key"]));
    assert_eq!(shaped.names().collect::<Vec<_>>(), ["ca.crt", "tls.crt"]);
}

#[test]
fn a_rename_copies_an_exact_key_under_its_new_name_and_keeps_its_field() {
    let source = keys(&[(Field::BinaryData, "logo"), (Field::Data, "ca.crt")]);
    let shaped = parse("ca.crt=root.pem,logo").shape(source);
    assert_eq!(held(&shaped), [("logo", "LOGO"), ("root.pem", "CA.CRT")]);
    let renamed = &shaped.copied[1];
    assert_eq!(renamed.renamed_from.as_deref(), Some("ca.crt"));
    assert_eq!(renamed.field, Field::Data);
    assert_eq!(shaped.copied[0].field, Field::BinaryData);
}

#[test]
fn an_exact_key_the_source_lacks_is_missing_and_a_glob_matching_nothing_is_not() {
    let shaped = parse("ca.crt,bundle.pem=trust.pem,extra-*").shape(text(&["ca.crt"]));
    assert_eq!(shaped.missing, ["bundle.pem"]);
    assert_eq!(shaped.names().collect::<Vec<_>>(), ["ca.crt"]);
    let excluded = parse("ca.crt,gone,!gone").shape(text(&["ca.crt"]));
    assert!(
        excluded.missing.is_empty(),
        "an excluded key is not asked for"
    );
}

#[test]
fn a_rename_s_name_is_its_own_and_a_glob_does_not_copy_over_it() {
    let shaped = parse("*,a=b").shape_naming_left_out(text(&["a", "b", "c"]));
    assert_eq!(held(&shaped), [("b", "A"), ("c", "C")]);
    assert_eq!(
        shaped.left_out,
        [("b".to_owned(), LeftOut::NameTaken { by: "a".into() })]
    );
    let twice = parse("a,a=b").shape(text(&["a"]));
    assert_eq!(held(&twice), [("a", "A"), ("b", "A")]);
}

#[test]
fn every_key_is_the_source_s_content_as_it_is() {
    for shape in [KeyShape::EVERY_KEY, parse("*"), parse("a,*")] {
        let shaped = shape.shape(text(&["a", "b"]));
        assert!(shaped.holds_every_key_as_is(), "{shape:?}");
    }
    assert!(KeyShape::EVERY_KEY.is_every_key());
    assert!(!parse("*").is_every_key(), "a shape, though it copies all");
}

#[test]
fn only_exact_keys_may_publish_a_secret_s_keys() {
    assert!(parse("ca.crt,b=c").names_exact_keys_only());
    assert!(!parse("ca.*").names_exact_keys_only());
    assert!(!parse("!tls.key").names_exact_keys_only(), "every key");
    assert!(!KeyShape::EVERY_KEY.names_exact_keys_only());
}

#[test]
fn each_malformed_annotation_is_refused_naming_the_entry_and_why() {
    let cases = [
        ("", "is empty"),
        ("  ", "is empty"),
        ("a,,b", "an empty entry"),
        ("a,", "an empty entry"),
        ("a,b c", "' ' is not allowed"),
        ("a/b", "'/' is not allowed"),
        ("ca.crt=ca crt", "new name"),
        (".", "'.' and '..' are not keys"),
        ("a=..", "'.' and '..' are not keys"),
        ("tls.*=tls", "a glob cannot be renamed"),
        ("!a=b", "an exclusion cannot rename"),
        ("a=c,b=c", "two entries copy into the key \"c\""),
        ("a,b=a", "two entries copy into the key \"a\""),
        ("a,a", "two entries copy into the key \"a\""),
        ("!", "empty"),
        ("a=", "empty"),
        ("a=b=c", "'=' is not allowed"),
    ];
    for (text, why) in cases {
        let error = KeyShape::parse_annotation(text).unwrap_err();
        assert!(
            error.starts_with("workshop.io/mirror-keys") && error.contains(why),
            "{text:?}: {error}"
        );
    }
    let long = "k".repeat(MAX_KEY_LEN + 1);
    let error = KeyShape::parse_annotation(&long).unwrap_err();
    assert!(error.contains("longer than 253"), "{error}");
    let many = vec!["k"; MAX_KEY_ENTRIES + 1].join(",");
    let error = KeyShape::parse_annotation(&many).unwrap_err();
    assert!(error.contains("over the limit"), "{error}");
}

#[test]
fn an_entry_s_error_names_it() {
    let error = KeyShape::parse_annotation("ok, bad key").unwrap_err();
    assert!(error.contains("\"bad key\""), "{error}");
}

#[test]
fn keys_may_hold_every_character_the_api_server_allows() {
    let shape = parse(" .dockerconfigjson , a_B-9.x=Y_z.-1 ,!..x");
    let shaped = shape.shape(text(&[".dockerconfigjson", "a_B-9.x", "..x"]));
    assert_eq!(
        shaped.names().collect::<Vec<_>>(),
        [".dockerconfigjson", "Y_z.-1"]
    );
}
