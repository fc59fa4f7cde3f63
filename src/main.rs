#![forbid(unsafe_code)]

use std::process::ExitCode;

use configmap_mirror::{
    app,
    ops::{
        cli::{Cli, Command},
        config::Config,
        probe, telemetry,
    },
};
use tokio::runtime::{Builder, Runtime};

fn main() -> ExitCode {
    let cli = Cli::from_args();
    match cli.command {
        None => controller(cli.controller),
        Some(Command::Probe(args)) => probe::run(&args),
    }
}

fn controller(config: Config) -> ExitCode {
    telemetry::init(config.log_format, &config.log_level);
    let result = runtime(config.worker_threads)
        .map_err(anyhow::Error::from)
        .and_then(|runtime| runtime.block_on(app::run(config)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error:#}");
            ExitCode::FAILURE
        }
    }
}

fn runtime(worker_threads: u16) -> std::io::Result<Runtime> {
    let mut builder = match worker_threads {
        1 => Builder::new_current_thread(),
        n => {
            let mut builder = Builder::new_multi_thread();
            builder.worker_threads(n.into());
            builder
        }
    };
    builder.enable_all().build()
}
