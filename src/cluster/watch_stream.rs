//! One watch's event stream, and what its errors mean.
//!
//! The first list of a watch is streamed as watch events where the API
//! server allows it (WatchList), because a single list response of 10,000
//! ConfigMaps is decoded whole and the allocator keeps that peak. Servers
//! with the WatchList feature gate off (the default on Kubernetes 1.33)
//! refuse such a watch with 422 on every attempt; in `auto` mode that watch
//! then lists instead, for the rest of the process's life.
//!
//! Between attempts a watch waits out kube's default backoff (0.8 s,
//! doubling to 30 s, with jitter), unless `health` asks the failing watches
//! to retry at once because the API server answers again after an outage.

use std::{fmt::Debug, sync::Arc, time::Duration};

use futures::{Stream, StreamExt, stream::BoxStream};
use k8s_openapi::serde::de::DeserializeOwned;
use kube::{
    Api, Resource,
    runtime::{
        utils::Backoff,
        watcher::{self, DefaultBackoff, Event},
    },
};

use crate::{
    cluster::api_client,
    ops::config::InitialList,
    ops::health::{ErrorSource, Health},
};

type Events<K> = BoxStream<'static, Result<Event<K>, watcher::Error>>;

/// The events of one watch, retried with backoff.
pub fn events<K>(
    api: Api<K>,
    config: watcher::Config,
    initial_list: InitialList,
    watch: &'static str,
    health: Arc<Health>,
) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + use<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let events: Events<K> = match initial_list {
        InitialList::Stream => watcher::watcher(api, config.streaming_lists()).boxed(),
        InitialList::List => watcher::watcher(api, config.any_semantic()).boxed(),
        InitialList::Auto => streaming_or_listing(api, config, watch).boxed(),
    };
    with_backoff(events, watch, health)
}

/// After each error, waits kube's default backoff before the next attempt,
/// as kube's own `default_backoff` does, or until `health` asks the failing
/// watches to retry.
fn with_backoff<K>(
    events: Events<K>,
    watch: &'static str,
    health: Arc<Health>,
) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send
where
    K: Send + 'static,
{
    let retrying = Retrying {
        events,
        backoff: DefaultBackoff::default(),
        wait: None,
    };
    futures::stream::unfold(retrying, move |mut retrying| {
        let health = health.clone();
        async move {
            if let Some(wait) = retrying.wait.take() {
                let retry_requested = health.retry_requested();
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = retry_requested => {
                        tracing::info!(watch, "the API server answers again; retrying now");
                    }
                }
            }
            let item = retrying.events.next().await?;
            match &item {
                Ok(_) => retrying.backoff.reset(),
                // kube's default backoff never gives up.
                Err(_) => retrying.wait = Some(retrying.backoff.next().unwrap_or(MAX_BACKOFF)),
            }
            Some((item, retrying))
        }
    })
}

/// The longest wait of kube's default backoff.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

struct Retrying<K> {
    events: Events<K>,
    backoff: DefaultBackoff,
    /// How long to wait before the next attempt, after an error.
    wait: Option<Duration>,
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

/// The error as logs and `/readyz` tell it: a response that could not be
/// parsed is told by where only (see [`api_client::unparsed`]).
pub fn described(error: &watcher::Error) -> String {
    let (what, parse) = match error {
        watcher::Error::InitialListFailed(kube::Error::SerdeError(e)) => {
            ("failed to perform initial object list", e)
        }
        watcher::Error::WatchStartFailed(kube::Error::SerdeError(e)) => {
            ("failed to start watching", e)
        }
        watcher::Error::WatchFailed(kube::Error::SerdeError(e)) => ("watch stream failed", e),
        _ => return error.to_string(),
    };
    format!("{what}: {}", api_client::unparsed(parse))
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
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::core::Status;
    use std::task::Poll;

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

    /// On tokio's paused clock, which moves only when told to.
    #[tokio::test(start_paused = true)]
    async fn a_failing_watch_waits_out_its_backoff_unless_asked_to_retry() {
        let health = Arc::new(Health::new(Duration::from_secs(5)));
        let refused = || {
            Err(watcher::Error::WatchStartFailed(kube::Error::Service(
                "connection refused".into(),
            )))
        };
        let failures: Events<ConfigMap> = futures::stream::repeat_with(refused).boxed();
        let mut events = std::pin::pin!(with_backoff(failures, "sources", health.clone()));
        assert!(matches!(events.next().await, Some(Err(_))));
        {
            // The first backoff is 0.8 s or more.
            let mut next = std::pin::pin!(events.next());
            assert!(futures::poll!(next.as_mut()).is_pending());
            tokio::time::advance(Duration::from_millis(700)).await;
            assert!(futures::poll!(next.as_mut()).is_pending());
            tokio::time::advance(Duration::from_secs(2)).await;
            assert!(matches!(
                futures::poll!(next.as_mut()),
                Poll::Ready(Some(Err(_)))
            ));
        }
        let now = std::time::Instant::now();
        health.watch_failed("sources", "refused".into(), ErrorSource::Link, now);
        let mut next = std::pin::pin!(events.next());
        assert!(futures::poll!(next.as_mut()).is_pending());
        assert!(health.probe_answered(now));
        // At once, the clock still.
        assert!(matches!(
            futures::poll!(next.as_mut()),
            Poll::Ready(Some(Err(_)))
        ));
    }

    #[test]
    fn a_response_that_cannot_be_parsed_is_told_by_where_only() {
        let parse = serde_json::from_str::<k8s_openapi::api::core::v1::Secret>(
            r#"{"data": {"password": 42}}"#,
        )
        .unwrap_err();
        assert!(
            parse.to_string().contains("42"),
            "serde quotes what it found"
        );
        let told = described(&watcher::Error::InitialListFailed(kube::Error::SerdeError(
            parse,
        )));
        assert!(!told.contains("42"), "{told}");
        assert!(
            told.starts_with(
                "failed to perform initial object list: the response could not be parsed"
            ),
            "{told}"
        );
    }
}
