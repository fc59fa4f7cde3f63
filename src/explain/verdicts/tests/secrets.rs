//! Secrets: keyed checksums not claimed checked, and no value in a row.

use super::*;

#[test]
fn a_secret_copy_s_keyed_checksum_is_not_claimed_checked() {
    let rules = rules();
    let source = secret("db", &[("password", "hunter2")]);
    let in_secrets = namespace("in", &[("workshop.io/accept-secret-mirrors", "true")], None);
    // Written by the install under its key, which explain does not hold.
    let install_key = key();
    let explain_key = Secret::comparison_key();
    let companion = companion_of(&source, &install_key);
    let mirror = mirror_in(&source, "in", &install_key);
    let rows = explain_source(
        &scene(
            source.clone(),
            vec![in_secrets.clone()],
            Some(companion.clone()),
            vec![("in", Some(mirror))],
        ),
        &rules,
        &explain_key,
    );
    assert_eq!(
        verdict(&rows, What::Companion, "ns"),
        Verdict::InSyncUnverified
    );
    assert_eq!(
        verdict(&rows, What::Mirror, "in"),
        Verdict::InSyncUnverified
    );
    assert!(
        rows[1].detail.contains("unknown (keyed)"),
        "{}",
        rows[1].detail
    );

    let mut changed = companion.clone();
    changed.data = secret("db", &[("password", "other")]).data;
    let rows = explain_source(
        &scene(source.clone(), vec![], Some(changed), vec![]),
        &rules,
        &explain_key,
    );
    assert_eq!(verdict(&rows, What::Companion, "ns"), Verdict::Differs);

    let mut relabeled = companion;
    relabeled.metadata.labels = None;
    let rows = explain_source(
        &scene(source, vec![], Some(relabeled), vec![]),
        &rules,
        &explain_key,
    );
    assert_eq!(verdict(&rows, What::Companion, "ns"), Verdict::Drifted);
}

#[test]
fn no_row_about_a_secret_holds_its_value() {
    let rules = rules();
    let source = secret("db", &[("password", "hunter2")]);
    let mut drifted = companion_of(&source, &key());
    drifted.data = secret("db", &[("password", "swordfish")]).data;
    let mut scene = scene(source.clone(), vec![], Some(drifted), vec![]);
    scene.namespaces.list_error = Some("forbidden".into());
    let rows = explain_source(&scene, &rules, &Secret::comparison_key());
    let text = format!("{rows:?}");
    for value in ["hunter2", "swordfish", "aHVudGVyMg", "c3dvcmRmaXNo"] {
        assert!(!text.contains(value), "a row holds a Secret's value");
    }
}
