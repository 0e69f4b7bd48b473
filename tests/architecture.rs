//! The layout README.md describes holds: every top-level module of `src/` has a row in its
//! module table, and a module imports (`crate::…`) only modules of its own row or of rows below
//! it, so the imports form no circle. And the sizes the project keeps to: no source file of any
//! crate over 500 lines but the Earley parser (functions over 100 lines are clippy's
//! `too_many_lines`, denied by `cargo make clippy`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The modules named in each row of README's module table, top to bottom.
fn table_rows() -> Vec<Vec<String>> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let table = readme
        .split("| module | concept |")
        .nth(1)
        .expect("README.md has the module table");
    table
        .lines()
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let first_cell = line.split('|').nth(1).unwrap_or_default();
            first_cell
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect()
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Each top-level module of `src/` and the other top-level modules its files name as
/// `crate::<module>` outside comments.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(&src).expect("under src/");
        let top = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .expect("a UTF-8 path")
            .trim_end_matches(".rs")
            .to_string();
        if top == "lib" || top == "main" || top == "bin" {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("a source file");
        let uses = graph.entry(top.clone()).or_default();
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or_default();
            for (at, _) in code.match_indices("crate::") {
                let name: String = code[at + "crate::".len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() && name != top {
                    uses.insert(name);
                }
            }
        }
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for uses in graph.values_mut() {
        uses.retain(|m| modules.contains(m));
    }
    graph
}

#[test]
fn every_module_is_in_the_table_and_imports_only_downwards() {
    let rows = table_rows();
    let row_of: BTreeMap<&str, usize> = rows
        .iter()
        .enumerate()
        .flat_map(|(i, row)| row.iter().map(move |m| (m.as_str(), i)))
        .collect();
    let graph = imports();
    let missing: Vec<&String> = graph
        .keys()
        .filter(|m| !row_of.contains_key(m.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "modules with no row in README's module table: {missing:?}"
    );
    let upward: Vec<String> = graph
        .iter()
        .flat_map(|(module, uses)| {
            uses.iter()
                .filter(|used| row_of[used.as_str()] < row_of[module.as_str()])
                .map(move |used| format!("{module} -> {used}"))
        })
        .collect();
    assert!(
        upward.is_empty(),
        "imports that go up README's module table (move the row, or the code): {upward:?}"
    );
}

/// Where a file may be longer: the Earley parser, one algorithm whose parts only make sense
/// together.
const LONG_FILES_ALLOWED: &[&str] = &["labelfuzz-grammar/src/grammar/parse.rs"];

/// The most lines a source file of any workspace crate has.
const MAX_FILE_LINES: usize = 500;

#[test]
fn no_source_file_is_over_five_hundred_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let metadata = cargo_metadata::MetadataCommand::new()
        .manifest_path(root.join("Cargo.toml"))
        .no_deps()
        .exec()
        .expect("cargo metadata");
    let members = metadata.workspace_packages();
    assert!(members.len() > 5, "members read: {}", members.len());
    let mut files = Vec::new();
    for member in members {
        let dir = member
            .manifest_path
            .parent()
            .expect("a manifest's directory");
        rust_files(dir.join("src").as_std_path(), &mut files);
    }
    let too_long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let relative = file.strip_prefix(root).expect("under the root");
            let lines = std::fs::read_to_string(file)
                .expect("readable")
                .lines()
                .count();
            let allowed = LONG_FILES_ALLOWED.iter().any(|a| relative == Path::new(a));
            (lines > MAX_FILE_LINES && !allowed)
                .then(|| format!("{} ({lines})", relative.display()))
        })
        .collect();
    assert!(
        too_long.is_empty(),
        "over {MAX_FILE_LINES} lines: {too_long:?}"
    );
}
