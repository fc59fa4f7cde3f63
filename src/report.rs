//! Kubernetes Events about sources, so that `kubectl describe` tells users
//! what the controller did and what it could not do.

use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use kube::{
    Client, Resource,
    runtime::events::{Event, EventType, Recorder, Reporter as EventSource},
};

use crate::desired::MANAGER_NAME;

#[derive(Clone)]
pub struct Reporter {
    recorder: Recorder,
}

impl Reporter {
    pub fn new(client: Client, instance: Option<String>) -> Self {
        let source = EventSource {
            controller: MANAGER_NAME.into(),
            instance,
        };
        Reporter {
            recorder: Recorder::new(client, source),
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
        let recorder = self.recorder.clone();
        tokio::spawn(async move {
            let event = Event {
                type_: kind,
                reason: reason.into(),
                note: Some(truncate(note)),
                action: reason.into(),
                secondary: None,
            };
            if let Err(error) = recorder.publish(&event, &regarding).await {
                tracing::debug!(%error, reason, "could not publish event");
            }
        });
    }

    pub fn normal(&self, source: &ConfigMap, reason: &'static str, note: String) {
        self.publish(source.object_ref(&()), EventType::Normal, reason, note);
    }

    pub fn warning(&self, source: &ConfigMap, reason: &'static str, note: String) {
        self.publish(source.object_ref(&()), EventType::Warning, reason, note);
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
