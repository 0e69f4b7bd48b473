//! What a fuzz build needs next to the runtime, materialised in the cache: `labelfuzz-sys`, the
//! `libfuzzer-sys` stand-in that re-exports it for cargo-fuzz projects, and the rustc wrapper.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{cache, sources, BuildError};

/// The stand-in's manifest (`VERSION` is filled in: one that satisfies what the project asks
/// for); the features are libfuzzer-sys's, accepted (labelfuzz is always the engine).
const STAND_IN_MANIFEST: &str = r#"# Written by labelfuzz-build: patched in for libfuzzer-sys by `cargo labelfuzz`.
[package]
name = "libfuzzer-sys"
version = "VERSION"
edition = "2021"
description = "labelfuzz's stand-in for libfuzzer-sys: the same fuzz_target!, run by labelfuzz"
license = "MIT OR Apache-2.0"
publish = false

[lib]
name = "libfuzzer_sys"

[dependencies]
labelfuzz-sys = { path = "../labelfuzz-sys" }

[features]
default = ["link_libfuzzer"]
link_libfuzzer = []
arbitrary-derive = ["labelfuzz-sys/arbitrary-derive"]
"#;

/// The stand-in's library: everything `labelfuzz-sys` has, under libfuzzer-sys's name.
const STAND_IN_LIB: &str = "//! labelfuzz's stand-in for `libfuzzer-sys` (see `labelfuzz-sys`).\n\
pub use labelfuzz_sys::*;\n";

/// A cargo-fuzz crate's `libfuzzer-sys` dependency.
pub(crate) struct LibfuzzerSys {
    requirement: semver::VersionReq,
    /// The `[patch]` table that replaces it: `crates-io`, or the git repository's URL.
    patch_table: String,
}

impl LibfuzzerSys {
    /// The dependency as `cargo metadata` lists it; `None` for a path dependency (a vendored
    /// copy, which cannot be patched).
    pub(crate) fn from_dependency(dep: &cargo_metadata::Dependency) -> Option<Self> {
        let source = dep.source.as_deref()?;
        let patch_table = if source.starts_with("registry+") {
            "crates-io".to_string()
        } else {
            // `git+URL?branch=…#rev`: the patch names the repository.
            let url = source.strip_prefix("git+")?;
            let url = url.split(['?', '#']).next().unwrap_or(url);
            format!("{url:?}")
        };
        Some(Self {
            requirement: dep.req.clone(),
            patch_table,
        })
    }
}

/// The stand-in for `dependency` and the `--config` value that patches it in.
pub(crate) fn stand_in_patch(
    glue: &Glue,
    dependency: &LibfuzzerSys,
) -> Result<(PathBuf, String), BuildError> {
    let Some(dir) = glue.stand_in_for(&dependency.requirement)? else {
        return Err(BuildError::Project(format!(
            "libfuzzer-sys = \"{}\" pins a version the stand-in cannot take; ask for a release \
             line instead (e.g. \"0.4\")",
            dependency.requirement
        )));
    };
    let patch = format!(
        "patch.{}.libfuzzer-sys.path={:?}",
        dependency.patch_table,
        dir.display().to_string()
    );
    Ok((dir, patch))
}

/// The glue crates and the wrapper of this version of the sources.
#[derive(Clone, Debug)]
pub struct Glue {
    /// The `libfuzzer-sys` stand-in's directory for the 0.4 line (for
    /// `patch.crates-io.libfuzzer-sys.path`); [`Glue::stand_in_for`] gives others.
    pub stand_in: PathBuf,
    /// `labelfuzz-sys`'s directory.
    pub labelfuzz_sys: PathBuf,
    /// The compiled `RUSTC_WRAPPER`.
    pub wrapper: PathBuf,
}

impl Glue {
    /// The glue of these sources, written and compiled into the cache on first use.
    pub fn ensure() -> Result<Self, BuildError> {
        let dir = cache::versioned()?.join("glue");
        let glue = Self {
            stand_in: dir.join("libfuzzer-sys"),
            labelfuzz_sys: dir.join("labelfuzz-sys"),
            wrapper: dir.join("bin/labelfuzz-rustc"),
        };
        cache::build_once(&dir, "glue.lock", || {
            sources::write_glue_sources(&glue.labelfuzz_sys)?;
            write_stand_in(&glue.stand_in, "0.4.99")?;
            compile_wrapper(&dir, &glue.wrapper)
        })?;
        Ok(glue)
    }
}

impl Glue {
    /// The stand-in whose version satisfies `requirement` (what the project's manifest asks of
    /// `libfuzzer-sys`, e.g. `^0.3`), written on first use; `None` when no version can (an exact
    /// pin such as `=0.4.7`).
    pub fn stand_in_for(
        &self,
        requirement: &semver::VersionReq,
    ) -> Result<Option<PathBuf>, BuildError> {
        let Some(version) = stand_in_version(requirement) else {
            return Ok(None);
        };
        if version == "0.4.99" {
            return Ok(Some(self.stand_in.clone()));
        }
        let dir = self
            .stand_in
            .with_file_name(format!("libfuzzer-sys-{version}"));
        if !dir.join("src/lib.rs").is_file() {
            let _lock = cache::Lock::take(&cache::root()?.join("glue.lock"))?;
            write_stand_in(&dir, &version)?;
        }
        Ok(Some(dir))
    }
}

/// A version the stand-in can take to satisfy `requirement`: the highest patch level of the
/// release line it names (`0.3` → `0.3.99`, `0.4.7` → `0.4.99`, `1` → `1.99.0`, `*` → `0.4.99`).
#[must_use]
pub fn stand_in_version(requirement: &semver::VersionReq) -> Option<String> {
    let Some(line) = requirement.comparators.first() else {
        // `*` (a git dependency without a version, for one): today's release line.
        return Some("0.4.99".into());
    };
    let version = if line.major == 0 {
        semver::Version::new(0, line.minor.unwrap_or(4), 99)
    } else {
        semver::Version::new(line.major, 99, 0)
    };
    requirement.matches(&version).then(|| version.to_string())
}

fn write_stand_in(dir: &Path, version: &str) -> Result<(), BuildError> {
    let manifest = STAND_IN_MANIFEST.replace("VERSION", version);
    cache::write_file(&dir.join("Cargo.toml"), manifest.as_bytes())?;
    cache::write_file(&dir.join("src/lib.rs"), STAND_IN_LIB.as_bytes())
}

/// Compiles the wrapper (one std-only file) with the default toolchain.
fn compile_wrapper(dir: &Path, output: &Path) -> Result<(), BuildError> {
    let source = dir.join("wrapper/labelfuzz_rustc.rs");
    cache::write_file(&source, include_bytes!("wrapper.rs"))?;
    if let Some(parent) = output.parent() {
        std::fs::create_dir_all(parent).map_err(|e| BuildError::io("create", parent, e))?;
    }
    let partial = output.with_extension("partial");
    crate::error::run(
        Command::new("rustc")
            .current_dir(dir)
            .env_remove("RUSTUP_TOOLCHAIN")
            .args(["--edition", "2021", "-O", "--crate-name", "labelfuzz_rustc"])
            .arg("-o")
            .arg(&partial)
            .arg(&source),
        "compiling the rustc wrapper",
    )?;
    std::fs::rename(&partial, output).map_err(|e| BuildError::io("rename", &partial, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version_for(requirement: &str) -> Option<String> {
        stand_in_version(&semver::VersionReq::parse(requirement).unwrap())
    }

    #[test]
    fn the_stand_in_takes_a_version_the_project_accepts() {
        assert_eq!(version_for("0.4").as_deref(), Some("0.4.99"));
        assert_eq!(version_for("0.4.7").as_deref(), Some("0.4.99"));
        assert_eq!(version_for("^0.3").as_deref(), Some("0.3.99"));
        assert_eq!(version_for("1.2").as_deref(), Some("1.99.0"));
        assert_eq!(version_for("=0.4.7"), None);
        assert_eq!(version_for("*").as_deref(), Some("0.4.99"));
    }
}
