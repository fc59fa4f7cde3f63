//! The command line. With no subcommand, `configmap-mirror [FLAGS]` runs the
//! controller ([`Config`]); a subcommand runs one of the small tools the
//! same binary carries, for images that hold nothing else.

use clap::{CommandFactory, Parser, Subcommand};

use crate::ops::{config::Config, probe::ProbeArgs};

#[derive(Debug, Parser)]
#[command(
    name = "configmap-mirror",
    version,
    about = "Keeps an exact, self-healing copy of labeled ConfigMaps",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub controller: Config,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// GET an http:// URL; exit 0 on a 2xx answer
    ///
    /// Any other answer, or none, prints why on one line and exits 1. For
    /// checks from this image, which has no shell nor curl (the Helm
    /// chart's `helm test`).
    Probe(ProbeArgs),
}

impl Cli {
    /// The command line of this process. Controller flags that can never
    /// work, alone or together, end it with a message naming them and exit
    /// code 2, as every malformed flag does.
    pub fn from_args() -> Cli {
        let cli = Cli::parse();
        if cli.command.is_none()
            && let Err(why) = cli.controller.leader.validate()
        {
            Cli::command()
                .error(clap::error::ErrorKind::ArgumentConflict, why)
                .exit();
        }
        cli
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_subcommand_is_the_controller_and_flags_do_not_mix_with_one() {
        let cli = Cli::try_parse_from(["configmap-mirror", "--concurrency=3"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.controller.concurrency, 3);

        let cli =
            Cli::try_parse_from(["configmap-mirror", "probe", "http://[::1]:8080/readyz"]).unwrap();
        assert!(matches!(cli.command, Some(Command::Probe(_))));

        let mixed = Cli::try_parse_from([
            "configmap-mirror",
            "--concurrency=3",
            "probe",
            "http://localhost/",
        ]);
        assert!(mixed.is_err());
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
