use super::*;

fn module(path: &str) -> Vec<String> {
    path.split("::")
        .filter(|part| !part.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The paths `source`, as the file of `within`, names from the crate
/// root, with whether each is test code.
fn named_in(source: &str, within: &str, files: &[&str]) -> Vec<(String, bool)> {
    let modules: BTreeMap<Vec<String>, usize> = files
        .iter()
        .enumerate()
        .map(|(i, file)| (module(file), i))
        .collect();
    read(source, &module(within), &[CRATE_NAME])
        .named
        .iter()
        .filter_map(|named| Some((absolute(named, &modules)?.join("::"), named.test)))
        .collect()
}

#[test]
fn grouped_and_nested_uses_are_read_to_each_leaf() {
    let source = "use crate::{kind::MirroredKind, ops::{metrics::{Loop, Metrics}, health}};";
    let named: Vec<String> = named_in(source, "app", &[])
        .into_iter()
        .map(|n| n.0)
        .collect();
    assert_eq!(
        named,
        [
            "kind::MirroredKind",
            "ops::metrics::Loop",
            "ops::metrics::Metrics",
            "ops::health"
        ]
    );
}

#[test]
fn self_super_renames_and_globs_are_read_from_where_they_are_written() {
    let source = "use super::{self as up, Plan};\n\
                  use self::compare::Difference as D;\n\
                  use super::super::kind::*;\n\
                  use crate::decisions::{self, plan};";
    let named: Vec<String> = named_in(source, "decisions::plan::compare", &[])
        .into_iter()
        .map(|n| n.0)
        .collect();
    assert_eq!(
        named,
        [
            "decisions::plan",
            "decisions::plan::Plan",
            "decisions::plan::compare::compare::Difference",
            "decisions::kind",
            "decisions",
            "decisions::plan"
        ]
    );
}

#[test]
fn paths_in_code_are_read_and_comments_strings_and_chars_are_not() {
    let source = "// use crate::app;\n\
                  /* crate::explain::x() /* nested */ crate::app */\n\
                  fn f<'a>(x: &'a str) -> char {\n\
                      let _ = \"crate::app::run()\";\n\
                      let _ = r#\"crate::app \"# ;\n\
                      crate::decisions::plan::plan(x);\n\
                      let _ = super::Thing::new();\n\
                      '{'\n\
                  }\n\
                  pub(crate) fn g() -> Self::Out { configmap_mirror::ops::cli::parse() }";
    let named: Vec<String> = named_in(source, "reconcile::sync", &[])
        .into_iter()
        .map(|n| n.0)
        .collect();
    assert_eq!(
        named,
        [
            "decisions::plan::plan",
            "reconcile::Thing::new",
            "ops::cli::parse"
        ]
    );
}

#[test]
fn a_relative_use_names_a_child_module_and_other_crates_are_left_out() {
    let source = "mod forward;\nuse forward::Follower;\nuse kube::Api;\nuse std::sync::Arc;";
    let named = named_in(source, "cluster::watches", &["cluster::watches::forward"]);
    assert_eq!(
        named,
        [("cluster::watches::forward::Follower".to_owned(), false)]
    );
}

#[test]
fn test_code_is_told_apart_inline_and_declared() {
    let source = "use crate::kind::K;\n\
                  #[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::test_fixtures::mk;\n}\n\
                  #[cfg(test)]\nmod more;\n\
                  fn after() { crate::contract::x(); }";
    let named = named_in(source, "decisions::plan", &[]);
    assert_eq!(
        named,
        [
            ("kind::K".to_owned(), false),
            ("decisions::plan".to_owned(), true),
            ("test_fixtures::mk".to_owned(), true),
            ("contract::x".to_owned(), false)
        ]
    );
    let reading = read(source, &module("decisions::plan"), &[]);
    assert_eq!(reading.test_children, ["more"]);
}

fn file(path: &str) -> File {
    File {
        path: PathBuf::from(path),
        module: module(&path.trim_end_matches(".rs").replace('/', "::")),
    }
}

fn edge(from: usize, to: usize, test: bool) -> Edge {
    Edge {
        from,
        to,
        line: 1,
        path: String::new(),
        test,
        to_test_code: false,
    }
}

#[test]
fn a_read_up_or_across_a_floor_is_a_breach_and_a_read_down_is_not() {
    let files = [
        file("decisions/wakeups.rs"),
        file("cluster/caches.rs"),
        file("reconcile/backoff.rs"),
        file("explain/fetch.rs"),
        file("decisions/plan.rs"),
    ];
    let edges = [
        edge(0, 1, false),
        edge(1, 2, false),
        edge(2, 3, false),
        edge(2, 4, false),
        edge(3, 1, false),
        edge(0, 4, false),
    ];
    let breaches = floor_breaches(&files, &edges);
    assert_eq!(breaches.len(), 3, "{breaches:#?}");
    assert!(breaches[0].starts_with("decisions/wakeups.rs:1"));
    assert!(breaches[1].starts_with("cluster/caches.rs:1"));
    assert!(breaches[2].starts_with("reconcile/backoff.rs:1"));
}

#[test]
fn a_circle_of_files_is_found_once_with_every_file_in_it() {
    let files = [
        file("decisions/a.rs"),
        file("decisions/b.rs"),
        file("decisions/c.rs"),
        file("decisions/d.rs"),
    ];
    let edges = [
        edge(0, 1, false),
        edge(1, 2, false),
        edge(2, 0, false),
        edge(3, 0, false),
        // Test code may read back.
        edge(0, 3, true),
    ];
    assert_eq!(
        circles(&files, &edges),
        [["decisions/a.rs", "decisions/b.rs", "decisions/c.rs"]]
    );
    assert!(circles(&files, &edges[..2]).is_empty());
}

#[test]
fn a_child_module_reading_its_parent_is_no_circle() {
    let files = [file("decisions/plan.rs"), file("decisions/plan/compare.rs")];
    let edges = [edge(0, 1, false), edge(1, 0, false)];
    assert!(circles(&files, &edges).is_empty());
}

/// A function `fn name` spanning `lines` lines, its body padded with
/// statements.
fn function_of(name: &str, lines: usize) -> String {
    let body = "    let _ = 1;\n".repeat(lines - 2);
    format!("fn {name}() {{\n{body}}}\n")
}

#[test]
fn a_function_of_80_lines_passes_and_one_of_81_is_named_with_its_length() {
    let source = format!(
        "//! A file.\n{}\n{}",
        function_of("fits", 80),
        function_of("too_long", 81)
    );
    let lengths: Vec<(String, usize)> = functions(&source)
        .into_iter()
        .map(|function| (function.name, function.lines))
        .collect();
    assert_eq!(
        lengths,
        [("fits".to_owned(), 80), ("too_long".to_owned(), 81)]
    );
    assert_eq!(
        long_functions("src/x.rs", &source),
        ["src/x.rs:83 fn too_long: 81 lines"]
    );
}

#[test]
fn braces_in_strings_comments_and_chars_neither_open_nor_close_a_body() {
    let source = "fn quoted() -> char {\n\
                  let _ = \"{ {\";\n\
                  let _ = r#\"}\"#;\n\
                  // }\n\
                  /* { */\n\
                  let _ = b'}';\n\
                  '{'\n\
                  }\n\
                  fn next<'a>(x: &'a str) -> &'a str { x }";
    let lengths: Vec<(String, usize, usize)> = functions(source)
        .into_iter()
        .map(|function| (function.name, function.line, function.lines))
        .collect();
    assert_eq!(
        lengths,
        [("quoted".to_owned(), 1, 8), ("next".to_owned(), 9, 1)]
    );
}

#[test]
fn a_nested_function_is_measured_alone_and_inside_its_outer_one_as_closures_are() {
    let source = "fn outer() {\n\
                  let add = |a: u8| {\n\
                      a + 1\n\
                  };\n\
                  fn inner(x: [u8; 2]) -> u8 {\n\
                      x[0]\n\
                  }\n\
                  let _ = (add, inner);\n\
                  }";
    let lengths: Vec<(String, usize)> = functions(source)
        .into_iter()
        .map(|function| (function.name, function.lines))
        .collect();
    assert_eq!(lengths, [("outer".to_owned(), 9), ("inner".to_owned(), 3)]);
}

#[test]
fn declarations_without_bodies_and_function_types_are_no_functions() {
    let source = "trait Reads {\n\
                  fn read(&self, at: [u8; 4]) -> u8;\n\
                  fn twice(&self) -> u8 where Self: Sized {\n\
                      self.read([0; 4]) * 2\n\
                  }\n\
                  }\n\
                  type Callback = fn(u8) -> u8;\n\
                  macro_rules! m { ($name:ident) => { fn $name() {} }; }";
    let lengths: Vec<(String, usize)> = functions(source)
        .into_iter()
        .map(|function| (function.name, function.lines))
        .collect();
    assert_eq!(lengths, [("twice".to_owned(), 3)]);
}

#[test]
fn a_string_continued_past_a_line_end_counts_its_lines() {
    let source = "fn continued() {\n    let _ = \"one \\\n        two\";\n}\nfn after() {}";
    let lines: Vec<(usize, usize)> = functions(source)
        .into_iter()
        .map(|function| (function.line, function.lines))
        .collect();
    assert_eq!(lines, [(1, 4), (5, 1)]);
}
