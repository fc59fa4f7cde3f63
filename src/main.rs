#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use configmap_mirror::{app, config::Config, telemetry};

#[tokio::main]
async fn main() -> ExitCode {
    let config = Config::parse();
    telemetry::init(config.log_format);
    match app::run(config).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error:#}");
            ExitCode::FAILURE
        }
    }
}
