//! The bounds table of docs/configuration.md stays true: every test a row names exists where it says, so a
//! row cannot promise what no test reaches, and a renamed or removed test is noticed.

use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The `Tests` cell of every row of the "Bounds" table, split into test paths.
fn named_tests(doc: &str) -> Vec<(String, Vec<String>)> {
    let section = doc
        .split("## Bounds: what a peer sees when it reaches one")
        .nth(1)
        .expect("docs/configuration.md has a bounds table");
    let table = section.split("\n## ").next().unwrap_or(section);
    table
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Resource") && !l.starts_with("|---"))
        .map(|row| {
            let cells: Vec<&str> = row.trim_matches('|').split(" | ").collect();
            let tests = cells
                .last()
                .unwrap_or(&"")
                .split('`')
                .skip(1)
                .step_by(2)
                .filter(|t| t.contains("::"))
                .map(str::to_owned)
                .collect();
            (cells[0].trim().to_owned(), tests)
        })
        .collect()
}

/// The file holding the module path `segments` (of `tests/it`, the gateway or the core crate)
/// and the inline modules left to find inside it.
fn locate(segments: &[&str]) -> Option<(PathBuf, Vec<String>)> {
    let roots = [
        Path::new(ROOT).join("tests/it"),
        Path::new(ROOT).join("src"),
        Path::new(ROOT).join("crates/core/src"),
    ];
    for root in &roots {
        for split in (1..=segments.len()).rev() {
            let dir: PathBuf = segments[..split].iter().collect();
            for file in [
                root.join(&dir).with_extension("rs"),
                root.join(&dir).join("mod.rs"),
            ] {
                if file.is_file() {
                    let rest = segments[split..].iter().map(|s| (*s).to_owned()).collect();
                    return Some((file, rest));
                }
            }
        }
    }
    None
}

fn exists(test: &str) -> bool {
    let segments: Vec<&str> = test.split("::").collect();
    let Some((name, modules)) = segments.split_last() else {
        return false;
    };
    let Some((file, inline)) = locate(modules) else {
        return false;
    };
    let text = std::fs::read_to_string(file).unwrap_or_default();
    inline.iter().all(|m| text.contains(&format!("mod {m} {{")))
        && text.contains(&format!("fn {name}("))
}

#[test]
fn every_row_of_the_bounds_table_names_tests_that_exist() {
    let doc = std::fs::read_to_string(Path::new(ROOT).join("docs/configuration.md")).unwrap();
    let rows = named_tests(&doc);
    assert!(rows.len() >= 20, "the table was not read: {rows:?}");
    let mut wrong = Vec::new();
    for (resource, tests) in &rows {
        if tests.is_empty() {
            wrong.push(format!("{resource}: names no test"));
        }
        for test in tests {
            if !exists(test) {
                wrong.push(format!("{resource}: `{test}` not found"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_missing_test_is_noticed() {
    assert!(exists(
        "bounds::pending::a_huge_enum_is_form_limits_and_never_reaches_the_client"
    ));
    assert!(exists(
        "inspect::pattern::tests::subjects_are_bounded_by_the_patterns_cost"
    ));
    assert!(!exists("bounds::pending::a_test_nobody_wrote"));
    assert!(!exists(
        "bounds::nowhere::a_huge_enum_is_form_limits_and_never_reaches_the_client"
    ));
    let rows = named_tests("### Bounds: what a peer sees when it reaches one\n\n| Resource | Bound | Sees | Tests |\n|---|---|---|---|\n| X | b | s | `deadlines::nothing_here` |\n");
    assert_eq!(
        rows,
        vec![("X".to_owned(), vec!["deadlines::nothing_here".to_owned()])]
    );
}
