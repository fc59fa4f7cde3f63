//! No source file grows past what a reader takes in at once: 400 lines,
//! unit tests included. A file that would is split along its seams.

use std::path::{Path, PathBuf};

const MOST_LINES: usize = 400;

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
    files
}

#[test]
fn no_source_file_is_over_400_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = rust_files(&src);
    assert!(files.len() > 50, "found the sources: {}", files.len());
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let lines = std::fs::read_to_string(file).ok()?.lines().count();
            let shown = file.strip_prefix(&src).unwrap_or(file).display();
            (lines > MOST_LINES).then(|| format!("src/{shown}: {lines} lines"))
        })
        .collect();
    long.sort();
    assert!(long.is_empty(), "over {MOST_LINES} lines: {long:#?}");
}
