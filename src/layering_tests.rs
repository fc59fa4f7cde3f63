//! The floors stay floors: each module reads only the floors beneath its
//! own, and no files read one another in a circle. And no file or function
//! grows past what a reader takes in at once.
//!
//! [`FLOORS`] is the one statement of their order; the crate guide
//! (`lib.rs`) and the architecture section of the docs name it.

mod function_lengths;
mod reading;
mod tokens;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use function_lengths::functions;
use reading::{Named, read};

/// The floors, ground first (docs/contributing/architecture.md says what
/// each holds). A module reads the floors beneath its own; modules that
/// share a floor do not read each other. Test support (`test_fixtures`,
/// these tests) is on no floor: only test code reads it.
pub(crate) const FLOORS: &[&[&str]] = &[
    &["contract"],
    &["api"],
    &["kind"],
    &["decisions"],
    &["index"],
    &["ops"],
    &["cluster"],
    &["reconcile", "explain"],
    &["app"],
    &["main"],
];

/// What `main.rs` calls this crate.
const CRATE_NAME: &str = "configmap_mirror";

fn floor_of(top: &str) -> Option<usize> {
    FLOORS.iter().position(|floor| floor.contains(&top))
}

/// One source file of the crate and the module it is.
struct File {
    path: PathBuf,
    module: Vec<String>,
}

impl File {
    /// Its path from the package's root, as messages name it.
    fn shown(&self) -> String {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        self.path
            .strip_prefix(root)
            .unwrap_or(&self.path)
            .display()
            .to_string()
    }
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every file under `src`, with its module (`main.rs` as `main`).
fn crate_files(src: &Path) -> Vec<File> {
    rust_files(src)
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(src).unwrap_or(&path).with_extension("");
            let mut module: Vec<String> = relative
                .components()
                .map(|part| part.as_os_str().to_string_lossy().into_owned())
                .collect();
            if module == ["lib"] {
                module.clear();
            }
            File { path, module }
        })
        .collect()
}

/// One file reading another.
#[derive(Debug)]
struct Edge {
    from: usize,
    to: usize,
    line: usize,
    path: String,
    /// Written in test code.
    test: bool,
    /// Read from test code (test support, or a module's own tests).
    to_test_code: bool,
}

/// The module a path names, from the crate root, or None when it names
/// another crate.
fn absolute(named: &Named, modules: &BTreeMap<Vec<String>, usize>) -> Option<Vec<String>> {
    let mut segments = named.path.iter().peekable();
    let mut base = match segments.peek()?.as_str() {
        "crate" | CRATE_NAME => {
            segments.next();
            Vec::new()
        }
        "self" | "super" => named.within.clone(),
        first => {
            // A relative path names a child module, else another crate.
            let mut child = named.within.clone();
            child.push(first.to_owned());
            modules
                .contains_key(&child)
                .then_some(named.within.clone())?
        }
    };
    for segment in segments {
        match segment.as_str() {
            "self" => {}
            "super" => {
                base.pop();
            }
            _ => base.push(segment.clone()),
        }
    }
    Some(base)
}

/// Every file's reads of the crate's other files, and which files are
/// test code.
fn edges(files: &[File]) -> (Vec<Edge>, Vec<bool>) {
    let modules: BTreeMap<Vec<String>, usize> = files
        .iter()
        .enumerate()
        .map(|(i, file)| (file.module.clone(), i))
        .collect();
    let mut test_modules: Vec<Vec<String>> = Vec::new();
    let mut readings = Vec::new();
    for file in files {
        let source = std::fs::read_to_string(&file.path).expect("read a source file");
        let in_main = file.module == ["main"];
        let reading = read(
            &source,
            if in_main { &[] } else { &file.module },
            if in_main { &[CRATE_NAME] } else { &[] },
        );
        for child in &reading.test_children {
            let mut module = file.module.clone();
            module.push(child.clone());
            test_modules.push(module);
        }
        readings.push(reading);
    }
    // A module declared under `#[cfg(test)]` is test code, and so is
    // everything beneath it.
    let test_code: Vec<bool> = files
        .iter()
        .map(|file| {
            test_modules
                .iter()
                .any(|test| file.module.starts_with(test))
        })
        .collect();
    let mut edges = Vec::new();
    for (from, reading) in readings.into_iter().enumerate() {
        for named in reading.named {
            let Some(mut target) = absolute(&named, &modules) else {
                continue;
            };
            // The longest prefix that is a file: the file the path is in.
            while !modules.contains_key(&target) && !target.is_empty() {
                target.pop();
            }
            let Some(&to) = modules.get(&target) else {
                continue;
            };
            if to != from {
                edges.push(Edge {
                    from,
                    to,
                    line: named.line,
                    path: named.path.join("::"),
                    test: named.test || test_code[from],
                    to_test_code: test_code[to],
                });
            }
        }
    }
    (edges, test_code)
}

/// The floor a file is on: that of its top module, None for the crate
/// root and test support.
fn file_floor(file: &File) -> Option<usize> {
    floor_of(file.module.first()?)
}

/// The reads that go up a floor or across one, as messages.
fn floor_breaches(files: &[File], edges: &[Edge]) -> Vec<String> {
    let mut breaches = Vec::new();
    for edge in edges {
        let (from, to) = (&files[edge.from], &files[edge.to]);
        let (Some(from_floor), Some(to_top)) = (file_floor(from), to.module.first()) else {
            continue;
        };
        let same_module = from.module.first() == Some(to_top);
        let fine = if edge.to_test_code {
            // Test support, or a module's own tests: test code only.
            edge.test
        } else {
            floor_of(to_top).is_some_and(|to_floor| same_module || to_floor < from_floor)
        };
        if !fine {
            breaches.push(format!(
                "{}:{} reads {} ({}), which is not beneath its floor",
                from.shown(),
                edge.line,
                edge.path,
                to.shown(),
            ));
        }
    }
    breaches
}

/// Each set of files that read one another (directly or through others),
/// as their paths; test code left out. A child module reading its parent
/// (`super::`) is not a read between modules: the parent is the scope the
/// child is written in, as an inline module's would be.
fn circles(files: &[File], edges: &[Edge]) -> Vec<Vec<String>> {
    let mut reads: Vec<Vec<usize>> = vec![Vec::new(); files.len()];
    for edge in edges.iter().filter(|edge| !edge.test) {
        let (from, to) = (&files[edge.from].module, &files[edge.to].module);
        if !(from.starts_with(to) && from.len() > to.len()) {
            reads[edge.from].push(edge.to);
        }
    }
    let reaches = |start: usize| {
        let mut seen = vec![false; files.len()];
        let mut stack = vec![start];
        while let Some(at) = stack.pop() {
            for &next in &reads[at] {
                if !seen[next] {
                    seen[next] = true;
                    stack.push(next);
                }
            }
        }
        seen
    };
    let reach: Vec<Vec<bool>> = (0..files.len()).map(reaches).collect();
    let mut found: Vec<Vec<String>> = Vec::new();
    for (a, reached) in reach.iter().enumerate() {
        if !reached[a] {
            continue;
        }
        let circle: Vec<String> = (0..files.len())
            .filter(|&b| reach[a][b] && reach[b][a])
            .map(|b| files[b].shown())
            .collect();
        if !found.contains(&circle) {
            found.push(circle);
        }
    }
    found
}

#[test]
fn every_file_reads_only_the_floors_beneath_its_own() {
    let files = crate_files(&src());
    let (edges, _) = edges(&files);
    assert!(edges.len() > 100, "found the reads: {}", edges.len());
    let breaches = floor_breaches(&files, &edges);
    assert!(
        breaches.is_empty(),
        "reads up or across a floor: {breaches:#?}"
    );
}

#[test]
fn no_files_read_one_another_in_a_circle() {
    let files = crate_files(&src());
    let circles = circles(&files, &edges(&files).0);
    assert!(circles.is_empty(), "files in a circle: {circles:#?}");
}

#[test]
fn every_module_is_on_a_floor_or_test_support() {
    let files = crate_files(&src());
    let (_, test_code) = edges(&files);
    let lost: Vec<String> = files
        .iter()
        .zip(test_code)
        .filter(|(file, test_code)| {
            !file.module.is_empty() && file_floor(file).is_none() && !test_code
        })
        .map(|(file, _)| file.shown())
        .collect();
    assert!(lost.is_empty(), "modules on no floor: {lost:#?}");
}

/// The most lines a file of `src/` may have, unit tests included: one
/// that would have more is split along its seams.
const MOST_LINES: usize = 400;

#[test]
fn no_source_file_is_over_400_lines() {
    let files = crate_files(&src());
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let lines = std::fs::read_to_string(&file.path).ok()?.lines().count();
            (lines > MOST_LINES).then(|| format!("{}: {lines} lines", file.shown()))
        })
        .collect();
    long.sort();
    assert!(long.is_empty(), "over {MOST_LINES} lines: {long:#?}");
}

/// The most lines a function of `src/` may have, from the line of its
/// `fn` to that of its closing brace, tests included: one that would have
/// more is split along what it does.
const MOST_FUNCTION_LINES: usize = 80;

/// The functions of `source`, the file shown as `shown`, longer than
/// [`MOST_FUNCTION_LINES`], as messages naming file, line, function and
/// length.
fn long_functions(shown: &str, source: &str) -> Vec<String> {
    functions(source)
        .into_iter()
        .filter(|function| function.lines > MOST_FUNCTION_LINES)
        .map(|function| {
            format!(
                "{shown}:{} fn {}: {} lines",
                function.line, function.name, function.lines
            )
        })
        .collect()
}

#[test]
fn no_function_is_over_80_lines() {
    let long: Vec<String> = crate_files(&src())
        .iter()
        .flat_map(|file| {
            let source = std::fs::read_to_string(&file.path).expect("read a source file");
            long_functions(&file.shown(), &source)
        })
        .collect();
    assert!(
        long.is_empty(),
        "functions over {MOST_FUNCTION_LINES} lines: {long:#?}"
    );
}

mod tests;
