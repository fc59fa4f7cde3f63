//! A source's content, read from the API server when a write needs it.
//!
//! The sources' cache keeps each source's digest, not its content, so the
//! controller's memory does not follow what the sources hold (nor keep a
//! copy of every Secret value). A reconcile that writes reads its source
//! once, however many copies it writes; one that writes nothing reads
//! nothing.

use kube::ResourceExt;
use tokio::sync::OnceCell;

use crate::{
    kind::MirroredKind,
    reconcile::context::{Context, object_key},
    reconcile::error::{ApiOutcome, Error, classify},
};

/// The source of one reconcile.
pub struct Source<'a, K> {
    /// As cached: its metadata, and its content's digest in place of it.
    pub cached: &'a K,
    content: OnceCell<K>,
}

impl<'a, K: MirroredKind> Source<'a, K> {
    pub fn new(cached: &'a K) -> Source<'a, K> {
        Source {
            cached,
            content: OnceCell::new(),
        }
    }

    /// The source as the API server holds it now: the same object (by
    /// uid) as the cached one, with its content.
    pub async fn read(&self, ctx: &Context<K>) -> Result<&K, Error> {
        self.content
            .get_or_try_init(|| async {
                let namespace = self.cached.namespace().unwrap_or_default();
                let name = self.cached.name_any();
                let read = ctx.api(&namespace).get_opt(&name).await;
                let gone = || Error::Stale(format!("{} is gone", object_key(self.cached.meta())));
                match read {
                    Ok(Some(source)) if source.uid() == self.cached.uid() => Ok(source),
                    Ok(_) => Err(gone()),
                    Err(error) => match classify(error) {
                        ApiOutcome::Failed(error) => Err(error),
                        ApiOutcome::NamespaceTerminating => Err(Error::NamespaceTerminating),
                    },
                }
            })
            .await
    }
}
