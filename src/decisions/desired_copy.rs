//! The desired state: what a copy of a source must look like, decided in
//! one place for every copy there is, a source's companion, its mirrors,
//! and a ClusterMirror's copies, for the reconcilers and for `explain`.
//!
//! Everything here is pure, and the same for every kind. Given a source,
//! the copy asked for (a [`CopyRequest`], whoever asks), the namespace it
//! is for and the install's settings ([`Install`]), [`desired`] says what
//! the copy's name, content, checksum, labels, annotations and owner must
//! be. Whether an existing object is that copy
//! is `ownership`'s question, how it differs is `plan`'s; the reconcilers
//! do the I/O.
//!
//! A reconcile answers its request once ([`answered`]: the source's
//! identity, the copies' name, what they carry, or why the request is
//! refused as a whole), then builds the copy in each namespace from that
//! answer ([`Answered::copy_in`]), which no namespace can refuse. What
//! every copy of one reconcile holds (its keys, their form, the checksum
//! they record) is resolved once for all of them ([`resolved`]), and
//! carried to each copy and to its write.
//!
//! The measure of this module: a new option of what a copy holds (say,
//! only some keys, renamed) changes this decision (what is resolved once,
//! and its content step), its tests, the
//! parsing of the annotation or API field that asks for it, and the docs,
//! and no path that writes or explains copies.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{
    contract::{
        CHECKSUM_ANNOTATION, CLUSTER_MIRROR_LABEL, HELM_RELEASE_NAME_PREFIX, HELM_STORAGE_LABEL,
        MANAGED_BY_LABEL, MANAGER_NAME, MAX_NAME_LEN, MIRROR_LABEL, MIRROR_OF_ANNOTATION,
        MIRROR_OF_UID_ANNOTATION, SOURCE_SELECTOR_ANNOTATION, TILLER_STORAGE_LABEL, companion_name,
        helm_storage_label, install::INSTALL_OWNED_LABEL, is_managed_by_us,
    },
    decisions::carried::{Carried, Lists},
    decisions::cluster_mirror::marks::DeletionMark,
    decisions::copy_request::{Asker, CarriedAsked, CopyRequest, NameAsked},
    decisions::install::Install,
    decisions::key_shape::{copy_plan::content_plan, secret_type::KeysBreakType},
    decisions::mirror_name::mirror_name,
    decisions::owner_ref::owner_reference,
    kind::{ChecksumKey, MirroredKind},
};

pub mod resolved;

pub use resolved::{
    Resolved, ShapeKeys, copies_checksum, copy_keys, planned_checksum, shape_asked, shape_keys,
};

/// Why a companion cannot be built for a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The source has no name, namespace or uid yet (never true for a stored object).
    Incomplete,
    /// `<name><suffix>` would be longer than Kubernetes allows.
    NameTooLong { name: String, len: usize },
    /// The source is itself a companion; mirroring it would grow a chain.
    SourceIsCompanion,
    /// The source is being deleted: new copies would only be garbage.
    BeingDeleted,
    /// One of the source's lists of keys to carry is malformed (as it
    /// says): nothing of the source is written until it is fixed.
    InvalidCopyList(String),
    /// The source's `workshop.io/mirror-keys` cannot be read (as it says):
    /// no copy of it changes until it is fixed.
    InvalidMirrorKeys(String),
    /// The source's `workshop.io/mirror-name` cannot be its mirrors' name
    /// (as it says): no mirror is written until it is fixed.
    InvalidMirrorName(String),
    /// The keys copied leave out one the Secret's type requires, and no
    /// other type is asked for: the API server would refuse the copy.
    KeysBreakType(KeysBreakType),
}

/// Why `object` may never be a source, whatever its labels, if so: what an
/// install created for its own use (marked [`INSTALL_OWNED_LABEL`]), a Helm
/// release record of either kind, or what its kind refuses (some types of
/// Secret, this install's digest key). The reconcilers ask before anything
/// else: such an object has no copies, and those written before (by a
/// release that did not refuse it, or before its type was refused) are no
/// longer wanted.
pub fn never_a_source<K: MirroredKind>(object: &K, rules: &K::SourceRules) -> Option<String> {
    let meta = object.meta();
    let install_owned = meta
        .labels
        .as_ref()
        .and_then(|l| l.get(INSTALL_OWNED_LABEL));
    if let Some(role) = install_owned {
        return Some(format!(
            "it is an install's own object (labeled {INSTALL_OWNED_LABEL}={role}): what an \
             install keeps for itself is never copied"
        ));
    }
    let storage_label = helm_storage_label(meta);
    if let Some((label, value)) = storage_label.filter(|l| *l == TILLER_STORAGE_LABEL) {
        return Some(format!(
            "it is a Helm 2 release record (labeled {label}={value}): Tiller trusts its copies \
             as records of its releases"
        ));
    }
    let (label, value) = HELM_STORAGE_LABEL;
    let helm_labeled = storage_label.is_some();
    let helm_named = meta
        .name
        .as_deref()
        .is_some_and(|name| name.starts_with(HELM_RELEASE_NAME_PREFIX));
    if helm_labeled || helm_named {
        return Some(format!(
            "it is a Helm release record (named {HELM_RELEASE_NAME_PREFIX}*, or labeled \
             {label}={value}): Helm trusts its copies as records of its releases"
        ));
    }
    object.source_refusal(rules)
}

/// Name, namespace and uid of an object that may be copied: one that is
/// stored (so has all three) and is not itself a copy.
fn identity<K: MirroredKind>(object: &K) -> Result<(&str, &str, &str), Refusal> {
    let source = object.meta();
    if is_managed_by_us(source) {
        return Err(Refusal::SourceIsCompanion);
    }
    if source.deletion_timestamp.is_some() {
        return Err(Refusal::BeingDeleted);
    }
    match (
        source.name.as_deref(),
        source.namespace.as_deref(),
        source.uid.as_deref(),
    ) {
        (Some(name), Some(namespace), Some(uid)) => Ok((name, namespace, uid)),
        _ => Err(Refusal::Incomplete),
    }
}

/// The copy `request` asks of `source` (a full object) in `namespace`,
/// as `install` writes it: the source's content under the copy's name,
/// its checksum, the labels and annotations that mark it as this
/// install's copy and name its source, and what it carries (with the
/// record of the carried keys). Its content is what a write's plan takes
/// of the source (`ContentPlan`), as the reconcilers fill it.
pub fn desired<K: MirroredKind>(
    source: &K,
    request: &CopyRequest<'_>,
    namespace: &str,
    install: &Install,
    key: &dyn ChecksumKey<K>,
) -> Result<K, Refusal> {
    let keys = shape_keys(source, request.shape);
    let checksum =
        (keys.as_ref()).map_or_else(|_| String::new(), |k| copies_checksum(source, k, key));
    let resolved = (keys.as_ref()).map(|keys| Resolved {
        keys,
        checksum: &checksum,
    });
    let copy = answered(source, request, install, resolved.map_err(Clone::clone))?
        .copy_in(namespace, install);
    let keys = keys?;
    let plan = content_plan(source, &keys.shape, keys.form).map_err(Refusal::KeysBreakType)?;
    Ok(plan.fill(copy, source, &checksum))
}

/// What `request` asks of `source`, answered once for every namespace it
/// has a copy in: the source's identity, the copies' name, what they carry
/// and what they hold of the source ([`Resolved`]). The copy in each
/// namespace is then built from it ([`Answered::copy_in`]), and no
/// namespace can refuse it.
pub struct Answered<'x, 'a, K> {
    source: &'x K,
    identity: (&'x str, &'x str, &'x str),
    copy_name: CopyName<'x>,
    /// The label a ClusterMirror's or a Mirror's copies bear, with its
    /// name, and their deletion mark.
    marked: Option<(&'static str, &'x str, Option<DeletionMark<'x>>)>,
    carried: CarriedAnswer<'x>,
    resolved: Resolved<'x, 'a>,
}

/// The name every copy of one request bears.
enum CopyName<'x> {
    /// `<name><suffix>`, in the source's namespace.
    Companion(String),
    /// The same name in each namespace.
    Mirror(&'x str),
}

/// What every copy of one request carries, as the request answered it.
enum CarriedAnswer<'x> {
    Listed(Lists),
    Given {
        labels: &'x BTreeMap<String, String>,
        annotations: &'x BTreeMap<String, String>,
    },
}

/// The answers of `request` of `source`, as `install` names its copies,
/// with what its copies hold of `source` resolved before (as
/// [`shape_keys`] and [`copies_checksum`] say); else why the request is
/// refused as a whole, the first refusal met in this order: the source
/// itself, the copies' name, the lists of keys to carry, what they hold.
pub fn answered<'x, 'a, K: MirroredKind>(
    source: &'x K,
    request: &CopyRequest<'x>,
    install: &Install,
    resolved: Result<Resolved<'x, 'a>, Refusal>,
) -> Result<Answered<'x, 'a, K>, Refusal> {
    let identity = identity(source)?;
    let copy_name = match request.name {
        NameAsked::Companion => CopyName::Companion(companion_named(identity.0, &install.suffix)?),
        NameAsked::Annotated => {
            CopyName::Mirror(mirror_name(source.meta()).map_err(Refusal::InvalidMirrorName)?)
        }
        NameAsked::Given(copy_name) => CopyName::Mirror(copy_name),
    };
    let carried = match request.carried {
        CarriedAsked::Given {
            labels,
            annotations,
        } => CarriedAnswer::Given {
            labels,
            annotations,
        },
        CarriedAsked::Listed => {
            CarriedAnswer::Listed(Lists::of(source.meta()).map_err(Refusal::InvalidCopyList)?)
        }
    };
    let marked = match request.asker {
        Asker::ClusterMirror { name, deletion } => Some((CLUSTER_MIRROR_LABEL, name, deletion)),
        // Its namespace is the source's, which `mirror-of` names.
        Asker::Mirror { name, deletion, .. } => Some((MIRROR_LABEL, name, deletion)),
        Asker::Companion | Asker::SourceMirrors => None,
    };
    Ok(Answered {
        source,
        identity,
        copy_name,
        marked,
        carried,
        resolved: resolved?,
    })
}

impl<K: MirroredKind> Answered<'_, '_, K> {
    /// The copy in `namespace`, as `install` writes it. It holds none of
    /// the source's keys, only the rest of its content (its type, whether
    /// it is immutable), which the comparison reads beside the checksum:
    /// what it holds is the plan's, made once from the source read now
    /// (`ContentPlan::fill`), as a cached source keeps no content.
    pub fn copy_in(&self, namespace: &str, install: &Install) -> K {
        let (name, source_namespace, uid) = self.identity;
        let mut meta = match &self.copy_name {
            CopyName::Companion(companion) => {
                companion_meta::<K>(name, source_namespace, uid, companion)
            }
            CopyName::Mirror(copy_name) => {
                mirror_meta(name, source_namespace, uid, namespace, copy_name)
            }
        };
        if let Some((label, name, _)) = self.marked {
            let labels = meta.labels.get_or_insert_with(BTreeMap::new);
            labels.insert(label.into(), name.into());
        }
        let carried = match &self.carried {
            CarriedAnswer::Listed(lists) => Carried::Listed {
                source: self.source.meta(),
                lists,
            },
            CarriedAnswer::Given {
                labels,
                annotations,
            } => Carried::Given {
                labels,
                annotations,
            },
        };
        let mut meta = carried.onto(meta, &install.never_carried, &install.source_label_keys);
        let annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
        let Resolved { keys, checksum } = self.resolved;
        annotations.insert(CHECKSUM_ANNOTATION.into(), checksum.to_owned());
        annotations.insert(SOURCE_SELECTOR_ANNOTATION.into(), install.selector.clone());
        if let Some((_, _, Some(mark))) = self.marked {
            mark.write(annotations);
        }
        let mut copy = K::content_from_keys(self.source, std::iter::empty(), keys.form.copy_type);
        *copy.meta_mut() = meta;
        copy
    }
}

/// `<name><suffix>`, unless longer than Kubernetes allows.
fn companion_named(name: &str, suffix: &str) -> Result<String, Refusal> {
    let companion = companion_name(name, suffix);
    if companion.len() > MAX_NAME_LEN {
        let len = companion.len();
        return Err(Refusal::NameTooLong {
            name: companion,
            len,
        });
    }
    Ok(companion)
}

/// A companion's metadata: `companion` in the source's namespace, owned
/// by its source.
fn companion_meta<K: MirroredKind>(
    name: &str,
    namespace: &str,
    uid: &str,
    companion: &str,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(companion.into()),
        namespace: Some(namespace.into()),
        labels: Some(managed_by_us()),
        annotations: Some(BTreeMap::new()),
        owner_references: Some(vec![owner_reference::<K>(name, uid)]),
        ..ObjectMeta::default()
    }
}

/// A mirror's metadata: `copy_name` in `target`, naming its source.
fn mirror_meta(
    name: &str,
    namespace: &str,
    uid: &str,
    target: &str,
    copy_name: &str,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(copy_name.into()),
        namespace: Some(target.into()),
        labels: Some(managed_by_us()),
        annotations: Some(BTreeMap::from([
            (MIRROR_OF_ANNOTATION.into(), format!("{namespace}/{name}")),
            (MIRROR_OF_UID_ANNOTATION.into(), uid.into()),
        ])),
        ..ObjectMeta::default()
    }
}

fn managed_by_us() -> BTreeMap<String, String> {
    BTreeMap::from([(MANAGED_BY_LABEL.into(), MANAGER_NAME.into())])
}

#[cfg(test)]
mod tests;
