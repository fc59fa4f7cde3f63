//! The one verdict: each copy is judged by what asked for it, as its
//! marks say.

use super::*;
use crate::api::SourceKind;
use crate::contract::CLUSTER_MIRROR_LABEL;
use crate::decisions::copy_request::Asker;
use crate::test_fixtures::{
    mk_consent, mk_consenting_labels, mk_desired_companion, mk_desired_mirror, mk_install,
    mk_mirrored_source, mk_namespace,
};
use k8s_openapi::api::core::v1::ConfigMap;

/// Facts of a cluster that holds `source` (if managed), a consenting
/// namespace of every name, and, for a ClusterMirror, the verdict `fate`
/// is asked to give with nothing of it seen.
struct Facts<'f> {
    source: Option<&'f ConfigMap>,
    knows_cluster_mirrors: bool,
}

impl<'f> CopyFacts<ConfigMap> for Facts<'f> {
    type Source<'s>
        = &'f ConfigMap
    where
        Self: 's;

    fn managed_source(&self, _: &str, _: &str) -> Option<&'f ConfigMap> {
        self.source
    }

    fn namespace(&self, namespace: &str) -> Option<NamespaceFacts> {
        Some(mk_namespace(namespace, mk_consenting_labels()))
    }

    fn copy_at(&self, _: &str, _: &str) -> Option<ObjectMeta> {
        None
    }
}

impl ClusterMirrorFacts for Facts<'_> {
    fn cluster_mirror_fate(
        &self,
        _: &ObjectMeta,
        _: &RequestKey,
        fate: impl FnOnce(&Seen<'_>, &PruneRules<'_>) -> CopyVerdict,
    ) -> CopyVerdict {
        if !self.knows_cluster_mirrors {
            return CopyVerdict::Keep;
        }
        let install = mk_install();
        let consent = mk_consent();
        let rules = PruneRules {
            kind: SourceKind::ConfigMap,
            install: &install,
            consent: &consent,
        };
        let seen = Seen {
            listed: true,
            ..Seen::default()
        };
        fate(&seen, &rules)
    }
}

fn verdict(copy: &ConfigMap, facts: &Facts<'_>) -> CopyVerdict {
    copy_verdict::<ConfigMap>(&copy.metadata, &mk_install(), &mk_consent(), facts, facts)
}

#[test]
fn a_copy_is_judged_by_what_its_marks_say_asked_for_it() {
    let source = mk_mirrored_source("team-*");
    let companion = mk_desired_companion(&source, &()).unwrap();
    let mirror = mk_desired_mirror(&source, "team-a", &()).unwrap();
    let mut cluster_mirror_copy = mirror.clone();
    (cluster_mirror_copy
        .metadata
        .labels
        .get_or_insert_with(Default::default))
    .insert(CLUSTER_MIRROR_LABEL.into(), "ca".into());
    let asked = [&companion, &mirror, &cluster_mirror_copy].map(|c| Asker::of_marks(&c.metadata));
    assert_eq!(
        asked,
        [
            Asker::Companion,
            Asker::SourceMirrors,
            Asker::ClusterMirror {
                name: "ca",
                deletion: None
            }
        ]
    );

    let managed = Facts {
        source: Some(&source),
        knows_cluster_mirrors: true,
    };
    assert_eq!(verdict(&companion, &managed), CopyVerdict::Keep);
    assert_eq!(verdict(&mirror, &managed), CopyVerdict::Keep);
    // Its source still asks for the mirror, but the ClusterMirror its
    // label names is the one asked, and nothing of it is seen.
    assert_eq!(
        verdict(&cluster_mirror_copy, &managed),
        CopyVerdict::Orphaned
    );

    let unmanaged = Facts {
        source: None,
        knows_cluster_mirrors: false,
    };
    assert_eq!(
        verdict(&companion, &unmanaged),
        CopyVerdict::Unwanted(Unwanted::SourceNotManaged)
    );
    assert_eq!(
        verdict(&mirror, &unmanaged),
        CopyVerdict::Unwanted(Unwanted::NotWantedHere)
    );
    // Facts that know no ClusterMirror keep its copies.
    assert_eq!(verdict(&cluster_mirror_copy, &unmanaged), CopyVerdict::Keep);
    let not_read = copy_verdict::<ConfigMap>(
        &cluster_mirror_copy.metadata,
        &mk_install(),
        &mk_consent(),
        &managed,
        &ClusterMirrorsNotRead,
    );
    assert_eq!(not_read, CopyVerdict::Keep, "nor does a reader of none");
}
