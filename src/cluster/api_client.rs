//! The connections to the API server, of two kinds.
//!
//! - Calls (writes, Lease reads and renewals, Events, probes) share one
//!   client, and each call is bounded by `--api-timeout`, retries and the
//!   response body included (`call_deadline`).
//!   kube's inferred configuration has no read timeout, so without this a
//!   call on a half-open connection would hang until TCP gives up, about 15
//!   minutes: a standby that never takes over, a reconcile slot stuck.
//! - Each watch has a client of its own with no such bound (a watch is
//!   long-lived by design; kube's watcher cuts one that stays idle past its
//!   server-side timeout). It reports every watch the API server accepts, so
//!   that health can tell a reconnected watch on a quiet cluster, which
//!   delivers no event, from one that keeps failing.
//!
//! Both are kube's client stack, built here for one difference: the
//! connections set TCP_NODELAY. kube's own connector leaves Nagle's
//! algorithm on, and the first request on every new connection then waits
//! about 40 ms for a delayed ACK (the TLS handshake's last flight and the
//! request are two small writes): the first heal after a start, or after a
//! pooled connection was idle, took ten times as long as the others.

use std::{
    path::Path,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use anyhow::Context as _;
use futures::future::BoxFuture;
use http::{Request, Response};
use http_body_util::BodyExt;
use hyper_timeout::TimeoutConnector;
use hyper_util::{
    client::legacy::{self, connect::HttpConnector},
    rt::TokioExecutor,
};
use kube::{
    Client, Config,
    client::{Body, ClientBuilder, ConfigExt, DynBody, retry::RetryPolicy},
    config::{KubeConfigOptions, Kubeconfig},
};
use tower::{
    BoxError, Layer, Service, ServiceBuilder, ServiceExt, retry::RetryLayer, util::BoxService,
};

use crate::cluster::call_deadline::CallDeadlineLayer;

/// The configuration kubectl would use: the kubeconfig file and context
/// given, else the usual resolution ($KUBECONFIG, ~/.kube/config, then the
/// in-cluster configuration).
pub async fn infer_config(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> anyhow::Result<Config> {
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..KubeConfigOptions::default()
    };
    match (kubeconfig, context) {
        (None, None) => Config::infer()
            .await
            .context("no Kubernetes configuration found (kubeconfig or in-cluster)"),
        (Some(path), _) => {
            let file = Kubeconfig::read_from(path)
                .with_context(|| format!("--kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(file, &options)
                .await
                .with_context(|| format!("--kubeconfig {}", path.display()))
        }
        (None, Some(context)) => Config::from_kubeconfig(&options)
            .await
            .with_context(|| format!("--context {context}")),
    }
}

/// The stack kube builds from a configuration (its connect, read and write
/// timeouts, retries of 429, 503 and 504 unless turned off, authentication
/// and extra headers), on connections that set TCP_NODELAY.
type Stack = BoxService<Request<Body>, Response<Box<DynBody>>, BoxError>;

fn builder(config: &Config) -> Result<ClientBuilder<Stack>, kube::Error> {
    // kube refuses a proxy it was built without support for, rather than
    // connecting around it; so does this stack.
    if let Some(proxy_url) = &config.proxy_url {
        return Err(kube::Error::ProxyProtocolUnsupported {
            proxy_url: Box::new(proxy_url.clone()),
        });
    }
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let https = config.rustls_https_connector_with_connector(http)?;
    let mut connector = TimeoutConnector::new(https);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let connections = legacy::Builder::new(TokioExecutor::new()).build(connector);
    let retries = config
        .default_retry
        .then(|| RetryLayer::new(RetryPolicy::server_retry()));
    let stack = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(retries)
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(connections)
        .map_response(|response: Response<_>| {
            response.map(|body| Box::new(body.map_err(BoxError::from)) as Box<DynBody>)
        })
        .boxed();
    Ok(ClientBuilder::new(stack, config.default_namespace.clone()))
}

/// The client for every call but the watches: each call, with kube's own
/// retries of 429/503/504, ends within `timeout`.
pub fn calls(config: &Config, timeout: Duration) -> anyhow::Result<Client> {
    let builder = builder(config).context("building the API client")?;
    Ok(builder.with_layer(&CallDeadlineLayer { timeout }).build())
}

/// A client for one watch; `connected` runs each time the API server
/// accepts a watch request made through it.
pub fn for_watch(
    config: &Config,
    connected: impl Fn() + Send + Sync + 'static,
) -> anyhow::Result<Client> {
    let builder = builder(config).context("building a watch client")?;
    let layer = WatchAcceptedLayer {
        connected: Arc::new(connected),
    };
    Ok(builder.with_layer(&layer).build())
}

type Callback = Arc<dyn Fn() + Send + Sync>;

struct WatchAcceptedLayer {
    connected: Callback,
}

impl<S> Layer<S> for WatchAcceptedLayer {
    type Service = WatchAccepted<S>;

    fn layer(&self, inner: S) -> Self::Service {
        WatchAccepted {
            inner,
            connected: self.connected.clone(),
        }
    }
}

#[derive(Clone)]
pub struct WatchAccepted<S> {
    inner: S,
    connected: Callback,
}

impl<S, B> Service<Request<Body>> for WatchAccepted<S>
where
    S: Service<Request<Body>, Response = Response<B>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let watch = is_watch(request.uri().query());
        let connected = self.connected.clone();
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            // Headers only: a watch's status arrives before any event.
            if watch && response.status().is_success() {
                connected();
            }
            Ok(response)
        })
    }
}

/// Whether a request's query string asks for a watch.
fn is_watch(query: Option<&str>) -> bool {
    query.is_some_and(|query| {
        query
            .split('&')
            .any(|pair| pair == "watch=true" || pair == "watch=1")
    })
}

/// A response that could not be parsed (a faulty proxy), told by where the
/// parse failed only: serde's own message quotes what it found there, which
/// may be a Secret's value.
pub fn unparsed(error: &serde_json::Error) -> String {
    format!(
        "the response could not be parsed ({:?} error at line {} column {})",
        error.classify(),
        error.line(),
        error.column()
    )
}

#[cfg(test)]
mod tests {
    use super::is_watch;

    #[test]
    fn only_watch_requests_count_as_watches() {
        assert!(is_watch(Some(
            "&watch=true&timeoutSeconds=290&allowWatchBookmarks=true"
        )));
        assert!(is_watch(Some("labelSelector=a%3Db&watch=1")));
        assert!(!is_watch(Some("labelSelector=watch%3Dtrue&limit=500")));
        assert!(!is_watch(None));
    }
}
