//! Prints docs/operator/flags-reference.md: every flag of the controller and
//! of its subcommands, rendered from the binary's own clap definitions, so
//! the reference cannot drift from what `--help` says. `make flags-docs`
//! writes it; `make lint` fails when the committed page is not what this
//! prints.

#![forbid(unsafe_code)]

use clap::{Arg, ArgAction, Command, CommandFactory};
use configmap_mirror::ops::cli::Cli;

const HEADER: &str = "\
# Flag reference

For operators looking up a flag: every flag of the controller and of its
subcommands, with its environment variable, default and meaning.

<!-- Generated from the binary's clap definitions by `make flags-docs`
(examples/flags-reference.rs); `make lint` fails when it is stale. Edit the
doc comments in src/, not this page. -->

[Flags](flags.md) says how values are checked at start, the form of
durations, and what the logs look like.
";

fn main() {
    print!("{}", render(&Cli::command()));
}

fn render(cli: &Command) -> String {
    let mut page = String::from(HEADER);
    page.push_str(&format!(
        "\n## The controller: `{}`\n\nWith no subcommand the binary runs the controller.\n",
        cli.get_name()
    ));
    page.push_str(&arguments(cli, 3));
    for subcommand in cli.get_subcommands().filter(|c| !c.is_hide_set()) {
        page.push_str(&format!(
            "\n## `{} {}`\n\n{}\n",
            cli.get_name(),
            subcommand.get_name(),
            about(subcommand),
        ));
        page.push_str(&arguments(subcommand, 3));
    }
    page
}

/// The command's arguments, one table per help heading, in the order
/// `--help` shows them.
fn arguments(command: &Command, level: usize) -> String {
    let shown: Vec<&Arg> = command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set() && !is_builtin(arg))
        .collect();
    let mut headings: Vec<Option<&str>> = Vec::new();
    for arg in &shown {
        let heading = if arg.is_positional() {
            Some("Arguments")
        } else {
            arg.get_help_heading()
        };
        if !headings.contains(&heading) {
            headings.push(heading);
        }
    }
    let mut text = String::new();
    for heading in headings {
        text.push_str(&format!(
            "\n{} {}\n\n| flag | env | default | |\n|------|-----|---------|-|\n",
            "#".repeat(level),
            heading.unwrap_or("Options")
        ));
        for arg in shown.iter().filter(|arg| {
            let own = if arg.is_positional() {
                Some("Arguments")
            } else {
                arg.get_help_heading()
            };
            own == heading
        }) {
            text.push_str(&row(arg));
        }
    }
    text
}

fn is_builtin(arg: &Arg) -> bool {
    matches!(
        arg.get_action(),
        ArgAction::Help | ArgAction::HelpLong | ArgAction::Version
    )
}

fn row(arg: &Arg) -> String {
    let name = match (arg.get_long(), arg.get_short()) {
        _ if arg.is_positional() => format!("`{}`", value_name(arg)),
        (Some(long), Some(short)) => format!("`-{short}`, `--{long}`"),
        (Some(long), None) => format!("`--{long}`"),
        (None, Some(short)) => format!("`-{short}`"),
        (None, None) => format!("`{}`", arg.get_id()),
    };
    let name = match arg.get_action() {
        ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count => name,
        _ if arg.is_positional() => name,
        _ => format!("{name} `{}`", value_name(arg)),
    };
    let env = arg
        .get_env()
        .map(|env| format!("`{}`", env.to_string_lossy()))
        .unwrap_or_default();
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|value| value.to_string_lossy().into_owned())
        .collect();
    let default = match arg.get_action() {
        ArgAction::SetTrue => "off".to_owned(),
        _ if defaults.is_empty() => String::new(),
        // An empty string, as a value: said so, not an empty code span.
        _ if defaults.iter().all(String::is_empty) => "empty".to_owned(),
        _ => format!("`{}`", defaults.join(",")),
    };
    let mut help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|help| one_line(&help.to_string()))
        .unwrap_or_default();
    let possible: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|value| !value.is_hide_set())
        .map(|value| format!("`{}`", value.get_name()))
        .collect();
    if !possible.is_empty() && !matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse)
    {
        help.push_str(&format!(" (one of {})", possible.join(", ")));
    }
    format!(
        "| {name} | {env} | {default} | {} |\n",
        help.replace('|', "\\|")
    )
}

fn value_name(arg: &Arg) -> String {
    arg.get_value_names()
        .and_then(|names| names.first())
        .map(|name| name.to_string())
        .unwrap_or_else(|| arg.get_id().to_string().to_uppercase())
}

/// A subcommand's about and long about as one paragraph: the summary line
/// becomes a sentence of its own.
fn about(command: &Command) -> String {
    let text = command
        .get_long_about()
        .or(command.get_about())
        .map(|about| about.to_string())
        .unwrap_or_default();
    let mut paragraphs: Vec<String> = text.split("\n\n").map(one_line).collect();
    if let Some(summary) = paragraphs.first_mut()
        && !summary.ends_with('.')
    {
        summary.push('.');
    }
    paragraphs.join(" ")
}

/// Help text as one line of a table cell: paragraphs joined by a space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
