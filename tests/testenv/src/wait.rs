//! Polling for eventually-true conditions.

use std::time::Duration;

use anyhow::bail;
use tokio::time::Instant;

const POLL: Duration = Duration::from_millis(100);

/// Polls `f` until it returns `Some`, for at most `timeout`. A call to `f`
/// that hangs counts against the timeout too. The error names `what`.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        match tokio::time::timeout_at(deadline, f()).await {
            Ok(Some(value)) => return Ok(value),
            Ok(None) if Instant::now() + POLL < deadline => tokio::time::sleep(POLL).await,
            _ => bail!("timed out after {timeout:?} waiting for {what}"),
        }
    }
}
