//! A ClusterMirror of another install's class (`spec.className`, against
//! the install's `--cluster-mirror-class`): this install writes nothing
//! for it, so nothing of it is compared.

use super::*;

/// The answer for a ClusterMirror another install serves: nothing of it
/// is this install's to write, so nothing is compared.
pub(super) fn other_class<K: Explained>(
    scene: &ClusterMirrorScene<K>,
    rules: &Rules,
) -> ClusterMirrorAnswer {
    let detail = format!(
        "its spec.className names {}, and this install (--cluster-mirror-class) serves {}: \
         another install serves it; this one writes nothing for it, and leaves its copies alone",
        class_words(&scene.class_name),
        class_words(&rules.cluster_mirror_class)
    );
    ClusterMirrorAnswer {
        own: own_row::<K>(
            scene,
            scene.request.as_ref().ok(),
            Verdict::OtherClass,
            detail,
        ),
        namespaces: Vec::new(),
        status: None,
    }
}

/// A class as the rows say it: empty is the class of the installs
/// without one.
pub fn class_words(class: &str) -> String {
    match class {
        "" => "no class".into(),
        class => format!("class {class:?}"),
    }
}
