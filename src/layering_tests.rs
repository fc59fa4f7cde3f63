//! The layers stay layers: the contract is the ground floor, which every
//! other module reads and which reads none of them; the API stands on it
//! alone.

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

#[test]
fn the_api_reads_nothing_but_the_contract() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![src.join("api.rs")];
    files.extend(rust_files(&src.join("api")));
    let mut above = Vec::new();
    for file in files {
        let source = std::fs::read_to_string(&file).expect("read a source file");
        for module in crate_modules_named(&source) {
            if module != "api" && module != "contract" {
                above.push(format!("{} names crate::{module}", file.display()));
            }
        }
    }
    assert!(
        above.is_empty(),
        "the API reads layers above it: {above:#?}"
    );
}

/// The decision modules each file of `module` (its own file and its
/// folder, unit tests left out) names as `decisions::<name>`.
fn decisions_named_by(decisions: &Path, module: &str) -> Vec<String> {
    let mut files = vec![decisions.join(format!("{module}.rs"))];
    files.extend(rust_files(&decisions.join(module)));
    let mut named = Vec::new();
    for file in files {
        if file.file_name().is_some_and(|name| name == "tests.rs") {
            continue;
        }
        let source = std::fs::read_to_string(&file).unwrap_or_default();
        for line in source.lines() {
            let code = line.split("//").next().unwrap_or_default();
            for (at, _) in code.match_indices("decisions::") {
                let word: String = code[at + "decisions::".len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !word.is_empty() && word != module && !named.contains(&word) {
                    named.push(word);
                }
            }
        }
    }
    named
}

/// A module that reaches back to itself through the modules it names, as
/// the path that does, if any.
fn circle_from(start: &str, imports: &[(String, Vec<String>)]) -> Option<Vec<String>> {
    let mut path = vec![start.to_owned()];
    let mut seen = Vec::new();
    fn walk(
        path: &mut Vec<String>,
        seen: &mut Vec<String>,
        imports: &[(String, Vec<String>)],
    ) -> bool {
        let here = path.last().cloned().unwrap_or_default();
        let next = imports
            .iter()
            .find(|(module, _)| *module == here)
            .map(|(_, named)| named.clone())
            .unwrap_or_default();
        for module in next {
            if module == path[0] {
                path.push(module);
                return true;
            }
            if !seen.contains(&module) {
                seen.push(module.clone());
                path.push(module);
                if walk(path, seen, imports) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    walk(&mut path, &mut seen, imports).then_some(path)
}

#[test]
fn a_circle_of_imports_is_found() {
    let imports = [
        ("a".to_owned(), vec!["b".to_owned()]),
        ("b".to_owned(), vec!["c".to_owned()]),
        ("c".to_owned(), vec!["a".to_owned()]),
        ("d".to_owned(), vec!["a".to_owned()]),
    ];
    assert_eq!(circle_from("a", &imports).map(|p| p.len()), Some(4));
    assert_eq!(circle_from("d", &imports), None);
}

#[test]
fn the_decisions_import_one_another_without_a_circle() {
    let decisions = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/decisions");
    let modules: Vec<String> = std::fs::read_dir(&decisions)
        .expect("read src/decisions")
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            let stem = path.file_stem()?.to_str()?.to_owned();
            (path.extension().is_some_and(|ext| ext == "rs")).then_some(stem)
        })
        .collect();
    assert!(modules.len() > 5, "found the decision modules: {modules:?}");
    let imports: Vec<(String, Vec<String>)> = modules
        .iter()
        .map(|module| (module.clone(), decisions_named_by(&decisions, module)))
        .collect();
    let circles: Vec<String> = modules
        .iter()
        .filter_map(|module| circle_from(module, &imports))
        .map(|path| path.join(" -> "))
        .collect();
    assert!(
        circles.is_empty(),
        "decision modules in a circle: {circles:#?}"
    );
}
