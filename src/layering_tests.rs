//! The layers stay layers: the contract is the ground floor, which every
//! other module reads and which reads none of them.

use std::path::{Path, PathBuf};

/// The crate's modules a source file names (`crate::x`, or each `x` of
/// `crate::{x::..., y}`), comments left out.
fn crate_modules_named(source: &str) -> Vec<String> {
    let code: String = source
        .lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let mut named = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && (c.is_alphabetic() || c == '_') => {
                        let word: String = group[i..]
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        named.push(word);
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let word: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            named.push(word);
        }
    }
    named
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
    files
}

#[test]
fn the_parser_finds_every_module_named() {
    let source = "use crate::{kind::MirroredKind, ops::metrics::{Loop, Metrics}};\n\
                  // crate::app in a comment\n\
                  fn f() { crate::decisions::plan(); }";
    assert_eq!(
        crate_modules_named(source),
        ["kind", "ops", "decisions"].map(str::to_owned)
    );
}

#[test]
fn the_contract_imports_nothing_from_the_layers_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![src.join("contract.rs")];
    files.extend(rust_files(&src.join("contract")));
    let mut above = Vec::new();
    for file in &files {
        // Unit tests may build their inputs with the shared fixtures.
        if file.file_name().is_some_and(|name| name == "tests.rs") {
            continue;
        }
        let source = std::fs::read_to_string(file).expect("read a source file");
        for module in crate_modules_named(&source) {
            if module != "contract" {
                above.push(format!("{} names crate::{module}", file.display()));
            }
        }
    }
    assert!(
        above.is_empty(),
        "the contract reads layers above it: {above:#?}"
    );
}
