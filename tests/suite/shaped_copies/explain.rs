//! `explain` of a source whose copies hold chosen keys: which keys they
//! hold (renamed, in which field), why the others are not there, and the
//! exact keys the source lacks. Keys only: never a value.

use super::*;
use crate::explain::{explain, never_shows_the_value, row};

crate::for_each_kind!(explain_says_which_keys_the_copies_hold_and_why_the_others_are_not_there);

async fn explain_says_which_keys_the_copies_hold_and_why_the_others_are_not_there<K: TestKind>() {
    let world = World::<K>::new("sk-explain").await;
    let team = world.namespace("team", true, &[]).await;
    let value = crate::explain::VALUE;
    let data = [("a", value), ("b", value), ("c", value), ("skip.me", value)];
    keyed_source(&world, "told", &data, "a, b=bee, *.me, !skip.*, nope").await;
    world.holding(&team, "told", &["a", "bee"]).await;
    let kind = match K::kind(&()).as_ref() {
        "Secret" => "secret",
        _ => "configmap",
    };
    let source_ref = format!("{}/told", world.prefix);
    let kubeconfig = world.scene.control_plane.kubeconfig_path();
    let run = explain(kubeconfig, &["--kind", kind, &source_ref, "-o", "json"]);
    never_shows_the_value(&run);
    let json = run.json();
    let source_row = row(&json, "source", &world.prefix);
    assert_eq!(source_row["verdict"], "managed");
    let detail = source_row["detail"].as_str().unwrap_or_default();
    for said in [
        "its copies hold a, bee (from b)",
        "c (not named)",
        "skip.me (excluded by !skip.*)",
        "not in the source: nope (Warning KeyMissing)",
    ] {
        assert!(detail.contains(said), "the source's row says {said:?}");
    }
    let mirror_row = row(&json, "mirror", &team);
    assert_eq!(mirror_row["verdict"], expected_in_sync::<K>());
    world.clean_up().await;
}

/// The verdict of a copy in sync: a Secret's keyed checksum is not checked
/// by explain, which does not read the install's key.
fn expected_in_sync<K: TestKind>() -> &'static str {
    match K::kind(&()).as_ref() {
        "Secret" => "in-sync-unverified",
        _ => "in-sync",
    }
}
