//! The MirrorGrants' watch, which every kind's consent shares with the
//! namespace watch: its events update the grant index, and each change of
//! a namespace's grants is delivered to the kinds as an event of that
//! namespace (`Namespaces::grants_changed`).
//!
//! The grants are watched whole (they are small, and the index keeps only
//! what consent reads), read leniently: a grant this version cannot read
//! is kept as one that lets nothing in, logged, and told of in a Warning
//! on it by the leader, once per generation. A watch that fails leaves the
//! grants as last known, or not known at all before a first list, and
//! `health` says so (readiness waits for the grants' first list). Only the
//! API server's discovery saying that no version of the group serves
//! MirrorGrants (their CRD is not installed) says that no grant exists: a
//! 404 alone does not, as a proxy or a version no longer served gives one
//! too.

use std::{collections::HashMap, sync::Arc, time::Instant};

use futures::Stream;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{ApiResource, DynamicObject},
    runtime::{
        WatchStreamExt,
        watcher::{self, Event},
    },
};

use super::forward;
use crate::{
    api::mirror_grant::MirrorGrant,
    cluster::events::EventPublisher,
    contract::warning,
    decisions::grants::Grant,
    index::grants::{GrantChange, GrantIndex},
    ops::health::Health,
    ops::leader::Leadership,
};

/// Who tells of a grant that cannot be read: the leader, by Warning Event.
#[derive(Clone)]
pub struct GrantWarnings {
    pub events: EventPublisher,
    pub leadership: Leadership,
}

/// The grants' watch, in the logs, metrics and readiness.
pub(super) const GRANTS: &str = "mirrorgrants";

/// Grants per page of a list: a grant's annotations may be large.
const LIST_PAGE: u32 = 100;

/// The events of every MirrorGrant, retried with kube's default backoff.
pub(super) fn events(
    client: Client,
) -> impl Stream<Item = Result<Event<DynamicObject>, watcher::Error>> + Send + use<> {
    let resource = ApiResource::erase::<MirrorGrant>(&());
    let api = Api::<DynamicObject>::all_with(client, &resource);
    watcher::watcher(api, watcher::Config::default().page_size(LIST_PAGE)).default_backoff()
}

/// Follows the grants' watch: its events into the index, how it fares
/// into `health`.
pub(super) struct GrantWatch {
    /// Reads the API server's discovery after a 404.
    client: Client,
    health: Arc<Health>,
    warnings: GrantWarnings,
    /// The generation of each malformed grant told of, by uid: a relist
    /// tells nothing again.
    told: HashMap<String, Option<i64>>,
}

impl GrantWatch {
    pub(super) fn new(client: Client, health: Arc<Health>, warnings: GrantWarnings) -> GrantWatch {
        GrantWatch {
            client,
            health,
            warnings,
            told: HashMap::new(),
        }
    }

    pub(super) async fn follow(
        &mut self,
        event: Result<Event<DynamicObject>, watcher::Error>,
        grants: &GrantIndex,
    ) -> GrantChange {
        if let Err(error) = &event
            && is_not_found(error)
            && self.not_installed().await
        {
            self.health.watch_ok(GRANTS, Instant::now());
            self.health.cache_synced(GRANTS);
            return grants.none_exist();
        }
        let Some(event) = forward::observed(GRANTS, event, &self.health) else {
            return GrantChange::Nothing;
        };
        match &event {
            Event::Apply(grant) | Event::InitApply(grant) => self.tell_if_malformed(grant),
            Event::Delete(grant) => {
                self.told.remove(&grant.uid().unwrap_or_default());
            }
            Event::InitDone => self.health.cache_synced(GRANTS),
            Event::Init => {}
        }
        grants.follow(&event)
    }

    /// Whether discovery says that no version of the group serves
    /// MirrorGrants; false when it cannot be read.
    async fn not_installed(&self) -> bool {
        let group = MirrorGrant::group(&());
        let Ok(groups) = self.client.list_api_groups().await else {
            return false;
        };
        let Some(served) = groups.groups.iter().find(|g| g.name == group) else {
            return true;
        };
        for version in &served.versions {
            match self
                .client
                .list_api_group_resources(&version.group_version)
                .await
            {
                Ok(resources) => {
                    let plural = MirrorGrant::plural(&());
                    if resources.resources.iter().any(|r| r.name == plural) {
                        return false;
                    }
                }
                Err(_) => return false,
            }
        }
        true
    }

    /// Logs a grant that cannot be read, and has the leader tell of it
    /// once per generation.
    fn tell_if_malformed(&mut self, object: &DynamicObject) {
        let grant = Grant::parse(&object.name_any(), object.data.get("spec"));
        let uid = object.uid().unwrap_or_default();
        let Some(why) = grant.malformed() else {
            self.told.remove(&uid);
            return;
        };
        let generation = object.metadata.generation;
        if self.told.get(&uid) == Some(&generation) {
            return;
        }
        let namespace = object.namespace().unwrap_or_default();
        tracing::warn!(
            grant = %format!("{namespace}/{}", grant.name()),
            %why,
            "MirrorGrant lets nothing in until it is fixed"
        );
        if !self.warnings.leadership.is_leading() {
            return;
        }
        self.told.insert(uid.clone(), generation);
        let regarding = ObjectReference {
            api_version: Some("mirror.workshop.io/v1alpha1".into()),
            kind: Some("MirrorGrant".into()),
            namespace: Some(namespace),
            name: Some(grant.name().to_owned()),
            uid: Some(uid),
            ..ObjectReference::default()
        };
        self.warnings.events.warning_about(
            regarding,
            warning::INVALID_MIRROR_GRANT,
            format!("{why}; this grant lets nothing in until it is fixed"),
        );
    }
}

/// Whether the API server answered 404: MirrorGrants may not be served.
fn is_not_found(error: &watcher::Error) -> bool {
    let api_error = match error {
        watcher::Error::InitialListFailed(error)
        | watcher::Error::WatchStartFailed(error)
        | watcher::Error::WatchFailed(error) => error,
        _ => return false,
    };
    matches!(api_error, kube::Error::Api(status) if status.code == 404)
}
