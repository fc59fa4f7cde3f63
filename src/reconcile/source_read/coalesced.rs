//! The fresh reads of sources, coalesced at the API server's pace: a
//! namespace's sources are read by one request at a time, and the
//! reconciles that wait for a read while one is in flight are answered
//! together by the next, as one paged LIST of the namespace's sources
//! (selected by the source selector), or, where the namespace holds many
//! sources more than are waited for, or more bytes than a bound beyond
//! theirs, by one GET each (`reconcile::source_read::batch` decides, from
//! what the cache says the namespace holds: [`CachedSizes`]).
//!
//! A read with none in flight in its namespace is made at once, so a
//! reconcile alone waits for no one; in a namespace of too many sources for
//! a LIST to pay even with every reconcile waiting, every read is a GET at
//! once. The
//! reads run in a task of their own: a cancelled reconcile neither cancels
//! the others' read nor is waited for.
//!
//! Each answer is at least as new as the resourceVersion its waiter
//! cached, as its own GET was: a LIST asks for the newest of the batch's
//! versions. Whatever the LIST holds that nobody waits for is dropped as
//! its page is read; a page, sized in bytes, is the most held at once. A
//! source waited for
//! that the LIST does not hold (deleted, or no longer selected) is read by
//! a GET, so that its reconcile hears why, as it did when every read was
//! a GET.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use futures::future::join_all;
use kube::{
    Api, Client, ResourceExt,
    api::{GetParams, ListParams, VersionMatch},
};
use tokio::sync::oneshot;

use crate::{
    cluster::api_client,
    kind::MirroredKind,
    reconcile::source_read::batch::{
        Batch, ReadPlan, SOURCES_LISTED_PER_WAITER, Waiting, may_list,
    },
};

pub use crate::reconcile::source_read::{
    batch::{NamespaceSources, PAGE_BYTES},
    cached_sizes::CachedSizes,
};

/// A source read afresh: None when the API server no longer holds it.
pub type FreshRead<K> = Result<Option<K>, kube::Error>;

type Waiter<K> = oneshot::Sender<FreshRead<K>>;

/// The fresh reads of one kind's sources, batched by namespace.
pub struct FreshReads<K: MirroredKind> {
    shared: Arc<Shared<K>>,
}

struct Shared<K: MirroredKind> {
    client: Client,
    selector: String,
    page_bytes: u64,
    sizes: Arc<dyn CachedSizes>,
    /// The most reads that can wait at once.
    most_waiting: usize,
    namespaces: Mutex<HashMap<String, Namespace<K>>>,
}

/// One namespace's batch being gathered behind the read in flight.
struct Namespace<K> {
    gathering: Option<Batch<Waiter<K>>>,
    /// Whether a task is reading this namespace's batches: a waiter
    /// joins the gathering batch and is answered by that task.
    reading: bool,
}

impl<K: MirroredKind> Default for Namespace<K> {
    fn default() -> Self {
        Namespace {
            gathering: None,
            reading: false,
        }
    }
}

impl<K: MirroredKind> FreshReads<K> {
    /// Reads of sources selected by `selector`, which the cache says are
    /// as `sizes` tells, listed (where they are) in pages of about
    /// `page_bytes` ([`PAGE_BYTES`]).
    pub fn new(
        client: Client,
        selector: &str,
        page_bytes: u64,
        sizes: Arc<dyn CachedSizes>,
    ) -> Self {
        FreshReads {
            shared: Arc::new(Shared {
                client,
                selector: selector.to_owned(),
                page_bytes,
                sizes,
                most_waiting: usize::MAX,
                namespaces: Mutex::default(),
            }),
        }
    }

    /// At most `most_waiting` reads wait at once (the reconciles that run
    /// at once): in a namespace too big for a LIST to pay even then, each
    /// read is a GET at once.
    pub fn at_most_waiting(mut self, most_waiting: usize) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.most_waiting = most_waiting;
        }
        self
    }

    /// Source `namespace/name` as the API server holds it now, no older
    /// than `resource_version` (the cached one's).
    pub async fn read(
        &self,
        namespace: &str,
        name: &str,
        resource_version: Option<&str>,
    ) -> FreshRead<K> {
        let (waiter, answer) = oneshot::channel();
        let mut alone = Batch::default();
        let start_reading = {
            let mut namespaces = lock(&self.shared);
            let state = namespaces.entry(namespace.to_owned()).or_default();
            let held = self.shared.sizes.held_in(namespace);
            if may_list(held.count, self.shared.most_waiting) {
                state.gathering.get_or_insert_with(Batch::default).add(
                    name,
                    resource_version,
                    waiter,
                );
                !std::mem::replace(&mut state.reading, true)
            } else {
                alone.add(name, resource_version, waiter);
                false
            }
        };
        if !alone.is_empty() {
            let api: Api<K> = Api::namespaced(self.shared.client.clone(), namespace);
            for (name, waiting) in alone.drain() {
                get_answering(&api, name, waiting).await;
            }
        }
        if start_reading {
            tokio::spawn(read_batches(self.shared.clone(), namespace.to_owned()));
        }
        match answer.await {
            Ok(read) => read,
            // The batch's task ended without answering: only when the
            // runtime is shutting down.
            Err(_) => Err(kube::Error::Service("the fresh read was abandoned".into())),
        }
    }
}

fn lock<K: MirroredKind>(shared: &Shared<K>) -> MutexGuard<'_, HashMap<String, Namespace<K>>> {
    shared
        .namespaces
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// Reads the batches of `namespace`, one after the other, until no one
/// waits: the first holds the waiter that started this task, each next one
/// those who came while the one before was read.
async fn read_batches<K: MirroredKind>(shared: Arc<Shared<K>>, namespace: String) {
    loop {
        let next = {
            let mut namespaces = lock(&shared);
            let Some(state) = namespaces.get_mut(&namespace) else {
                return;
            };
            match state.gathering.take() {
                Some(batch) => batch,
                // Given up under the same lock a waiter joins under: no
                // one is left waiting without a reader.
                None => {
                    state.reading = false;
                    return;
                }
            }
        };
        let mut batch = next;
        batch.retain(|waiter| !waiter.is_closed());
        if !batch.is_empty() {
            read_batch(&shared, &namespace, batch).await;
        }
    }
}

/// Reads one batch of `namespace`, and answers each waiter.
async fn read_batch<K: MirroredKind>(
    shared: &Shared<K>,
    namespace: &str,
    mut batch: Batch<Waiter<K>>,
) {
    let api: Api<K> = Api::namespaced(shared.client.clone(), namespace);
    let held = shared.sizes.held_in(namespace);
    let bytes_of = |name: &str| shared.sizes.bytes_of(namespace, name);
    match batch.plan(held, bytes_of, shared.page_bytes) {
        ReadPlan::List {
            not_older_than,
            page_size,
        } => {
            // A cache behind the API server may hold fewer sources than
            // the namespace: the list stops where no batch could pay.
            let enough = shared
                .most_waiting
                .saturating_mul(SOURCES_LISTED_PER_WAITER);
            let paging = Paging { page_size, enough };
            list_answering(
                &api,
                &shared.selector,
                not_older_than.as_deref(),
                paging,
                &mut batch,
            )
            .await;
        }
        ReadPlan::EachGet => {
            let reads = batch
                .drain()
                .map(|(name, waiting)| get_answering(&api, name, waiting));
            join_all(reads).await;
        }
    }
}

/// How a LIST is paged: `page_size` sources a request, and no page after
/// the one that takes the count past `enough`.
#[derive(Debug, Clone, Copy)]
pub struct Paging {
    pub page_size: u32,
    pub enough: usize,
}

/// Lists the sources of `api`'s namespace page by page, answering the
/// waiters of `batch` from them. A source the list does not hold was
/// deleted, or no longer matches the selector: a GET of it tells which,
/// as the reconcile's own read would have. So is one the list stopped
/// before: a namespace found to hold more than `paging.enough` sources is
/// not listed further, as no batch there could pay for its LIST (the first
/// read of a namespace of 10,000 sources costs one page, not twenty). If
/// the list failed, every waiter is told why.
async fn list_answering<K: MirroredKind>(
    api: &Api<K>,
    selector: &str,
    not_older_than: Option<&str>,
    paging: Paging,
    batch: &mut Batch<Waiter<K>>,
) {
    let listed = list_pages_until(api, selector, not_older_than, paging, |source| {
        if let Some(waiting) = batch.take(&source.name_any()) {
            answer_each(waiting, Some(source));
        }
    })
    .await;
    match listed {
        Ok(_) => {
            let unlisted = batch
                .drain()
                .map(|(name, waiting)| get_answering(api, name, waiting));
            join_all(unlisted).await;
        }
        Err(error) => {
            let failure = each_waiter(&error);
            for (_, waiting) in batch.drain() {
                answer_all(waiting, || Err(failure()));
            }
        }
    }
}

/// Every source of `api`'s namespace that `selector` selects, handed to
/// `found` one at a time, `page_size` per request, all pages of one
/// consistent list no older than `not_older_than` (or consistent with
/// etcd when None). How many there were.
pub async fn list_pages<K: MirroredKind>(
    api: &Api<K>,
    selector: &str,
    not_older_than: Option<&str>,
    page_size: u32,
    found: impl FnMut(K),
) -> Result<usize, kube::Error> {
    let paging = Paging {
        page_size,
        enough: usize::MAX,
    };
    list_pages_until(api, selector, not_older_than, paging, found).await
}

/// As [`list_pages`], but no page is read after the one that takes the
/// count past `paging.enough`: how many were handed to `found`.
pub async fn list_pages_until<K: MirroredKind>(
    api: &Api<K>,
    selector: &str,
    not_older_than: Option<&str>,
    paging: Paging,
    mut found: impl FnMut(K),
) -> Result<usize, kube::Error> {
    let mut params = ListParams::default()
        .labels(selector)
        .limit(paging.page_size);
    if let Some(version) = not_older_than {
        params = params.matching(VersionMatch::NotOlderThan).at(version);
    }
    let mut held = 0;
    loop {
        let page = api.list(&params).await?;
        let next = page.metadata.continue_.filter(|token| !token.is_empty());
        for source in page.items {
            held += 1;
            found(source);
        }
        match next {
            Some(_) if held > paging.enough => return Ok(held),
            // Later pages are read at the first one's version, which the
            // token carries; kube sends no resourceVersion beside it.
            Some(token) => params = params.continue_token(&token),
            None => return Ok(held),
        }
    }
}

/// Reads one source as its reconcile would alone, and answers its waiters.
async fn get_answering<K: MirroredKind>(api: &Api<K>, name: String, waiting: Waiting<Waiter<K>>) {
    let not_older = match waiting.not_older_than {
        Some(version) => GetParams::at(&version.to_string()),
        None => GetParams::default(),
    };
    let read = match api.get_with(&name, &not_older).await {
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(None),
        read => read.map(Some),
    };
    match read {
        Ok(source) => answer_each(waiting, source),
        Err(error) => {
            let failure = each_waiter(&error);
            answer_all(waiting, || Err(failure()));
        }
    }
}

/// Answers every waiter with `source`, cloned for all but the last, so
/// that a source one reconcile waits for is never held twice.
fn answer_each<K: Clone>(waiting: Waiting<Waiter<K>>, source: Option<K>) {
    let mut waiters = waiting.waiters;
    let Some(last) = waiters.pop() else {
        return;
    };
    for waiter in waiters {
        // A waiter gone meanwhile was cancelled: nobody to tell.
        let _ = waiter.send(Ok(source.clone()));
    }
    let _ = last.send(Ok(source));
}

fn answer_all<K>(waiting: Waiting<Waiter<K>>, answer: impl Fn() -> FreshRead<K>) {
    for waiter in waiting.waiters {
        // A waiter gone meanwhile was cancelled: nobody to tell.
        let _ = waiter.send(answer());
    }
}

/// One failed read, told to each of its waiters as the error their own
/// read would have had: the API server's status as it was, anything else
/// as a transport failure. A response that could not be parsed is told
/// without serde's words, which may quote the content.
fn each_waiter(error: &kube::Error) -> impl Fn() -> kube::Error + use<> {
    let told: Result<Box<kube::core::Status>, String> = match error {
        kube::Error::Api(status) => Ok(status.clone()),
        kube::Error::SerdeError(parse) => Err(api_client::unparsed(parse)),
        error => Err(error.to_string()),
    };
    move || match &told {
        Ok(status) => kube::Error::Api(status.clone()),
        Err(message) => kube::Error::Service(message.clone().into()),
    }
}
