//! One deadline for a whole API call: the response's headers *and* its
//! body. A timeout on the response future alone ends when the headers
//! arrive; a connection that goes half-open while the body streams (a
//! copy near 1 MiB, a load balancer that drops the API server) would then
//! hang the call, and with it that object's reconcile, for good.

use std::{
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{Request, Response};
use http_body::{Body as HttpBody, Frame, SizeHint};
use kube::client::Body;
use tokio::time::{Instant, Sleep};
use tower::{BoxError, Layer, Service};

/// Bounds each call, body included, by `timeout` from when it was made.
#[derive(Debug, Clone, Copy)]
pub struct CallDeadlineLayer {
    pub timeout: Duration,
}

impl<S> Layer<S> for CallDeadlineLayer {
    type Service = CallDeadline<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CallDeadline {
            inner,
            timeout: self.timeout,
        }
    }
}

#[derive(Debug, Clone)]
pub struct CallDeadline<S> {
    inner: S,
    timeout: Duration,
}

/// The call did not complete within `--api-timeout`.
#[derive(Debug, thiserror::Error)]
#[error("the API call did not complete within {0:?}")]
pub struct CallTimedOut(pub Duration);

impl<S, B> Service<Request<Body>> for CallDeadline<S>
where
    S: Service<Request<Body>, Response = Response<B>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: HttpBody<Data = Bytes> + Unpin + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<DeadlineBody<B>>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let timeout = self.timeout;
        let deadline = Instant::now() + timeout;
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = tokio::time::timeout_at(deadline, response)
                .await
                .map_err(|_| CallTimedOut(timeout))?
                .map_err(Into::into)?;
            Ok(response.map(|body| DeadlineBody {
                inner: body,
                deadline: Box::pin(tokio::time::sleep_until(deadline)),
                timeout,
            }))
        })
    }
}

/// A response body that fails once the call's deadline has passed.
pub struct DeadlineBody<B> {
    inner: B,
    deadline: Pin<Box<Sleep>>,
    timeout: Duration,
}

impl<B> HttpBody for DeadlineBody<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        match this.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(CallTimedOut(this.timeout).into()))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use futures::future;
    use http_body_util::BodyExt;

    use super::*;

    /// A body that sends one frame, then never another.
    struct Stalled {
        sent: bool,
    }

    impl HttpBody for Stalled {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            if self.sent {
                Poll::Pending
            } else {
                self.sent = true;
                Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"{\"kind\":")))))
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_stalls_after_the_headers_fails_at_the_deadline() {
        let mut service = CallDeadlineLayer {
            timeout: Duration::from_secs(10),
        }
        .layer(tower::service_fn(|_: Request<Body>| {
            future::ready(Ok::<_, Infallible>(Response::new(Stalled { sent: false })))
        }));
        let response = service
            .call(Request::new(Body::empty()))
            .await
            .expect("the headers arrive");
        let Err(error) = response.into_body().collect().await else {
            panic!("the body completed despite the stall");
        };
        assert!(error.to_string().contains("within 10s"), "{error}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_completes_in_time_is_passed_whole() {
        let mut service = CallDeadlineLayer {
            timeout: Duration::from_secs(10),
        }
        .layer(tower::service_fn(|_: Request<Body>| {
            future::ready(Ok::<_, Infallible>(Response::new(
                http_body_util::Full::new(Bytes::from_static(b"{}")),
            )))
        }));
        let response = service
            .call(Request::new(Body::empty()))
            .await
            .expect("headers");
        let body = response
            .into_body()
            .collect()
            .await
            .expect("the body")
            .to_bytes();
        assert_eq!(body, Bytes::from_static(b"{}"));
    }
}
