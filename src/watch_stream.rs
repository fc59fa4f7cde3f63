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

/// Whether the API server refused the watch on its own terms, is
/// overloaded or without its storage (429, 5xx), or the link failed.
pub fn error_source(error: &watcher::Error) -> ErrorSource {
    match error {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => match e {
            kube::Error::Api(status) => ErrorSource::of_status(status.code),
            _ => ErrorSource::Link,
        },
        watcher::Error::WatchError(status) => ErrorSource::of_status(status.code),
        watcher::Error::NoResourceVersion => ErrorSource::Refused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixtures::mk_api_error;
    use kube::core::Status;

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
    fn refusals_are_answers_and_transport_errors_are_lost_links() {
        let answered =
            watcher::Error::InitialListFailed(mk_api_error(403, "Forbidden", "forbidden"));
        assert_eq!(error_source(&answered), ErrorSource::Refused);
        let expired = watcher::Error::WatchError(Box::new(
            Status::failure("too old resource version", "Expired").with_code(410),
        ));
        assert_eq!(error_source(&expired), ErrorSource::Refused);
        let lost =
            watcher::Error::WatchStartFailed(kube::Error::Service("connection refused".into()));
        assert_eq!(error_source(&lost), ErrorSource::Link);
    }

    #[test]
    fn overload_and_server_errors_are_outages() {
        let rejected = watcher::Error::WatchStartFailed(mk_api_error(
            429,
            "Failed to parse error data",
            "Too many requests, please try again later.",
        ));
        assert_eq!(error_source(&rejected), ErrorSource::Unavailable);
        let timed_out = watcher::Error::InitialListFailed(mk_api_error(
            504,
            "Timeout",
            "Timeout: request did not complete within requested timeout",
        ));
        assert_eq!(error_source(&timed_out), ErrorSource::Unavailable);
        let storage = watcher::Error::WatchError(Box::new(
            Status::failure("etcdserver: request timed out", "InternalError").with_code(500),
        ));
        assert_eq!(error_source(&storage), ErrorSource::Unavailable);
    }
}
