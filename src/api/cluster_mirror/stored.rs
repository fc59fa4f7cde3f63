//! A ClusterMirror as the API server stores it, read by this controller
//! whatever it holds: the form its watch, cache, reconciles and `explain`
//! read.
//!
//! Why not [`ClusterMirror`] itself: a list or watch of ClusterMirrors is
//! decoded whole, so one object whose spec or status this version cannot
//! read (written under an older or newer CRD, with a kind or a field it
//! does not know) would fail every list: the watch would stop, and every
//! other ClusterMirror with it. A field of `spec`, `spec.source` or
//! `spec.target` it does not know makes the spec unreadable rather than
//! being ignored (the spec types deny unknown fields): a newer version's
//! field may ask for less (some keys only, say), and the spec read without
//! it would copy more than was asked. Here such a spec is kept as why it does not
//! read, beside what is read of it apart (its class, kind and deletion
//! policy), so that the install of its class still reports it
//! (`InvalidSpec`) and its deletion still does what it asked; a status that
//! does not read is replaced, as if absent.

use std::{
    borrow::Cow,
    hash::{DefaultHasher, Hasher},
};

use k8s_openapi::{ClusterResourceScope, apimachinery::pkg::apis::meta::v1::ObjectMeta};
use kube::Resource;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::{ClusterMirror, ClusterMirrorSpec, ClusterMirrorStatus, DeletionPolicy, SourceKind};

/// A ClusterMirror as stored, its spec and status read leniently.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredClusterMirror {
    pub metadata: ObjectMeta,
    /// Its spec, or why this controller cannot read it.
    pub spec: Result<ClusterMirrorSpec, UnreadableSpec>,
    /// Its status, when it has one.
    pub status: Option<StoredStatus>,
}

/// A spec this controller cannot read, and what is read of it apart.
#[derive(Clone, Debug, PartialEq)]
pub struct UnreadableSpec {
    /// What of it does not read, as a person is told.
    pub why: String,
    /// `className`; empty when it names none.
    pub class_name: String,
    /// `source.kind`, when it is one this controller knows.
    pub kind: Option<SourceKind>,
    /// Anything but `Orphan` deletes.
    pub deletion_policy: DeletionPolicy,
}

/// A ClusterMirror's status as stored.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StoredStatus {
    /// The status, when this controller can read it.
    pub readable: Option<ClusterMirrorStatus>,
    /// `observedGeneration`, read apart from the rest, which may not read.
    pub observed_generation: Option<i64>,
    /// A hash of the status as stored, every field of it: a write that
    /// changes only fields this version does not read (another install's,
    /// of a newer version), or one unreadable status for another, changes
    /// it too.
    pub fingerprint: u64,
}

impl StoredClusterMirror {
    /// The class of the install that serves it (empty for none), read even
    /// from a spec that does not read otherwise.
    pub fn class(&self) -> &str {
        match &self.spec {
            Ok(spec) => spec.class(),
            Err(unreadable) => &unreadable.class_name,
        }
    }

    /// The kind of its copies, if it names one this controller knows (a
    /// spec that does not read: its source's kind).
    pub fn copy_kind(&self) -> Option<SourceKind> {
        match &self.spec {
            Ok(spec) => Some(spec.copy_kind()),
            Err(unreadable) => unreadable.kind,
        }
    }

    /// What its deletion does to its copies.
    pub fn deletion_policy(&self) -> DeletionPolicy {
        match &self.spec {
            Ok(spec) => spec.deletion_policy,
            Err(unreadable) => unreadable.deletion_policy,
        }
    }

    /// The status it holds, if this controller can read it: one it cannot
    /// is replaced, as if absent.
    pub fn stored_status(&self) -> Option<&ClusterMirrorStatus> {
        self.status.as_ref()?.readable.as_ref()
    }

    /// The generation its stored status describes.
    pub fn observed_generation(&self) -> Option<i64> {
        self.status.as_ref()?.observed_generation
    }

    /// Reads `metadata`, `spec` and `status` as stored (`spec` and
    /// `status` None when absent).
    pub fn read(metadata: ObjectMeta, spec: Option<&Value>, status: Option<&Value>) -> Self {
        let spec_read = read_spec_with(spec, |spec| ClusterMirrorSpec::deserialize(spec));
        StoredClusterMirror::read_with(metadata, spec_read, status)
    }

    /// A stored object of `metadata`, its spec read already (`spec`), its
    /// `status` as stored.
    pub fn read_with(
        metadata: ObjectMeta,
        spec: Result<ClusterMirrorSpec, UnreadableSpec>,
        status: Option<&Value>,
    ) -> Self {
        StoredClusterMirror {
            metadata,
            spec,
            status: status.map(|status| StoredStatus {
                readable: ClusterMirrorStatus::deserialize(status).ok(),
                observed_generation: status.get("observedGeneration").and_then(Value::as_i64),
                fingerprint: fingerprint(status),
            }),
        }
    }
}

/// The hash of `value` as JSON (its keys sorted, so the same status
/// hashes the same however it was sent).
fn fingerprint(value: &Value) -> u64 {
    /// Feeds the JSON written to the hasher, with no string built.
    struct Hashing(DefaultHasher);
    impl std::io::Write for Hashing {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.write(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut hashing = Hashing(DefaultHasher::new());
    // Writing a `Value` to memory cannot fail.
    let _ = serde_json::to_writer(&mut hashing, value);
    hashing.0.finish()
}

/// Reads `spec` by `read` (None: absent); else why it does not read,
/// beside what is read of it apart.
pub fn read_spec_with<E: std::fmt::Display>(
    spec: Option<&Value>,
    read: impl FnOnce(&Value) -> Result<ClusterMirrorSpec, E>,
) -> Result<ClusterMirrorSpec, UnreadableSpec> {
    let why = match spec {
        None => "it has no spec".to_owned(),
        Some(spec) => match read(spec) {
            Ok(spec) => return Ok(spec),
            Err(error) => format!("spec: {error}"),
        },
    };
    let field = |pointer: &str| {
        spec.and_then(|s| s.pointer(pointer))
            .and_then(Value::as_str)
    };
    let kind = match field("/source/kind") {
        Some("ConfigMap") => Some(SourceKind::ConfigMap),
        Some("Secret") => Some(SourceKind::Secret),
        _ => None,
    };
    let deletion_policy = match field("/deletionPolicy") {
        Some("Orphan") => DeletionPolicy::Orphan,
        _ => DeletionPolicy::Delete,
    };
    Err(UnreadableSpec {
        why,
        class_name: field("/className").unwrap_or_default().to_owned(),
        kind,
        deletion_policy,
    })
}

impl StoredClusterMirror {
    /// The object as sent, its metadata read (which must read) and its
    /// spec and status as they are.
    pub fn sent<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<(ObjectMeta, Option<Value>, Option<Value>), D::Error> {
        #[derive(Deserialize)]
        struct Sent {
            metadata: ObjectMeta,
            #[serde(default, deserialize_with = "present")]
            spec: Option<Value>,
            #[serde(default, deserialize_with = "present")]
            status: Option<Value>,
        }
        let sent = Sent::deserialize(deserializer)?;
        Ok((sent.metadata, sent.spec, sent.status))
    }
}

impl<'de> Deserialize<'de> for StoredClusterMirror {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (metadata, spec, status) = StoredClusterMirror::sent(deserializer)?;
        Ok(StoredClusterMirror::read(
            metadata,
            spec.as_ref(),
            status.as_ref(),
        ))
    }
}

/// A field that is there, even as null, is read as it is.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// The resource of [`ClusterMirror`]: its group, version, kind and plural
/// are the `CustomResource` derive's, said once.
impl Resource for StoredClusterMirror {
    type DynamicType = ();
    type Scope = ClusterResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        ClusterMirror::kind(&())
    }

    fn group(_: &()) -> Cow<'_, str> {
        ClusterMirror::group(&())
    }

    fn version(_: &()) -> Cow<'_, str> {
        ClusterMirror::version(&())
    }

    fn api_version(_: &()) -> Cow<'_, str> {
        ClusterMirror::api_version(&())
    }

    fn plural(_: &()) -> Cow<'_, str> {
        ClusterMirror::plural(&())
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests;
