#![forbid(unsafe_code)]

use std::process::ExitCode;

use configmap_mirror::{
    app, explain,
    ops::{
        cli::{self, Invocation},
        config::Config,
        probe, telemetry,
    },
};
use tokio::runtime::{Builder, Runtime};

fn main() -> ExitCode {
    match Invocation::from_args() {
        Invocation::Controller(config) => controller(*config),
        Invocation::Explain(args) => match runtime(1) {
            Ok(runtime) => runtime.block_on(explain::run(*args)),
            Err(error) => {
                eprintln!("error: {error}");
                ExitCode::FAILURE
            }
        },
        Invocation::Probe(args) => probe::run(&args),
        Invocation::Crd => cli::print_crds(),
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
