//! Waits on objects that any test may need, whatever its world: one
//! definition each.

use std::collections::BTreeSet;

use kube::Api;
use testenv::wait_for;

use crate::{PATIENCE, TestKind};

/// The names of the keys an object holds (`data` and `binaryData`).
pub fn key_names<K: TestKind>(object: &K) -> BTreeSet<String> {
    let keys = object.content_keys().into_iter();
    keys.map(|key| key.name.to_owned()).collect()
}

/// Waits until `name` holds exactly `keys`, and returns it; on a timeout
/// the panic says `context()` too (a controller's log, say).
pub async fn holding<K: TestKind>(
    api: &Api<K>,
    name: &str,
    keys: &[&str],
    context: impl Fn() -> String,
) -> K {
    let wanted: BTreeSet<String> = keys.iter().map(|key| (*key).to_owned()).collect();
    wait_for(
        &format!("{name} to hold the keys {keys:?}"),
        PATIENCE,
        || async {
            let object = api.get_opt(name).await.ok()??;
            (key_names(&object) == wanted).then_some(object)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", context()))
}
