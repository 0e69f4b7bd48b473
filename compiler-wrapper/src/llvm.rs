//! The clang-19 installation the wrapper drives, and what its tools tell about the inputs of a
//! link.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{WrapperError, FUZZ_ENTRY, LLVM_MAJOR};

/// The clang-19 installation the wrapper drives.
#[derive(Clone, Debug)]
pub struct Llvm {
    /// Its `bin` directory (holds `clang`, `clang++`, `llvm-nm`).
    pub bin: PathBuf,
}

impl Llvm {
    /// Finds LLVM 19: `$LABELFUZZ_LLVM_BIN` if set (and then only there), else Debian's
    /// `/usr/lib/llvm-19/bin` or the directory of `clang-19` on the `PATH`.
    ///
    /// # Errors
    /// [`WrapperError::ClangMissing`] naming every place looked at.
    pub fn find() -> Result<Self, WrapperError> {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(dir) = env::var_os("LABELFUZZ_LLVM_BIN") {
            // An explicit choice: no silent fallback to another installation.
            let dir = PathBuf::from(dir);
            return if dir.join("clang").is_file() && dir.join("clang++").is_file() {
                Ok(Self { bin: dir })
            } else {
                Err(WrapperError::ClangMissing(vec![dir]))
            };
        }
        candidates.push(format!("/usr/lib/llvm-{LLVM_MAJOR}/bin").into());
        if let Some(path) = env::var_os("PATH") {
            for dir in env::split_paths(&path) {
                let clang = dir.join(format!("clang-{LLVM_MAJOR}"));
                if let Ok(real) = fs::canonicalize(&clang) {
                    if let Some(parent) = real.parent() {
                        candidates.push(parent.to_path_buf());
                    }
                }
            }
        }
        match candidates
            .iter()
            .find(|dir| dir.join("clang").is_file() && dir.join("clang++").is_file())
        {
            Some(bin) => Ok(Self { bin: bin.clone() }),
            None => Err(WrapperError::ClangMissing(candidates)),
        }
    }

    pub(crate) fn tool(&self, name: &str) -> String {
        self.bin.join(name).to_string_lossy().into_owned()
    }

    /// Whether an object file or archive defines `symbol` (asks `llvm-nm`).
    #[must_use]
    pub fn defines(&self, file: &Path, symbol: &str) -> bool {
        let Ok(listing) = Command::new(self.bin.join("llvm-nm"))
            .args(["--defined-only", "--extern-only", "--just-symbol-name"])
            .arg(file)
            .output()
        else {
            return false;
        };
        String::from_utf8_lossy(&listing.stdout)
            .lines()
            .any(|line| line.trim() == symbol)
    }
}

/// Whether the inputs of a link define the libFuzzer entry point: a source file that mentions
/// it, or an object or archive whose symbol table defines it.
#[must_use]
pub fn defines_fuzz_entry(llvm: &Llvm, inputs: &[PathBuf]) -> bool {
    inputs.iter().any(|input| {
        let extension = input
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        match extension.as_str() {
            "c" | "cc" | "cpp" | "cxx" | "c++" | "m" | "mm" => fs::read(input)
                .map(|text| contains(&text, FUZZ_ENTRY.as_bytes()))
                .unwrap_or(false),
            "o" | "obj" | "a" | "lo" | "la" => llvm.defines(input, FUZZ_ENTRY),
            _ => false,
        }
    })
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
