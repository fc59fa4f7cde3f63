//! A ClusterMirror as a mirror request: which namespaces it selects, which
//! copy it asks for in each (what that copy holds is `desired_copy`'s to
//! decide, as for every copy), and whether a copy it wrote is still
//! wanted. Pure; the ClusterMirror reconcile reads the caches and carries
//! out what these functions decide, with the same plan and writes as a
//! source's own mirrors.
//!
//! The admin's selector is the consent: no tenant label is asked for. A
//! protected namespace (which includes every namespace ClusterMirror
//! sources may come from) is never selected, nor the source's own.

pub mod marks;
pub mod routes;
pub mod selection;
pub mod standing;
pub mod status;
pub mod status_writers;

pub use marks::{DeletionMark, LiveCrd, bound_cluster_mirror_uid, release};
pub use selection::{NamedRefusal, Origin, Selection};

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{
    api::{ClusterMirrorSpec, DeletionPolicy, SourceKind, StoredClusterMirror},
    contract::{NeverCarried, is_managed_by_us, mirror_of},
    decisions::carried::Carried,
    decisions::consent::{Consent, NamespaceFacts},
    decisions::copy_request::{Asker, CarriedAsked, CopyRequest, NameAsked, ShapeAsked},
    decisions::desired_copy::{Refusal, copy_keys, never_a_source},
    decisions::install::Install,
    decisions::key_shape::{
        KeyShape,
        checksum::CopyForm,
        spec::{copy_form, key_shape},
    },
    decisions::patterns::{Glob, parse_patterns},
    decisions::request_key::RequestKey,
    decisions::selector::Selector,
    kind::MirroredKind,
};

/// A ClusterMirror's spec, or a Mirror's, as this controller reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Who asks: a ClusterMirror, or a Mirror in `source_namespace`.
    pub origin: Origin,
    pub name: String,
    pub uid: String,
    pub generation: Option<i64>,
    pub kind: SourceKind,
    pub source_namespace: String,
    pub source_name: String,
    /// The name of every copy.
    pub target_name: String,
    selector: Selector,
    /// Names and globs; empty asks for no narrowing.
    patterns: Vec<Glob>,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    /// `spec.target.keys` and `spec.target.excludeKeys`.
    pub shape: KeyShape,
    /// `spec.target.kind` and `spec.target.type`.
    pub form: CopyForm<'static>,
    pub suspend: bool,
    /// The class of the install that serves it (`spec.className`); empty
    /// for none.
    pub class_name: String,
    /// What its deletion does to its copies.
    pub deletion_policy: DeletionPolicy,
}

impl Request {
    /// Reads a ClusterMirror, or a Mirror (its namespace tells), as
    /// stored; an error says what of its spec cannot be read or acted on
    /// (the CRD's schema and rules refuse most of it).
    pub fn of(object: &StoredClusterMirror) -> Result<Request, String> {
        let spec = object
            .spec
            .as_ref()
            .map_err(|unreadable| unreadable.why.clone())?;
        let origin = match object.metadata.namespace {
            None => Origin::ClusterMirror,
            Some(_) => Origin::Mirror {
                named: (spec.target.namespaces.iter())
                    .filter(|entry| !Glob::new(entry).has_star())
                    .cloned()
                    .collect(),
            },
        };
        Request::of_spec(&object.metadata, spec, origin)
    }

    fn of_spec(
        meta: &ObjectMeta,
        spec: &ClusterMirrorSpec,
        origin: Origin,
    ) -> Result<Request, String> {
        let selector = Selector::of_label_selector(spec.target.namespace_selector.clone())
            .map_err(|e| format!("spec.target.namespaceSelector: {e}"))?;
        let patterns = match spec.target.namespaces.is_empty() {
            true => Vec::new(),
            false => parse_patterns("spec.target.namespaces", &spec.target.namespaces.join(","))?,
        };
        let shape = key_shape(&spec.target)?;
        let form = copy_form(spec)?;
        Ok(Request {
            origin,
            shape,
            form,
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
            generation: meta.generation,
            target_name: spec.copy_name().to_owned(),
            kind: spec.source.kind,
            source_namespace: spec.source.namespace.clone(),
            source_name: spec.source.name.clone(),
            selector,
            patterns,
            labels: spec.target.labels.clone(),
            annotations: spec.target.annotations.clone(),
            suspend: spec.suspend,
            class_name: spec.class().to_owned(),
            deletion_policy: spec.deletion_policy,
        })
    }

    /// The kind of its copies: a ConfigMap for a Secret whose keys it
    /// publishes (`target.kind: ConfigMap`), else its source's kind.
    pub fn copy_kind(&self) -> SourceKind {
        self.copy_request(None).copy_kind(self.kind)
    }

    /// Whether it publishes a Secret's keys as ConfigMaps.
    pub fn publishes_secret(&self) -> bool {
        self.form.as_configmap
    }

    /// Whether the install of class `class` (`--cluster-mirror-class`)
    /// serves it: the one named, and for none (or an empty name) those
    /// without a class.
    pub fn served_by(&self, class: &str) -> bool {
        self.class_name == class
    }

    /// The request `object` makes of `install`; else why its spec is
    /// refused whole ([`Request::of`], [`Request::refused_by`]).
    pub fn accepted(object: &StoredClusterMirror, install: &Install) -> Result<Request, String> {
        let request = Request::of(object)?;
        match request.refused_by(install) {
            Some(why) => Err(why),
            None => Ok(request),
        }
    }

    /// Why `install` refuses the spec whole besides what the CRD's rules
    /// refuse, which know only the built-in never-carried keys and no
    /// install's source selector; None when it does not.
    pub fn refused_by(&self, install: &Install) -> Option<String> {
        self.sets_never_carried(&install.never_carried)
            .or_else(|| self.sets_selector_keys(&install.source_label_keys))
    }

    /// Which label keys of the install's source selector `target.labels`
    /// sets, as the refusal says it; None when none. A copy must not carry
    /// them: it would be taken for a source, and every comparison would
    /// find them to remove and put back, writing the copy in a loop.
    pub fn sets_selector_keys(&self, selector_keys: &[String]) -> Option<String> {
        let keys: Vec<&str> = self
            .labels
            .keys()
            .map(String::as_str)
            .filter(|key| selector_keys.iter().any(|k| k == key))
            .collect();
        (!keys.is_empty()).then(|| {
            format!(
                "spec.target.labels sets {}: a key of this install's source selector \
                 (--selector), which a copy never carries",
                keys.join(", ")
            )
        })
    }

    /// What `target.labels` and `target.annotations` set that `never`
    /// refuses, as the refusal says it; None when nothing.
    pub fn sets_never_carried(&self, never: &NeverCarried) -> Option<String> {
        self.carried().refused(never)
    }

    /// What its copies are asked to carry.
    fn carried(&self) -> Carried<'_> {
        Carried::Given {
            labels: &self.labels,
            annotations: &self.annotations,
        }
    }

    /// Whether the spec asks for `namespace`: its selector AND (when it
    /// lists any) one of its names or globs.
    pub fn asks_for(&self, namespace: &NamespaceFacts) -> bool {
        self.selector.matches(&namespace.labels)
            && (self.patterns.is_empty()
                || self.patterns.iter().any(|p| p.matches(&namespace.name)))
    }

    /// Whether a namespace that changed from `before` to `after` (None:
    /// absent) is this request's business: it asked for it before (and
    /// counted it, whatever it held there) or asks for it now.
    pub fn concerned_by(
        &self,
        before: Option<&NamespaceFacts>,
        after: Option<&NamespaceFacts>,
    ) -> bool {
        // A ClusterMirror selects by labels alone: a change of the grants
        // or of `accept-mirrors-from` is none of its business.
        if self.origin == Origin::ClusterMirror
            && let (Some(before), Some(after)) = (before, after)
            && before.labels == after.labels
        {
            return false;
        }
        [before, after]
            .into_iter()
            .flatten()
            .any(|namespace| self.asks_for(namespace))
    }

    /// Whether `namespace` receives a copy: asked for, not protected (see
    /// [`cluster_consent`]) and not the source's own; for a Mirror, it
    /// must consent too.
    pub fn selects(&self, namespace: &NamespaceFacts, consent: &Consent) -> bool {
        matches!(self.selection(namespace, consent), Selection::Selected(_))
    }

    /// Whether its claim on its copies' name in `namespace`, which
    /// outranks a source's own mirror there, takes effect: a claim takes
    /// effect only where the claimant writes. It selects the namespace,
    /// and its copy holds the name already (`holds`), or it writes copies
    /// now (`writing`: its reconciles are neither suspended, blocked nor
    /// failing) and is not suspended. Otherwise the name stays with its
    /// holder, whose copy stays in sync. The claim is the ClusterMirror's,
    /// not each copy's: where one of its writes keeps failing, the name is
    /// still its.
    pub fn claims(
        &self,
        namespace: &NamespaceFacts,
        consent: &Consent,
        writing: bool,
        holds: bool,
    ) -> bool {
        match self.selection(namespace, consent) {
            Selection::Selected(_) => holds || (writing && !self.suspend),
            // A Mirror's copy stays where its consent is not known yet,
            // and so does its claim; it makes no new one there.
            Selection::Undecided => holds,
            Selection::NotSelected | Selection::Refused(_) => false,
        }
    }

    /// Which ClusterMirror or Mirror it is.
    pub fn key(&self) -> RequestKey {
        match self.origin {
            Origin::ClusterMirror => RequestKey::cluster_mirror(&self.name),
            Origin::Mirror { .. } => RequestKey::mirror(&self.source_namespace, &self.name),
        }
    }

    /// The uid a copy's checksum and `mirror-of-uid` bind it to: its
    /// source's and this ClusterMirror's, so that a copy of one
    /// ClusterMirror is never taken for another's, nor for the source's
    /// own label-driven mirror.
    pub fn bound_uid(&self, source_uid: &str) -> String {
        format!("{source_uid}.{}", self.uid)
    }

    /// Why this request copies nothing, before any namespace is looked at:
    /// its source's namespace is not `allowed`, its source is missing, or
    /// it is what is never copied (what a source's own labels could not
    /// copy either, a copy, a reserved copy name). `source` is the object
    /// the request names, as read; the kind is the loop's.
    pub fn blocked<K: MirroredKind>(
        &self,
        allowed: bool,
        source: Option<&K>,
        rules: &K::SourceRules,
        reserved_names: &[String],
    ) -> Option<status::Blocked> {
        use status::Blocked;
        if !allowed {
            return Some(Blocked::SourceNamespaceNotAllowed(
                self.source_namespace.clone(),
            ));
        }
        let Some(source) = source else {
            return Some(Blocked::SourceNotFound);
        };
        let refused = never_a_source(source, rules)
            .or_else(|| is_managed_by_us(source.meta()).then(|| "it is itself a copy".into()))
            .or_else(|| {
                reserved_names
                    .contains(&self.target_name)
                    .then(|| format!("the copy's name {} is reserved", self.target_name))
            });
        refused.map(Blocked::SourceNotCopyable)
    }

    /// The exact keys of `spec.target.keys` that `source` lacks (its copies
    /// are written without them, each a `KeyMissing` failure); blocked
    /// when the keys copied would break its Secret type.
    pub fn keys_missing<K: MirroredKind>(
        &self,
        source: &K,
    ) -> Result<Vec<String>, status::Blocked> {
        match copy_keys(source, &self.shape, self.form) {
            Ok(keys) => Ok(keys.map(|keys| keys.missing).unwrap_or_default()),
            Err(Refusal::KeysBreakType(breaks)) => Err(status::Blocked::KeysBreakType(
                breaks.cluster_mirror_message(),
            )),
            Err(_) => Ok(Vec::new()),
        }
    }

    /// The source as this request's copies name it: its identity bound to
    /// the ClusterMirror (see [`Request::bound_uid`]).
    pub fn bound_source<K: MirroredKind>(&self, source: &K) -> K {
        let mut bound = source.clone();
        let meta = bound.meta_mut();
        meta.uid = meta.uid.as_deref().map(|uid| self.bound_uid(uid));
        bound
    }

    /// What it asks of each copy, as
    /// [`desired`](crate::decisions::desired_copy::desired) takes it (with
    /// the source from [`Request::bound_source`]): a mirror of its source
    /// under the target name, labeled with its name, holding and carrying
    /// what `spec.target` says (never what the source's own annotations
    /// ask). `crd_uid` is the CRD it is proven made under (None: not
    /// proven), which its copies record with its deletion policy.
    pub fn copy_request<'a>(&'a self, crd_uid: Option<&'a str>) -> CopyRequest<'a> {
        let deletion = DeletionMark::of(self.deletion_policy, crd_uid);
        let asker = match self.origin {
            Origin::ClusterMirror => Asker::ClusterMirror {
                name: &self.name,
                deletion,
            },
            Origin::Mirror { .. } => Asker::Mirror {
                namespace: &self.source_namespace,
                name: &self.name,
                deletion,
            },
        };
        CopyRequest {
            asker,
            shape: ShapeAsked::Given {
                shape: &self.shape,
                form: self.form,
            },
            name: NameAsked::Given(&self.target_name),
            carried: CarriedAsked::Given {
                labels: &self.labels,
                annotations: &self.annotations,
            },
        }
    }

    /// Whether `copy`'s marks say this request wrote it: a ClusterMirror's
    /// label of its name, or a Mirror's, from its namespace.
    pub fn marked_on(&self, copy: &ObjectMeta) -> bool {
        self.key().marks(copy)
    }

    /// Whether a copy this ClusterMirror wrote (its label names it) in a
    /// namespace that exists is what its spec asks for now (suspended or
    /// not: see [`copy_fate`]).
    pub fn wants(&self, copy: &ObjectMeta, namespace: &NamespaceFacts, consent: &Consent) -> bool {
        let same_source = mirror_of(copy)
            .is_some_and(|(ns, name)| ns == self.source_namespace && name == self.source_name);
        self.marked_on(copy)
            && copy.name.as_deref() == Some(self.target_name.as_str())
            && same_source
            && self.selection(namespace, consent).keeps()
    }
}

/// Which namespaces no ClusterMirror writes into: the protected ones, and
/// every namespace ClusterMirror sources may come from.
pub fn cluster_consent(protected: &[String], source_namespaces: &[String]) -> Consent {
    // Only its protection is read: a ClusterMirror asks no consent, of any
    // kind.
    Consent::new(
        crate::api::SourceKind::ConfigMap,
        Selector::default(),
        protected.iter().chain(source_namespaces).cloned(),
    )
}

#[cfg(test)]
mod tests;
