//! A copy request: one value for every way a copy of a source is asked
//! for, whoever asks. A labelled source asks for its companion and for its
//! mirrors, a ClusterMirror for its copies; each says who asks, which keys
//! the copy holds and in which form (so of which kind it is), what it is
//! named and what it carries. `desired_copy` turns a request into the copy
//! in one namespace, the same way for every asker.
//!
//! What differs between askers is only where each answer comes from: the
//! source's own annotations, read by their parsers (a source's own
//! copies, once per reconcile), or given, read from a spec once (a
//! ClusterMirror's). A new way to ask is a new [`Asker`], the answers it
//! gives, and the mark its copies bear; the rest of the decision that
//! builds the copy does not change.
//!
//! Pure.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{
    api::SourceKind,
    contract::{cluster_mirror_of, mirror_of, namespaced_mirror_of},
    decisions::cluster_mirror::marks::DeletionMark,
    decisions::key_shape::{KeyShape, checksum::CopyForm},
};

/// Who asks for a copy. A source's own copies name it (a companion by its
/// owner reference, a mirror by `mirror-of`, as [`NameAsked`] decides); a
/// ClusterMirror's copy also bears its label, so that it is never taken
/// for a source's own mirror.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asker<'a> {
    /// A labelled source, for its companion: `<name><suffix>` in its own
    /// namespace, owned by it.
    Companion,
    /// A labelled source, for its mirrors in the namespaces its
    /// `workshop.io/mirror-to` asks for. A namespace cannot own objects in
    /// another, so a mirror names its source in annotations instead.
    SourceMirrors,
    /// A ClusterMirror, by name, for its copies in the namespaces it
    /// selects; with what its deletion does to them, when the CRD it was
    /// made under is known.
    ClusterMirror {
        name: &'a str,
        deletion: Option<DeletionMark<'a>>,
    },
    /// A Mirror, by namespace (its source's) and name, for its copies in
    /// the namespaces it selects that consent; its copies bear its label
    /// and their deletion mark as a ClusterMirror's do.
    Mirror {
        namespace: &'a str,
        name: &'a str,
        deletion: Option<DeletionMark<'a>>,
    },
}

impl<'a> Asker<'a> {
    /// Who asked for `copy`, as its marks say: a ClusterMirror's label, or
    /// a Mirror's (each with its deletion mark), a mirror's `mirror-of`,
    /// else a companion (its owner reference). Whether the copy is this
    /// install's at all is the verdict's to check first.
    pub fn of_marks(copy: &'a ObjectMeta) -> Asker<'a> {
        let deletion = DeletionMark::on(copy);
        if let Some(name) = cluster_mirror_of(copy) {
            return Asker::ClusterMirror { name, deletion };
        }
        if let Some((namespace, name)) = namespaced_mirror_of(copy) {
            return Asker::Mirror {
                namespace,
                name,
                deletion,
            };
        }
        match mirror_of(copy) {
            Some(_) => Asker::SourceMirrors,
            None => Asker::Companion,
        }
    }
}

/// Which keys a copy holds, and in which form.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ShapeAsked<'a> {
    /// As the source's `workshop.io/mirror-keys` says (absent: every key,
    /// as it is), in the source's own form.
    Annotated,
    /// As a spec gives it.
    Given {
        shape: &'a KeyShape,
        form: CopyForm<'a>,
    },
}

/// What a copy is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameAsked<'a> {
    /// `<name><suffix>`, the install's suffix after the source's name.
    Companion,
    /// As the source's `workshop.io/mirror-name` says, else the source's
    /// own name.
    Annotated,
    /// As a spec gives it.
    Given(&'a str),
}

/// Which labels and annotations a copy carries besides its marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CarriedAsked<'a> {
    /// Those of the source its `workshop.io/copy-labels` and
    /// `copy-annotations` list.
    Listed,
    /// These, as a spec gives them (never what the source's lists select).
    Given {
        labels: &'a BTreeMap<String, String>,
        annotations: &'a BTreeMap<String, String>,
    },
}

/// One request for copies of a source, the same for every namespace it
/// has a copy in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CopyRequest<'a> {
    pub asker: Asker<'a>,
    pub shape: ShapeAsked<'a>,
    pub name: NameAsked<'a>,
    pub carried: CarriedAsked<'a>,
}

impl CopyRequest<'static> {
    /// A labelled source's request for its companion.
    pub const COMPANION: CopyRequest<'static> = CopyRequest {
        asker: Asker::Companion,
        shape: ShapeAsked::Annotated,
        name: NameAsked::Companion,
        carried: CarriedAsked::Listed,
    };

    /// A labelled source's request for its mirrors.
    pub const SOURCE_MIRRORS: CopyRequest<'static> = CopyRequest {
        asker: Asker::SourceMirrors,
        shape: ShapeAsked::Annotated,
        name: NameAsked::Annotated,
        carried: CarriedAsked::Listed,
    };
}

impl CopyRequest<'_> {
    /// The kind of its copies, of a source of kind `source`: a ConfigMap
    /// when a Secret's keys are published as ConfigMaps, else the
    /// source's own.
    pub fn copy_kind(&self, source: SourceKind) -> SourceKind {
        match self.shape {
            ShapeAsked::Given { form, .. } if form.as_configmap => SourceKind::ConfigMap,
            _ => source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_s_kind_is_apart_from_its_source_s() {
        let shape = KeyShape::default();
        let none = BTreeMap::new();
        let published = CopyForm {
            as_configmap: true,
            ..CopyForm::default()
        };
        let request = |form| CopyRequest {
            asker: Asker::ClusterMirror {
                name: "ca",
                deletion: None,
            },
            shape: ShapeAsked::Given {
                shape: &shape,
                form,
            },
            name: NameAsked::Given("ca"),
            carried: CarriedAsked::Given {
                labels: &none,
                annotations: &none,
            },
        };
        let published = request(published);
        assert_eq!(
            published.copy_kind(SourceKind::Secret),
            SourceKind::ConfigMap
        );
        for own in [CopyRequest::COMPANION, CopyRequest::SOURCE_MIRRORS] {
            assert_eq!(own.copy_kind(SourceKind::Secret), SourceKind::Secret);
        }
        let same = request(CopyForm::default());
        assert_eq!(same.copy_kind(SourceKind::Secret), SourceKind::Secret);
        assert_eq!(same.copy_kind(SourceKind::ConfigMap), SourceKind::ConfigMap);
    }
}
