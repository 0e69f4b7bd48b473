//! The automatic dictionary of Rust fuzz binaries: after a fuzz build, the tokens of the string
//! literals in the instrumented crates' libraries (rlibs) are stored in each binary, as
//! `labelfuzz-cc` does for C (`labelfuzz-dictionary` says which literals count). The bin's own
//! source, the harness, is not read: its literals are rarely the input's words.
//!
//! Written with binutils' `objcopy`, which every machine that builds Rust has beside its
//! linker (LLVM's tools may not be installed).

use std::path::{Path, PathBuf};

use crate::Built;

/// The tool that adds the section.
const OBJCOPY: &str = "objcopy";

/// Stores the tokens of `libraries` (read once, whatever the number of binaries) in every
/// binary of `built`; a warning for a binary where that fails (it fuzzes without them).
pub fn embed(built: &[Built], libraries: &[PathBuf]) {
    let tokens = labelfuzz_dictionary::collect(libraries);
    for binary in built {
        let objcopy = Path::new(OBJCOPY);
        if let Err(why) = labelfuzz_dictionary::embed_tokens(objcopy, &tokens, &binary.path) {
            eprintln!(
                "labelfuzz: warning: no automatic dictionary in {}: {why}",
                binary.path.display()
            );
        }
    }
}
