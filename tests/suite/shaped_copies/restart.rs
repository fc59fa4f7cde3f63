//! A restart on converged companions of chosen keys: the checksums
//! compared from the caches (a source's key digests, a copy's keys hash)
//! are those written, so nothing is queued or written. (A source with
//! mirrors is always queued: its reconcile compares them one by one.)

use super::*;

const RESYNC: &str = "configmap_mirror_resync_objects_total";
const RESYNC_SYNC_IN_SYNC: &str = "loop=\"sync\",result=\"in_sync\"";

crate::for_each_kind!(a_restart_on_converged_companions_of_chosen_keys_writes_nothing);

async fn a_restart_on_converged_companions_of_chosen_keys_writes_nothing<K: TestKind>() {
    let mut world = World::<K>::new("sk-restart").await;
    let data = [("a", "1"), ("b", "2"), ("c", "3")];
    let shapes = ["a", "a=x,b", "*,!c"];
    let mut written = Vec::new();
    for (at, keys) in shapes.iter().enumerate() {
        let name = format!("restart-{at}");
        let mut source = K::with_data(&name, &data, true);
        let annotations = [(MIRROR_KEYS_ANNOTATION.to_owned(), (*keys).to_owned())];
        source.meta_mut().annotations = Some(annotations.into_iter().collect());
        world.objects().create(&source).await;
        let held: &[&str] = match at {
            0 => &["a"],
            1 => &["b", "x"],
            _ => &["a", "b"],
        };
        let companion = world
            .holding(&world.prefix, &format!("{name}-synced"), held)
            .await;
        written.push(companion.resource_version());
    }
    world.stop();
    world.start().await;
    let restarted = world.controller();
    let seen = restarted
        .metric_reaching(RESYNC, RESYNC_SYNC_IN_SYNC, shapes.len() as f64)
        .await;
    assert!(seen >= shapes.len() as f64, "every source compared in sync");
    let queued = restarted.metric(RESYNC, "result=\"queued\"").await;
    assert_eq!(queued, 0.0, "nothing queued");
    assert_eq!(restarted.writes().await, 0.0, "nothing written");
    for (at, versions) in written.iter().enumerate() {
        let name = format!("restart-{at}");
        let companion = world.objects().get(&format!("{name}-synced")).await;
        assert_eq!(
            companion.and_then(|c| c.resource_version()),
            versions.clone(),
            "{name}'s companion is as it was"
        );
    }
    world.clean_up().await;
}
