//! What a fuzz build needs next to the runtime, materialised in the cache: `labelfuzz-sys`, the
//! `libfuzzer-sys` stand-in that re-exports it for cargo-fuzz projects, and the rustc wrapper.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{cache, sources, BuildError};

/// The stand-in's manifest. Version 0.4.99 satisfies every `libfuzzer-sys = "0.4…"` a project
/// asks for; the features are libfuzzer-sys's, accepted (labelfuzz is always the engine).
const STAND_IN_MANIFEST: &str = r#"# Written by labelfuzz-build: patched in for crates.io's libfuzzer-sys by `cargo labelfuzz`.
[package]
name = "libfuzzer-sys"
version = "0.4.99"
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

/// The glue crates and the wrapper of this version of the sources.
#[derive(Clone, Debug)]
pub struct Glue {
    /// The `libfuzzer-sys` stand-in's directory (for `patch.crates-io.libfuzzer-sys.path`).
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
        if dir.join("complete").is_file() {
            return Ok(glue);
        }
        let _lock = cache::Lock::take(&cache::root()?.join("glue.lock"))?;
        if dir.join("complete").is_file() {
            return Ok(glue);
        }
        sources::write_glue_sources(&glue.labelfuzz_sys)?;
        write(&glue.stand_in.join("Cargo.toml"), STAND_IN_MANIFEST)?;
        write(&glue.stand_in.join("src/lib.rs"), STAND_IN_LIB)?;
        compile_wrapper(&dir, &glue.wrapper)?;
        cache::write_atomically(&dir.join("complete"), b"")?;
        Ok(glue)
    }
}

fn write(path: &Path, text: &str) -> Result<(), BuildError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| BuildError::io("create", parent, e))?;
    }
    std::fs::write(path, text).map_err(|e| BuildError::io("write", path, e))
}

/// Compiles the wrapper (one std-only file) with the default toolchain.
fn compile_wrapper(dir: &Path, output: &Path) -> Result<(), BuildError> {
    let source = dir.join("wrapper/labelfuzz_rustc.rs");
    write(&source, include_str!("wrapper.rs"))?;
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
