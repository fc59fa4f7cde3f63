//! The runnable walkthroughs of the user guide, read from its Markdown, and
//! the comparison of what a step printed with what the page says it prints.
//! Pure: text in, steps and verdicts out.
//!
//! A walkthrough is a fenced block whose info string is `console walkthrough`.
//! In it, a line starting with `$ ` is a command (continued on the next line
//! while it ends with `\`); the lines up to the next command are what it
//! prints, stdout and stderr together, with `(exit code N)` last when it
//! exits with N other than 0. A line `...` stands for any number of lines.
//! What varies from run to run (ages, uids, timestamps, checksums,
//! resourceVersions, the spaces that align a table) is masked on both sides
//! before they are compared.

use std::sync::LazyLock;

use regex::Regex;

/// The info string that marks a fenced block as a runnable walkthrough.
pub const MARKER: &str = "console walkthrough";

/// One command of a walkthrough, and what the page says it prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The page's line where the command starts, for messages.
    pub line: usize,
    pub command: String,
    pub expected: Vec<String>,
}

/// Every step of every walkthrough block of a page, in order.
pub fn steps(page: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut in_walkthrough = false;
    let mut in_other_block = false;
    let mut continuing = false;
    for (index, line) in page.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            if in_walkthrough || in_other_block {
                in_walkthrough = false;
                in_other_block = false;
            } else if trimmed.trim_start_matches('`').trim() == MARKER {
                in_walkthrough = true;
            } else {
                in_other_block = true;
            }
            continuing = false;
            continue;
        }
        if !in_walkthrough {
            continue;
        }
        if continuing {
            if let Some(step) = steps.last_mut() {
                step.command.push('\n');
                step.command.push_str(line);
            }
            continuing = line.ends_with('\\');
        } else if let Some(command) = line.strip_prefix("$ ") {
            steps.push(Step {
                line: index + 1,
                command: command.to_owned(),
                expected: Vec::new(),
            });
            continuing = command.ends_with('\\');
        } else if let Some(step) = steps.last_mut() {
            step.expected.push(line.to_owned());
        }
    }
    steps
}

/// What a command printed, as the page shows it: its output, and its exit
/// code when not 0.
pub fn transcript(output: &str, exit_code: i32) -> Vec<String> {
    let mut lines: Vec<String> = output.lines().map(str::to_owned).collect();
    if exit_code != 0 {
        lines.push(format!("(exit code {exit_code})"));
    }
    lines
}

static VARYING: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "<uid>",
        ),
        (
            r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
            "<time>",
        ),
        (r"\b[0-9a-f]{64}\b", "<sha256>"),
        (r#"(resourceVersion"?:\s*)"?\d+"?"#, "${1}<rv>"),
        (r"\b\d+(ms|s|m|h|d)(\d+(s|m|h))?$", "<age>"),
        (r"\s+", " "),
    ]
    .into_iter()
    .map(|(pattern, mask)| (Regex::new(pattern).expect("a valid pattern"), mask))
    .collect()
});

/// A line with what varies masked.
pub fn masked(line: &str) -> String {
    let mut text = line.trim_end().to_owned();
    for (pattern, mask) in VARYING.iter() {
        text = pattern.replace_all(&text, *mask).into_owned();
    }
    text.trim_end().to_owned()
}

/// Whether `actual` is what `expected` says, once masked; `...` in
/// `expected` matches any number of lines.
pub fn matches(expected: &[String], actual: &[String]) -> bool {
    let expected: Vec<String> = expected.iter().map(|l| masked(l)).collect();
    let actual: Vec<String> = actual.iter().map(|l| masked(l)).collect();
    matches_from(&expected, &actual)
}

fn matches_from(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." => {
            (0..=actual.len()).any(|skip| matches_from(rest, &actual[skip..]))
        }
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(line, more)| line == first && matches_from(rest, more)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    const PAGE: &str = "\
# A page

```sh
$ not a walkthrough
```

```console walkthrough
$ kubectl create configmap colors --from-literal=primary=red
configmap/colors created
$ kubectl label configmap colors \\
    workshop.io/managed=true
configmap/colors labeled
$ true
```
";

    #[test]
    fn steps_are_read_from_marked_blocks_only_with_continued_commands() {
        let steps = steps(PAGE);
        assert_eq!(steps.len(), 3, "{steps:?}");
        assert_eq!(steps[0].line, 8);
        assert_eq!(steps[0].expected, lines("configmap/colors created"));
        assert_eq!(
            steps[1].command,
            "kubectl label configmap colors \\\n    workshop.io/managed=true"
        );
        assert_eq!(steps[1].expected, lines("configmap/colors labeled"));
        assert!(steps[2].expected.is_empty());
    }

    #[test]
    fn what_varies_is_masked_and_what_does_not_is_compared() {
        let expected = lines("NAME            DATA   AGE\ncolors-synced   1      5s");
        let later = lines("NAME          DATA   AGE\ncolors-synced 1 2m30s");
        assert!(matches(&expected, &later));
        let drifted = lines("NAME            DATA   AGE\ncolors-synced   2      5s");
        assert!(!matches(&expected, &drifted));
        let uid = lines("uid: 0f8fad5b-d9cb-469f-a165-70867728950e");
        assert!(matches(
            &uid,
            &lines("uid: 7c9e6679-7425-40de-944b-e07fc1f90ae7")
        ));
        let checksum = format!(
            "workshop.io/source-checksum: hmac-sha256:{}",
            "a".repeat(64)
        );
        let other = format!(
            "workshop.io/source-checksum: hmac-sha256:{}",
            "b".repeat(64)
        );
        assert!(matches(&lines(&checksum), &lines(&other)));
        assert!(!matches(
            &lines(&checksum),
            &lines("workshop.io/source-checksum: sha256")
        ));
    }

    #[test]
    fn an_ellipsis_matches_any_lines_and_missing_or_extra_lines_do_not_match() {
        let expected = lines("first\n...\nlast");
        assert!(matches(&expected, &lines("first\nlast")));
        assert!(matches(&expected, &lines("first\na\nb\nlast")));
        assert!(!matches(&expected, &lines("first\na")));
        assert!(!matches(&lines("one"), &lines("one\ntwo")));
        assert!(!matches(&lines("one\ntwo"), &lines("one")));
    }

    #[test]
    fn a_failing_command_shows_its_exit_code() {
        assert_eq!(transcript("out\n", 0), lines("out"));
        assert_eq!(transcript("out\n", 1), lines("out\n(exit code 1)"));
    }
}
