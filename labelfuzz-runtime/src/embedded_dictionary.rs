//! The automatic dictionary: tokens the compiler wrapper stored in the fuzzer's executable.
//!
//! `labelfuzz-cc` reads the string literals of the code it instrumented when it links a fuzzer
//! (its `dictionary` module says which and why) and adds them to the executable as a section of
//! NUL-ended tokens, not loaded into memory. This reads them back from the executable's file.

use object::{Object, ObjectSection};

/// The section's name; the same as the wrapper's `dictionary::SECTION`.
pub const SECTION: &str = ".labelfuzz_dict";

/// The tokens stored in the running executable (none when it has no such section: built
/// another way, or from code without literals).
#[must_use]
pub fn embedded_dictionary() -> Vec<Vec<u8>> {
    std::fs::read("/proc/self/exe")
        .map(|bytes| tokens_in_elf(&bytes))
        .unwrap_or_default()
}

/// The tokens in the [`SECTION`] of the ELF file `bytes`.
#[must_use]
pub fn tokens_in_elf(bytes: &[u8]) -> Vec<Vec<u8>> {
    let Ok(file) = object::File::parse(bytes) else {
        return Vec::new();
    };
    let Some(data) = file
        .section_by_name(SECTION)
        .and_then(|section| section.data().ok())
    else {
        return Vec::new();
    };
    data.split(|&b| b == 0)
        .filter(|token| !token.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_executable_without_the_section_has_no_tokens() {
        let exe = std::fs::read("/proc/self/exe").expect("the test's own executable");
        assert!(tokens_in_elf(&exe).is_empty());
        assert!(tokens_in_elf(b"not an ELF file").is_empty());
    }
}
