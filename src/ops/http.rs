//! The one HTTP listener: /metrics, /healthz, /readyz.

use std::{sync::Arc, time::Instant};

use axum::{
    Router,
    extract::State,
    http::{StatusCode, header},
    response::IntoResponse,
    routing::get,
};
use tokio::net::TcpListener;

use crate::{ops::health::Health, ops::metrics::Metrics};

#[derive(Clone)]
struct Shared {
    metrics: Arc<Metrics>,
    health: Arc<Health>,
}

pub fn router(metrics: Arc<Metrics>, health: Arc<Health>) -> Router {
    Router::new()
        .route("/metrics", get(metrics_text))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(Shared { metrics, health })
}

/// Serves until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

async fn metrics_text(State(shared): State<Shared>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        shared.metrics.render(),
    )
}

async fn healthz(State(shared): State<Shared>) -> impl IntoResponse {
    match shared.health.liveness(Instant::now()) {
        Ok(note) => (StatusCode::OK, note),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why),
    }
}

async fn readyz(State(shared): State<Shared>) -> impl IntoResponse {
    match shared.health.readiness() {
        Ok(()) => (StatusCode::OK, "ok".to_owned()),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why),
    }
}
