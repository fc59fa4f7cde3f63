//! Kubernetes Events about sources, so that `kubectl describe` tells users
//! what the controller did and what it could not do.

use k8s_openapi::{
    api::{core::v1::ObjectReference, events::v1::Event as K8sEvent},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{
    Api, Client,
    api::PostParams,
    runtime::events::{Event, EventType, Recorder, Reporter},
};

use std::{
    sync::{Arc, Mutex, PoisonError},
    time::Instant,
};

use crate::{
    cluster::ratelimit::{NORMAL_EVENT_BURST, NORMAL_EVENTS_PER_SECOND, TokenBucket},
    contract::{MANAGER_NAME, MAX_NAME_LEN},
    kind::MirroredKind,
};

/// The Recorder names an Event `<object name>.<16 hex digits>`.
const EVENT_NAME_SUFFIX_LEN: usize = 17;

/// Publishes the Events about sources, each in the background.
#[derive(Clone)]
pub struct EventPublisher {
    recorder: Recorder,
    client: Client,
    instance: Option<String>,
    normal_budget: Arc<Mutex<TokenBucket>>,
}

impl EventPublisher {
    pub fn new(client: Client, instance: Option<String>) -> Self {
        let reporter = Reporter {
            controller: MANAGER_NAME.into(),
            instance: instance.clone(),
        };
        EventPublisher {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            instance,
            normal_budget: Arc::new(Mutex::new(TokenBucket::new(
                NORMAL_EVENTS_PER_SECOND,
                NORMAL_EVENT_BURST,
                Instant::now(),
            ))),
        }
    }

    /// Publishes in the background: an Event is worth a try, never a
    /// failed or delayed reconcile.
    pub fn publish(
        &self,
        regarding: ObjectReference,
        kind: EventType,
        reason: &'static str,
        note: String,
    ) {
        let event = Event {
            type_: kind,
            reason: reason.into(),
            note: Some(truncate(note)),
            action: reason.into(),
            secondary: None,
        };
        let long_name = regarding
            .name
            .as_ref()
            .is_some_and(|n| n.len() + EVENT_NAME_SUFFIX_LEN > MAX_NAME_LEN);
        let this = self.clone();
        tokio::spawn(async move {
            let published = if long_name {
                this.publish_for_long_name(&event, regarding).await
            } else {
                this.recorder.publish(&event, &regarding).await
            };
            if let Err(error) = published {
                tracing::debug!(%error, reason = event.reason, "could not publish event");
            }
        });
    }

    /// The Recorder would derive an invalid Event name from an object name
    /// this long, which is exactly when a Warning matters most (a source
    /// whose companion name is too long), so such Events are written here
    /// with a shortened name. They are not aggregated into series.
    async fn publish_for_long_name(
        &self,
        event: &Event,
        regarding: ObjectReference,
    ) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        let name = regarding.name.as_deref().unwrap_or(MANAGER_NAME);
        let prefix: String = name
            .chars()
            .take(MAX_NAME_LEN - EVENT_NAME_SUFFIX_LEN)
            .collect();
        let instance = self.instance.clone().unwrap_or_else(|| MANAGER_NAME.into());
        let k8s_event = K8sEvent {
            metadata: ObjectMeta {
                name: Some(format!("{prefix}.{:x}", now.as_nanosecond())),
                namespace: regarding.namespace.clone(),
                ..ObjectMeta::default()
            },
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            note: event.note.clone(),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            reporting_controller: Some(MANAGER_NAME.into()),
            reporting_instance: Some(instance),
            type_: Some(match event.type_ {
                EventType::Normal => "Normal".into(),
                EventType::Warning => "Warning".into(),
            }),
            ..K8sEvent::default()
        };
        let api: Api<K8sEvent> = Api::namespaced(
            self.client.clone(),
            regarding.namespace.as_deref().unwrap_or_default(),
        );
        api.create(&PostParams::default(), &k8s_event)
            .await
            .map(|_| ())
    }

    /// A Normal Event, unless too many were published just now: they
    /// repeat what the log says, and a cold start must not double the load
    /// on the API server.
    pub fn normal<K: MirroredKind>(&self, source: &K, reason: &'static str, note: String) {
        self.normal_about(source.object_ref(&()), reason, note);
    }

    pub fn normal_about(&self, regarding: ObjectReference, reason: &'static str, note: String) {
        let allowed = self
            .normal_budget
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .try_take(Instant::now());
        if allowed {
            self.publish(regarding, EventType::Normal, reason, note);
        } else {
            tracing::debug!(reason, "Normal Event skipped: too many at once");
        }
    }

    pub fn warning<K: MirroredKind>(&self, source: &K, reason: &'static str, note: String) {
        self.warning_about(source.object_ref(&()), reason, note);
    }

    pub fn warning_about(&self, regarding: ObjectReference, reason: &'static str, note: String) {
        self.publish(regarding, EventType::Warning, reason, note);
    }
}

/// The API server refuses an Event note over 1 KiB.
fn truncate(mut note: String) -> String {
    const MAX: usize = 1024;
    if note.len() > MAX {
        let mut end = MAX - 3;
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note.truncate(end);
        note.push_str("...");
    }
    note
}

#[cfg(test)]
mod tests {
    use super::truncate;

    #[test]
    fn long_notes_are_cut_to_what_the_api_server_accepts() {
        let note = truncate("é".repeat(1000));
        assert!(note.len() <= 1024);
        assert!(note.ends_with("..."));
        assert_eq!(truncate("short".into()), "short");
    }
}
