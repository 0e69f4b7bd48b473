//! The automatic dictionary: tokens stored in the fuzzer's executable when it was linked
//! (`labelfuzz-cc` for C/C++, `labelfuzz-build` for Rust; `labelfuzz-dictionary` says which
//! literals are tokens and holds the section's format), read back from the executable's file.

/// The tokens stored in the running executable (none when it has no such section: built
/// another way, or from code without literals).
#[must_use]
pub fn embedded_dictionary() -> Vec<Vec<u8>> {
    std::fs::read("/proc/self/exe")
        .map(|bytes| labelfuzz_dictionary::tokens_in_elf(&bytes))
        .unwrap_or_default()
}
