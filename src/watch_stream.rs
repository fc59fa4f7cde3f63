//! One watch's event stream, and what its errors mean.
//!
//! The first list of a watch is streamed as watch events where the API
//! server allows it (WatchList), because a single list response of 10,000
//! ConfigMaps is decoded whole and the allocator keeps that peak. Servers
//! with the WatchList feature gate off (the default on Kubernetes 1.33)
//! refuse such a watch with 422 on every attempt; in `auto` mode that watch
//! then lists instead, for the rest of the process's life.

use std::fmt::Debug;

use futures::{Stream, StreamExt, stream::BoxStream};
use k8s_openapi::serde::de::DeserializeOwned;
use kube::{
    Api, Resource,
    runtime::{
        WatchStreamExt,
        watcher::{self, Event},
    },
};

use crate::{config::InitialList, health::ErrorSource};

type Events<K> = BoxStream<'static, Result<Event<K>, watcher::Error>>;

/// The events of one watch, retried with kube's default backoff.
pub fn events<K>(
    api: Api<K>,
    config: watcher::Config,
    initial_list: InitialList,
    watch: &'static str,
) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + use<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let events: Events<K> = match initial_list {
        InitialList::Stream => watcher::watcher(api, config.streaming_lists()).boxed(),
        InitialList::List => watcher::watcher(api, config.any_semantic()).boxed(),
        InitialList::Auto => streaming_or_listing(api, config, watch).boxed(),
    };
    events.default_backoff()
}

/// Streams the first list until the API server refuses that, then lists.
fn streaming_or_listing<K>(
    api: Api<K>,
    config: watcher::Config,
    watch: &'static str,
) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let streaming: Events<K> =
        watcher::watcher(api.clone(), config.clone().streaming_lists()).boxed();
    let fallback = Some((api, config));
    futures::stream::unfold(
        (streaming, fallback),
        move |(mut events, mut fallback)| async move {
            loop {
                let item = events.next().await?;
                if let Err(error) = &item
                    && streaming_refused(error)
                    && let Some((api, config)) = fallback.take()
                {
                    tracing::info!(
                        watch,
                        %error,
                        "the API server does not stream initial lists (WatchList is off); this watch lists instead"
                    );
                    events = watcher::watcher(api, config.any_semantic()).boxed();
                    continue;
                }
                return Some((item, (events, fallback)));
            }
        },
    )
}

/// Whether the API server refused a streamed initial list, as servers with
/// the WatchList feature gate off do: "sendInitialEvents is forbidden for
/// watch unless the WatchList feature gate is enabled" (422).
pub fn streaming_refused(error: &watcher::Error) -> bool {
    let watcher::Error::WatchStartFailed(kube::Error::Api(status)) = error else {
        return false;
    };
    matches!(status.code, 400 | 422)
        && (status.message.contains("sendInitialEvents") || status.message.contains("WatchList"))
}

/// Whether the API server answered (a status of its own) or the link failed.
pub fn error_source(error: &watcher::Error) -> ErrorSource {
    match error {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => match e {
            kube::Error::Api(_) => ErrorSource::ApiServer,
            _ => ErrorSource::Link,
        },
        watcher::Error::WatchError(_) | watcher::Error::NoResourceVersion => ErrorSource::ApiServer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixtures::mk_api_error;

    const GATE_OFF: &str =
        "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled";

    #[test]
    fn a_refused_streaming_list_is_recognised() {
        let refused = watcher::Error::WatchStartFailed(mk_api_error(422, "Invalid", GATE_OFF));
        assert!(streaming_refused(&refused));
    }

    #[test]
    fn other_failures_are_not_a_refused_streaming_list() {
        let forbidden =
            watcher::Error::WatchStartFailed(mk_api_error(403, "Forbidden", "forbidden"));
        assert!(!streaming_refused(&forbidden));
        let invalid =
            watcher::Error::WatchStartFailed(mk_api_error(422, "Invalid", "bad selector"));
        assert!(!streaming_refused(&invalid));
        let list = watcher::Error::InitialListFailed(mk_api_error(422, "Invalid", GATE_OFF));
        assert!(!streaming_refused(&list));
    }

    #[test]
    fn api_statuses_are_answers_and_transport_errors_are_lost_links() {
        let answered =
            watcher::Error::InitialListFailed(mk_api_error(403, "Forbidden", "forbidden"));
        assert_eq!(error_source(&answered), ErrorSource::ApiServer);
        let lost =
            watcher::Error::WatchStartFailed(kube::Error::Service("connection refused".into()));
        assert_eq!(error_source(&lost), ErrorSource::Link);
    }
}
