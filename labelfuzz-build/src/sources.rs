//! The embedded sources of the runtime and the glue crates, and where they are laid out.
//!
//! `build.rs` embeds them; here they are written into the cache and their manifests made to
//! stand alone: the engine's workspace, dev-dependencies and test targets are dropped, and the
//! harness points at the engine beside it.

use std::path::Path;

use toml_edit::{DocumentMut, Item};

use crate::cache::write_file;
use crate::BuildError;

include!(concat!(env!("OUT_DIR"), "/sources.rs"));

/// The engine package (`labelfuzz`).
const ENGINE: &str = "labelfuzz";
/// The engine's own crates, which it depends on by path: each is written beside it.
const ENGINE_CRATES: [&str; 5] = [
    "labelfuzz-core",
    "labelfuzz-dictionary",
    "labelfuzz-grammar",
    "labelfuzz-runtime",
    "labelfuzz-tools",
];
/// The runtime package (`labelfuzz-harness`).
const HARNESS: &str = "labelfuzz-harness";
/// The fuzz-target glue (`labelfuzz-sys`).
const GLUE: &str = "labelfuzz-sys";

/// The manifest of the runtime's own workspace. Release without debug information: the
/// runtime's symbols are never shown to the user (their code's are).
const RUNTIME_WORKSPACE: &str = r#"# Written by labelfuzz-build: the labelfuzz runtime, built apart from any user's crates.
[workspace]
members = ["labelfuzz-harness"]
resolver = "2"

[profile.release]
debug = false
"#;

/// Writes the engine, its crates and the harness into `dir` as a workspace of their own.
pub fn write_runtime_sources(dir: &Path) -> Result<(), BuildError> {
    for package in ENGINE_CRATES {
        write_package(package, &dir.join(package))?;
    }
    write_package(ENGINE, &dir.join(ENGINE))?;
    write_package(HARNESS, &dir.join(HARNESS))?;
    write_file(&dir.join("Cargo.toml"), RUNTIME_WORKSPACE.as_bytes())?;
    if let Some((_, lock)) = SOURCES
        .iter()
        .find(|(path, _)| *path == format!("{ENGINE}/Cargo.lock"))
    {
        write_file(&dir.join("Cargo.lock"), lock)?;
    }
    Ok(())
}

/// Writes `labelfuzz-sys` into `dir`.
pub fn write_glue_sources(dir: &Path) -> Result<(), BuildError> {
    write_package(GLUE, dir)
}

/// Writes the files of `package` under `dir`, its manifest made standalone.
fn write_package(package: &str, dir: &Path) -> Result<(), BuildError> {
    let prefix = format!("{package}/");
    for (path, contents) in SOURCES {
        let Some(relative) = path.strip_prefix(&prefix) else {
            continue;
        };
        match relative {
            "Cargo.lock" => {}
            "Cargo.toml" => {
                let text = String::from_utf8_lossy(contents);
                write_file(
                    &dir.join(relative),
                    standalone_manifest(package, &text)?.as_bytes(),
                )?;
            }
            _ => write_file(&dir.join(relative), contents)?,
        }
    }
    Ok(())
}

/// `manifest` with what only the labelfuzz workspace has removed: `[workspace]`, profiles,
/// dev-dependencies and targets other than the library; path dependencies on the engine and its
/// crates point at the directories beside it (`../labelfuzz`, `../labelfuzz-core`, …).
fn standalone_manifest(package: &str, manifest: &str) -> Result<String, BuildError> {
    let mut doc: DocumentMut = manifest
        .parse()
        .map_err(|e| BuildError::Project(format!("embedded {package}/Cargo.toml: {e}")))?;
    for table in [
        "workspace",
        "profile",
        "dev-dependencies",
        "bin",
        "test",
        "bench",
        "example",
    ] {
        doc.remove(table);
    }
    if let Some(package_table) = doc.get_mut("package").and_then(Item::as_table_mut) {
        for auto in ["autobins", "autotests", "autobenches", "autoexamples"] {
            package_table.insert(auto, toml_edit::value(false));
        }
    }
    if let Some(dependencies) = doc
        .get_mut("dependencies")
        .and_then(Item::as_table_like_mut)
    {
        for name in ENGINE_CRATES.iter().chain([&ENGINE]) {
            let Some(dependency) = dependencies.get_mut(name) else {
                continue;
            };
            let path = toml_edit::value(format!("../{name}"));
            match dependency.as_table_like_mut() {
                Some(table) => {
                    table.insert("path", path);
                }
                // `name = "0.1.0"`: a path alone.
                None => {
                    let mut table = toml_edit::InlineTable::new();
                    table.insert("path", format!("../{name}").into());
                    *dependency = toml_edit::value(table);
                }
            }
        }
    }
    Ok(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engine_and_the_harness_travel_with_their_manifests() {
        for package in ENGINE_CRATES.into_iter().chain([ENGINE, HARNESS, GLUE]) {
            assert!(
                SOURCES
                    .iter()
                    .any(|(p, _)| *p == format!("{package}/Cargo.toml")),
                "{package}"
            );
            assert!(SOURCES
                .iter()
                .any(|(p, _)| *p == format!("{package}/src/lib.rs")));
        }
        assert!(KEY.starts_with(env!("CARGO_PKG_VERSION")));
    }

    #[test]
    fn manifests_are_made_standalone() {
        let workspace_form = r#"[package]
name = "labelfuzz-harness"
version = "0.1.0"

[dependencies]
labelfuzz = { path = ".." }
cc = "1"

[dev-dependencies]
labelfuzz-build = { path = "../labelfuzz-build" }

[workspace]
members = ["."]

[[test]]
name = "t"
path = "tests/t.rs"
"#;
        let out = standalone_manifest(HARNESS, workspace_form).unwrap();
        let doc: DocumentMut = out.parse().unwrap();
        assert!(doc.get("workspace").is_none());
        assert!(doc.get("dev-dependencies").is_none());
        assert!(doc.get("test").is_none());
        assert_eq!(
            doc["dependencies"]["labelfuzz"]["path"].as_str(),
            Some("../labelfuzz")
        );
        assert_eq!(doc["dependencies"]["cc"].as_str(), Some("1"));
        assert_eq!(doc["package"]["autotests"].as_bool(), Some(false));

        // As `cargo package` writes the engine's: the crates by version, no paths.
        let packaged_form = r#"[package]
name = "labelfuzz"
version = "0.1.0"

[dependencies.labelfuzz-core]
version = "0.1.0"

[dependencies.serde]
version = "1"
"#;
        let out = standalone_manifest(ENGINE, packaged_form).unwrap();
        let doc: DocumentMut = out.parse().unwrap();
        assert_eq!(
            doc["dependencies"]["labelfuzz-core"]["path"].as_str(),
            Some("../labelfuzz-core")
        );
        assert!(doc["dependencies"]["serde"].get("path").is_none());
    }
}
