//! The key of Secret copies' checksums (see `kind::secret`), kept in one
//! Secret that every replica of an install watches, so that all use the
//! key that Secret holds now, across restarts and leader handovers too.
//!
//! - Missing (at start, or deleted while running): every replica tries to
//!   create it with 32 random bytes. A create succeeds only if the name is
//!   free, so one key is made, and the replica that finds it taken uses the
//!   one the watch then delivers.
//! - Edited: every replica switches to the new key when the watch delivers
//!   it, and the sources are compared again, so each copy is written once
//!   more, under the new key.
//! - Refused (see `decisions::key_secret`): no key is used, and the Secret
//!   is left as it is for a person to fix or delete.
//!
//! While no key can be used, Secret copies are not written, but are still
//! removed when no longer wanted (the prune loop needs no key); `/readyz`
//! and the log say why, once per distinct reason, and never what the key
//! is. ConfigMaps are mirrored meanwhile.

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, Instant},
};

use futures::{Stream, StreamExt, stream};
use k8s_openapi::{ByteString, api::core::v1::Secret};
use kube::{
    Api, Client,
    api::PostParams,
    core::ObjectMeta,
    runtime::watcher::{self, Event},
};
use rand::RngCore;

use crate::{
    cluster::{api_client, relayed, watch_stream},
    contract::MANAGER_NAME,
    contract::install::{DIGEST_KEY_ROLE, INSTALL_OWNED_LABEL},
    decisions::key_secret::{KEY_ENTRY, key_in},
    kind::secret::{SecretDigestKey, SharedDigestKey},
    ops::config::InitialList,
    ops::health::Health,
};

/// How `/readyz` names the kind while it waits.
const KIND: &str = "secrets";
/// How logs name the watch of the key's Secret.
const WATCH: &str = "digest-key";
const FIRST_RETRY: Duration = Duration::from_secs(1);
const LONGEST_RETRY: Duration = Duration::from_secs(60);

/// Where the key's Secret is, as `(namespace, name)`.
pub type KeySecret = (String, String);

/// Items each time `key` changes to a key (not when it goes): then every
/// source must be compared again.
pub fn new_keys(key: &SharedDigestKey) -> impl Stream<Item = ()> + Send + use<> {
    stream::unfold(key.changes(), |mut changes| async move {
        loop {
            changes.changed().await.ok()?;
            if changes.borrow_and_update().is_some() {
                return Some(((), changes));
            }
        }
    })
}

/// Keeps `key` what the key's Secret holds, for as long as the process
/// runs; an error only if the watch cannot be set up.
pub async fn keep(
    config: &kube::Config,
    calls: Client,
    (namespace, name): KeySecret,
    key: SharedDigestKey,
    initial_list: InitialList,
    health: Arc<Health>,
) -> anyhow::Result<()> {
    let mut watch_config = config.clone();
    // The watch retries on its own, with backoff.
    watch_config.default_retry = false;
    let watch_client = api_client::for_watch(&watch_config, || {})?;
    let events = watch_stream::events(
        Api::<Secret>::namespaced(watch_client, &namespace),
        watcher::Config::default().fields(&format!("metadata.name={name}")),
        initial_list,
        WATCH,
        health.clone(),
    );
    let mut keeper = Keeper {
        secrets: Api::namespaced(calls, &namespace),
        place: format!("{namespace}/{name}"),
        name,
        key,
        health,
        told: None,
        had_key: false,
        listing: None,
        create_retry: None,
    };
    keeper.waiting("reading the digest key".into(), false);
    let mut events = std::pin::pin!(events);
    loop {
        let retry_at = keeper.create_retry.map(|(at, _)| at);
        tokio::select! {
            event = events.next() => match event {
                Some(event) => keeper.observe(event).await,
                None => anyhow::bail!("the watch of the digest key ended"),
            },
            () = sleep_until(retry_at), if retry_at.is_some() => keeper.create().await,
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at.into()).await;
    }
}

struct Keeper {
    /// The key's namespace, through the client for calls.
    secrets: Api<Secret>,
    /// `namespace/name`, as messages name the key's Secret.
    place: String,
    name: String,
    key: SharedDigestKey,
    health: Arc<Health>,
    /// The reason last told, so that each is told once.
    told: Option<String>,
    /// Whether this process has used a key yet.
    had_key: bool,
    /// While the watch (re)lists: the Secret found so far, if any.
    listing: Option<Option<Secret>>,
    /// While the Secret is missing and making it failed: when to try
    /// again, and the wait after that.
    create_retry: Option<(Instant, Duration)>,
}

impl Keeper {
    async fn observe(&mut self, event: Result<Event<Secret>, watcher::Error>) {
        match event {
            Ok(Event::Init) => self.listing = Some(None),
            Ok(Event::InitApply(secret)) => self.listing = Some(Some(secret)),
            Ok(Event::InitDone) => {
                if let Some(found) = self.listing.take() {
                    self.found(found).await;
                }
            }
            Ok(Event::Apply(secret)) => self.found(Some(secret)).await,
            Ok(Event::Delete(_)) => self.found(None).await,
            // A key in use stays in use: that the watch fails says nothing
            // of the Secret, and the next list tells what became of it.
            Err(error) if self.key.current().is_some() => {
                tracing::debug!(watch = WATCH, error = %describe_watch(&error), "watch failed; retrying with backoff");
            }
            Err(error) => {
                let reason = format!(
                    "cannot read the digest key {}: {}",
                    self.place,
                    describe_watch(&error)
                );
                self.waiting(reason, true);
            }
        }
    }

    /// The key's Secret as it is now (None: there is none).
    async fn found(&mut self, secret: Option<Secret>) {
        let Some(secret) = secret else {
            if self.key.set(None) {
                tracing::warn!(secret = %self.place, "the digest key was deleted: a new one is made");
            }
            self.create_retry = None;
            return self.create().await;
        };
        self.create_retry = None;
        match key_in(&secret) {
            Ok(key) => {
                self.use_key(key);
                self.mark_own(&secret).await;
            }
            Err(refusal) => {
                self.key.set(None);
                let reason = format!(
                    "the digest key {} is refused: {refusal}; it is left as it is: fix it, or \
                     delete it to have a new key made",
                    self.place
                );
                self.waiting(reason, true);
            }
        }
    }

    fn use_key(&mut self, key: SecretDigestKey) {
        let changed = self.key.set(Some(key));
        self.health.kind_waiting(KIND, None);
        self.told = None;
        match (changed, self.had_key) {
            (false, _) => {}
            (true, false) => {
                tracing::info!(secret = %self.place, "Secret mirroring started: digest key read")
            }
            (true, true) => tracing::info!(
                secret = %self.place,
                "the digest key changed: every Secret copy is written once more, under the new key"
            ),
        }
        self.had_key = true;
    }

    /// Labels the key's Secret as the install's own when it is not: a key
    /// made before the controller marked its keys (by an earlier release),
    /// or by hand. Every install then refuses it as a source, not only the
    /// one whose key it is. Replaced as read (an update, the verb the
    /// controller has on Secrets), so that a newer version is never
    /// overwritten: a failure is told, and the label tried again at the
    /// key's next change or list; the key is used meanwhile.
    async fn mark_own(&self, secret: &Secret) {
        let labels = secret.metadata.labels.as_ref();
        if labels.is_some_and(|labels| labels.contains_key(INSTALL_OWNED_LABEL)) {
            return;
        }
        let mut marked = secret.clone();
        marked
            .metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(INSTALL_OWNED_LABEL.into(), DIGEST_KEY_ROLE.into());
        let replaced = self
            .secrets
            .replace(&self.name, &PostParams::default(), &marked)
            .await;
        match replaced {
            Ok(_) => tracing::info!(
                secret = %self.place,
                "the digest key is labelled {INSTALL_OWNED_LABEL}={DIGEST_KEY_ROLE}: no install \
                 copies it"
            ),
            // Changed since read (another replica labelled it, say): the
            // watch delivers the newer version, looked at again.
            Err(kube::Error::Api(status)) if status.code == 409 => {
                tracing::debug!(secret = %self.place, "the digest key changed before it was labelled")
            }
            Err(error) => tracing::warn!(
                secret = %self.place,
                error = %describe(&error),
                "cannot label the digest key {INSTALL_OWNED_LABEL}={DIGEST_KEY_ROLE}; this \
                 install still never copies it, another install might"
            ),
        }
    }

    /// Makes the key's Secret, unless another replica did first: the watch
    /// then delivers theirs.
    async fn create(&mut self) {
        let created = self
            .secrets
            .create(&PostParams::default(), &new_key_secret(&self.name))
            .await;
        match created {
            Ok(secret) => {
                tracing::info!(secret = %self.place, "digest key created");
                self.create_retry = None;
                // Made here, from 32 random bytes: never refused.
                if let Ok(key) = key_in(&secret) {
                    self.use_key(key);
                }
            }
            Err(kube::Error::Api(status)) if status.is_already_exists() => {
                self.create_retry = None;
                self.waiting("reading the digest key another replica made".into(), false);
            }
            Err(error) => {
                let wait = self.create_retry.map_or(FIRST_RETRY, |(_, wait)| wait);
                self.create_retry = Some((Instant::now() + wait, (wait * 2).min(LONGEST_RETRY)));
                let reason = format!(
                    "cannot create the digest key {}: {}",
                    self.place,
                    describe(&error)
                );
                self.waiting(reason, true);
            }
        }
    }

    /// No key can be used now, for `reason`: `/readyz` says so, and the
    /// log too (once per reason) when it is a problem.
    fn waiting(&mut self, reason: String, problem: bool) {
        self.health.kind_waiting(KIND, Some(&reason));
        if problem && self.told.as_ref() != Some(&reason) {
            tracing::warn!(
                %reason,
                "Secrets are not mirrored until this is fixed (their copies are still removed \
                 when no longer wanted); ConfigMaps are"
            );
            self.told = Some(reason);
        }
    }
}

fn new_key_secret(name: &str) -> Secret {
    let mut key = vec![0u8; SecretDigestKey::LEN];
    rand::rng().fill_bytes(&mut key);
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            // Not the managed-by label: this is no copy, and must never be
            // taken for one. Marked as the install's own: never a source.
            labels: Some(BTreeMap::from([
                ("app.kubernetes.io/part-of".into(), MANAGER_NAME.into()),
                (INSTALL_OWNED_LABEL.into(), DIGEST_KEY_ROLE.into()),
            ])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(KEY_ENTRY.into(), ByteString(key))])),
        type_: Some("Opaque".into()),
        ..Secret::default()
    }
}

/// A failed watch, as it may be told. Names no Secret content.
fn describe_watch(error: &watcher::Error) -> String {
    match error {
        watcher::Error::InitialListFailed(error)
        | watcher::Error::WatchStartFailed(error)
        | watcher::Error::WatchFailed(error) => describe(error),
        watcher::Error::WatchError(status) => relayed::relayed(&status.message, status.code, true),
        watcher::Error::NoResourceVersion => error.to_string(),
    }
}

/// An API error as it may be told (see `relayed`): RBAC's refusal whole,
/// else who refused and the status code, never the Secret's content.
fn describe(error: &kube::Error) -> String {
    match error {
        // An admission policy refusing the key's Secret may quote the key.
        kube::Error::Api(status) => relayed::relayed(&status.message, status.code, true),
        kube::Error::SerdeError(parse) => api_client::unparsed(parse),
        other => other.to_string(),
    }
}
