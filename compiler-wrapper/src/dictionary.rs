//! The automatic dictionary of a C/C++ fuzzer: when the wrapper links one, the tokens of the
//! instrumented objects and archive members it links (`labelfuzz-dictionary` says which
//! literals count and why) are stored in the executable with `llvm-objcopy`.
//!
//! A source file compiled and linked by the same command is not read (its object is clang's
//! temporary); build systems compile the library on its own, and the harness's literals are
//! rarely the input's words.

use std::path::PathBuf;

use crate::{Invocation, Llvm};

/// Stores the tokens of the instrumented objects `invocation` linked in the fuzzer it wrote;
/// a warning if that fails (the fuzzer works without them).
pub fn embed_into_fuzzer(llvm: &Llvm, invocation: &Invocation) {
    let executable = invocation
        .output_file
        .clone()
        .unwrap_or_else(|| PathBuf::from("a.out"));
    let objcopy = PathBuf::from(llvm.tool("llvm-objcopy"));
    if let Err(why) = labelfuzz_dictionary::embed(&objcopy, &invocation.inputs, &executable) {
        eprintln!(
            "labelfuzz-cc: warning: no automatic dictionary in {}: {why}",
            executable.display()
        );
    }
}
