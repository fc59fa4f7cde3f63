//! Copies of chosen keys on the label path: a source's
//! `workshop.io/mirror-keys` chooses, renames and excludes the keys its
//! companion and mirrors hold; a change of a key no copy holds writes
//! nothing; a Secret's type is kept only with its required keys; an exact
//! key the source lacks and a malformed list are warned about.
//!
//! On the cluster-wide control plane of `mirroring` (its `World`). A
//! Secret's values are never printed: the tests compare keys and
//! checksums.

use std::collections::BTreeSet;

use configmap_mirror::contract::{
    CHECKSUM_ANNOTATION, KEYED_KEYS_CHECKSUM_PREFIX, KEYS_CHECKSUM_PREFIX, MIRROR_KEYS_ANNOTATION,
    companion_name,
};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::common::{PATIENCE, TestKind};
use crate::common::{World, to};

mod explain;
mod restart;

const COPY_LABELS: &str = "workshop.io/copy-labels";

crate::for_each_kind!(
    a_source_s_companion_and_mirrors_hold_only_the_keys_its_annotation_chooses,
    a_change_of_a_key_no_copy_holds_writes_nothing,
    an_exact_key_the_source_lacks_is_warned_about_and_the_copies_are_written_without_it,
    each_malformed_list_of_keys_is_warned_about_and_leaves_the_copies_as_they_are,
);

fn names(keys: &[&str]) -> BTreeSet<String> {
    keys.iter().map(|key| (*key).to_owned()).collect()
}

/// The checksum prefix of a copy of chosen keys of kind `K`: keyed for a
/// Secret, as its whole copies' are.
fn keys_prefix<K: TestKind>() -> &'static str {
    match K::kind(&()).as_ref() {
        "Secret" => KEYED_KEYS_CHECKSUM_PREFIX,
        _ => KEYS_CHECKSUM_PREFIX,
    }
}

/// Waits until `namespace/name` carries the label `tier: value`.
async fn carrying<K: TestKind>(world: &World<K>, namespace: &str, name: &str, value: &str) -> K {
    let api: Api<K> = world.api(namespace);
    testenv::wait_for(
        &format!("{namespace}/{name} to carry tier={value}"),
        PATIENCE,
        || async {
            let copy = api.get_opt(name).await.ok()??;
            (copy.labels().get("tier").map(String::as_str) == Some(value)).then_some(copy)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()))
}

fn checksum<K: TestKind>(copy: &K) -> Option<&String> {
    copy.annotations().get(CHECKSUM_ANNOTATION)
}

/// A source in the test's namespace with `data`, mirrored to `<prefix>-*`,
/// with `workshop.io/mirror-keys: keys`.
async fn keyed_source<K: TestKind>(
    world: &World<K>,
    name: &str,
    data: &[(&str, &str)],
    keys: &str,
) {
    let targets = format!("{}-*", world.prefix);
    let annotations = [to(&targets), (MIRROR_KEYS_ANNOTATION, keys)];
    world.objects().source(name, data, &annotations).await;
}

async fn a_source_s_companion_and_mirrors_hold_only_the_keys_its_annotation_chooses<K: TestKind>() {
    let world = World::<K>::new("sk-choose").await;
    let team = world.namespace("team", true, &[]).await;
    let data = [
        ("a", "1"),
        ("b", "2"),
        ("c", "3"),
        ("keep.me", "4"),
        ("skip.me", "5"),
    ];
    keyed_source(&world, "shaped", &data, "a, b=bee, *.me, !skip.*").await;
    let held = ["a", "bee", "keep.me"];
    let companion = world.holding(&world.prefix, "shaped-synced", &held).await;
    let mirror = world.holding(&team, "shaped", &held).await;
    for copy in [&companion, &mirror] {
        let checksum = copy.annotations().get(CHECKSUM_ANNOTATION).cloned();
        assert!(
            checksum.is_some_and(|c| c.starts_with(keys_prefix::<K>())),
            "{} records a checksum of the keys it holds",
            copy.name_any()
        );
    }
    assert_eq!(
        companion.annotations().get(CHECKSUM_ANNOTATION),
        mirror.annotations().get(CHECKSUM_ANNOTATION),
        "both copies hold the same keys of one source"
    );
    // Compared, not printed: a Secret's values never appear in the output.
    let source = world.objects().get("shaped").await.expect("the source");
    for copy in [&companion, &mirror] {
        let name = copy.name_any();
        for (held, from) in [("bee", "b"), ("a", "a"), ("keep.me", "keep.me")] {
            let same = copy.value(held).is_some() && copy.value(held) == source.value(from);
            assert!(same, "{name}'s {held} holds the source's {from}");
        }
    }

    // The annotation removed: every key, as before.
    world
        .objects()
        .patch(
            "shaped",
            json!({"metadata": {"annotations": {MIRROR_KEYS_ANNOTATION: null}}}),
        )
        .await;
    world.objects().companion_in_sync("shaped").await;
    world.mirror_in_sync(&team, "shaped").await;
    world.clean_up().await;
}

async fn a_change_of_a_key_no_copy_holds_writes_nothing<K: TestKind>() {
    let world = World::<K>::new("sk-quiet").await;
    let team = world.namespace("team", true, &[]).await;
    keyed_source(&world, "quiet", &[("a", "1"), ("b", "2")], "a").await;
    let carried = json!({"labels": {"tier": "gold"}, "annotations": {COPY_LABELS: "tier"}});
    world
        .objects()
        .patch("quiet", json!({ "metadata": carried }))
        .await;
    let companion = carrying(&world, &world.prefix, "quiet-synced", "gold").await;
    let mirror = carrying(&world, &team, "quiet", "gold").await;
    assert_eq!(crate::common::key_names(&companion), names(&["a"]));

    // One change of a key no copy holds and of a label they carry: once
    // they carry the new label, the controller has compared them with the
    // source holding the new key.
    let mut change = K::data_patch(&[("b", Some("22"))]);
    change["metadata"] = json!({"labels": {"tier": "silver"}});
    world.objects().patch("quiet", change).await;
    let companion_now = carrying(&world, &world.prefix, "quiet-synced", "silver").await;
    let mirror_now = carrying(&world, &team, "quiet", "silver").await;
    for (before, now) in [(&companion, &companion_now), (&mirror, &mirror_now)] {
        let name = now.name_any();
        assert!(now.same_content(before), "{name}: its content is unchanged");
        assert_eq!(
            checksum(now),
            checksum(before),
            "{name}: so is its checksum"
        );
    }
    let (companion, mirror) = (companion_now, mirror_now);
    let objects = world.objects();

    // A change of a key they hold is written.
    world
        .objects()
        .set_data("quiet", &[("a", Some("11"))])
        .await;
    testenv::wait_for("the copies to change", PATIENCE, || async {
        let companion_then = objects.get("quiet-synced").await?;
        let mirror_then = world.api(&team).get_opt("quiet").await.ok()??;
        let moved = companion_then.resource_version() != companion.resource_version()
            && mirror_then.resource_version() != mirror.resource_version();
        moved.then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    world.clean_up().await;
}

async fn an_exact_key_the_source_lacks_is_warned_about_and_the_copies_are_written_without_it<
    K: TestKind,
>() {
    let world = World::<K>::new("sk-missing").await;
    let team = world.namespace("team", true, &[]).await;
    keyed_source(&world, "lacking", &[("a", "1")], "a, nope, other.*").await;
    world.holding(&world.prefix, "lacking-synced", &["a"]).await;
    world.holding(&team, "lacking", &["a"]).await;
    world.warned("lacking", "KeyMissing", "nope").await;
    let events = world.scene.events("lacking", "KeyMissing").await;
    assert!(
        events
            .iter()
            .all(|e| !e.note.as_deref().unwrap_or_default().contains("other")),
        "a glob that matches nothing is no error"
    );

    // The key arrives: it is copied.
    world
        .objects()
        .set_data("lacking", &[("nope", Some("2"))])
        .await;
    world.holding(&team, "lacking", &["a", "nope"]).await;
    world.clean_up().await;
}

async fn each_malformed_list_of_keys_is_warned_about_and_leaves_the_copies_as_they_are<
    K: TestKind,
>() {
    let world = World::<K>::new("sk-typo").await;
    let team = world.namespace("team", true, &[]).await;
    let malformed = [
        ("", "is empty"),
        ("a,,b", "an empty entry"),
        ("!a=b", "an exclusion cannot rename"),
        ("a*=b", "a glob cannot be renamed"),
        ("a=c,b=c", "two entries copy into the key"),
        ("a b", "is not allowed"),
        ("..", "are not keys"),
    ];
    // One source each: the Events of one object and reason are one series.
    let mut written = Vec::new();
    for at in 0..malformed.len() {
        let name = format!("typo-{at}");
        keyed_source(&world, &name, &[("a", "1"), ("b", "2")], "a").await;
        let companion = world
            .holding(&world.prefix, &format!("{name}-synced"), &["a"])
            .await;
        let mirror = world.holding(&team, &name, &["a"]).await;
        written.push((companion.resource_version(), mirror.resource_version()));
    }
    for (at, (keys, says)) in malformed.into_iter().enumerate() {
        let name = format!("typo-{at}");
        world
            .objects()
            .patch(
                &name,
                json!({"metadata": {"annotations": {MIRROR_KEYS_ANNOTATION: keys}}}),
            )
            .await;
        world.warned(&name, "InvalidMirrorKeys", says).await;
        let objects = world.objects();
        let companion_now = objects
            .get(&format!("{name}-synced"))
            .await
            .expect("companion");
        let mirror_now = world.api(&team).get(&name).await.expect("the mirror");
        assert_eq!(
            (
                companion_now.resource_version(),
                mirror_now.resource_version()
            ),
            written[at],
            "{keys:?}: the copies are left as they are"
        );
    }
    world.clean_up().await;
}

/// A TLS Secret's copies keep its type with both of its required keys;
/// a list that leaves one out is refused, and the copies are left as they
/// are.
#[tokio::test]
async fn a_tls_secret_s_copies_keep_its_type_only_with_its_required_keys() {
    let world = World::<Secret>::new("sk-type").await;
    let team = world.namespace("team", true, &[]).await;
    let data = [("tls.crt", "crt"), ("tls.key", "key"), ("ca.crt", "ca")];
    let mut tls = Secret::with_data("cert", &data, true);
    tls.type_ = Some("kubernetes.io/tls".into());
    let targets = format!("{}-*", world.prefix);
    let (to_key, to_value) = to(&targets);
    tls.metadata.annotations = Some(
        [(to_key, to_value), (MIRROR_KEYS_ANNOTATION, "tls.*")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    );
    world.objects().create(&tls).await;
    let held = ["tls.crt", "tls.key"];
    let mirror = world.holding(&team, "cert", &held).await;
    let companion = world.holding(&world.prefix, "cert-synced", &held).await;
    assert_eq!(mirror.type_.as_deref(), Some("kubernetes.io/tls"));

    world
        .objects()
        .patch(
            "cert",
            json!({"metadata": {"annotations": {MIRROR_KEYS_ANNOTATION: "ca.crt,tls.crt"}}}),
        )
        .await;
    let says = "leave out tls.key (from the source's key of that name), which a Secret of type \
                kubernetes.io/tls must hold, so the API server would refuse the copy: nothing of \
                the source is written, so its copies are left as they are; to withdraw them, \
                remove workshop.io/mirror-to";
    world.warned("cert", "KeysBreakType", says).await;
    let companion_now = world.objects().get("cert-synced").await.expect("companion");
    let mirror_now = world.api(&team).get("cert").await.expect("the mirror");
    assert_eq!(
        (
            companion_now.resource_version(),
            mirror_now.resource_version()
        ),
        (companion.resource_version(), mirror.resource_version()),
        "nothing is written"
    );
    assert_eq!(
        companion_name("cert", "-synced"),
        companion_now.name_any(),
        "the companion is still there"
    );
    world.clean_up().await;
}

/// A ConfigMap's binary keys keep their field in a copy of chosen keys.
#[tokio::test]
async fn a_configmap_s_binary_key_keeps_its_field_in_a_copy_of_chosen_keys() {
    let world = World::<ConfigMap>::new("sk-binary").await;
    let team = world.namespace("team", true, &[]).await;
    let mut source = crate::common::with_binary(
        crate::common::mk_source("bin", &[("text", "t"), ("other", "o")]),
        "blob",
        &[0xff, 0x00, 0xfe],
    );
    let targets = format!("{}-*", world.prefix);
    let (to_key, to_value) = to(&targets);
    source.metadata.annotations = Some(
        [
            (to_key, to_value),
            (MIRROR_KEYS_ANNOTATION, "text,blob=data.bin"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect(),
    );
    world.objects().create(&source).await;
    let mirror = world.holding(&team, "bin", &["data.bin", "text"]).await;
    let binary = mirror.binary_data.unwrap_or_default();
    assert_eq!(
        binary.get("data.bin").map(|b| b.0.clone()),
        Some(vec![0xff, 0x00, 0xfe])
    );
    assert_eq!(
        mirror
            .data
            .unwrap_or_default()
            .get("text")
            .map(String::as_str),
        Some("t")
    );
    world.clean_up().await;
}
