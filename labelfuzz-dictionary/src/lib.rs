//! The automatic dictionary: the string literals of the code under test, stored in its fuzzer.
//!
//! The words a program compares its input against are often written in its source as string
//! literals: SQLite's keywords and the SQL it runs on itself, a parser's names, a format's
//! magic strings. Coverage alone finds such a word only by luck when no branch shows the fuzzer
//! it is getting closer (a keyword looked up by hash in a table). So when a fuzzer is linked,
//! the literals of the objects built with SanitizerCoverage — the program under test, not the
//! fuzzer's runtime nor the system's libraries — become tokens, stored in the executable's
//! [`SECTION`], which the fuzzer reads back when a run starts ([`tokens_in_elf`]).
//!
//! One crate holds the rules and the format, so that the C wrapper (`labelfuzz-cc`), the Rust
//! build (`labelfuzz-build`) and the runtime agree on them.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::read::archive::ArchiveFile;
use object::{Object, ObjectSection};

/// The executable's section holding the tokens, each followed by a NUL byte (a token holds no
/// NUL). Not loaded into memory: the fuzzer reads it from its file.
pub const SECTION: &str = ".labelfuzz_dict";

/// Literals longer than this are not tokens themselves (their words still are): a long message
/// is not something the input repeats.
const MAX_TOKEN_LEN: usize = 32;

/// Words shorter than this are not taken out of a literal (every text has them).
const MIN_WORD_LEN: usize = 3;

/// At most this many tokens (the shortest first): havoc picks a token uniformly, so a huge
/// dictionary would make each one rare.
const MAX_TOKENS: usize = 4096;

/// Why the tokens could not be stored in an executable.
#[derive(Debug)]
pub enum EmbedError {
    /// Reading the executable or writing the section's contents beside it failed.
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        error: std::io::Error,
    },
    /// `objcopy` could not be started.
    Start {
        /// The tool.
        objcopy: PathBuf,
        /// What went wrong.
        error: std::io::Error,
    },
    /// `objcopy` ran and failed.
    Objcopy {
        /// The tool.
        objcopy: PathBuf,
        /// What it printed.
        stderr: String,
    },
}

impl std::fmt::Display for EmbedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io { path, error } => write!(f, "{}: {error}", path.display()),
            Self::Start { objcopy, error } => {
                write!(f, "could not run {}: {error}", objcopy.display())
            }
            Self::Objcopy { objcopy, stderr } => write!(f, "{}: {stderr}", objcopy.display()),
        }
    }
}

impl std::error::Error for EmbedError {}

/// The tokens of the instrumented objects among `inputs` (objects and archives such as rlibs;
/// other files and unreadable ones are skipped), shortest first.
#[must_use]
pub fn collect(inputs: &[impl AsRef<Path>]) -> Vec<Vec<u8>> {
    let mut tokens = BTreeSet::new();
    for input in inputs {
        let Ok(data) = std::fs::read(input) else {
            continue;
        };
        if let Ok(archive) = ArchiveFile::parse(&*data) {
            for member in archive.members().flatten() {
                if let Ok(bytes) = member.data(&*data) {
                    add_object_tokens(bytes, &mut tokens);
                }
            }
        } else {
            add_object_tokens(&data, &mut tokens);
        }
    }
    let mut tokens: Vec<Vec<u8>> = tokens.into_iter().collect();
    tokens.sort_by(|a, b| (a.len(), a).cmp(&(b.len(), b)));
    tokens.truncate(MAX_TOKENS);
    tokens
}

/// How a section holds literals.
#[derive(Debug, PartialEq, Eq)]
enum Literals {
    /// NUL-ended strings (C's `.rodata.str1.1`), or one literal without a NUL (Rust's
    /// anonymous constants, `.rodata..Lanon.*`).
    Strings,
    /// Constants of exactly this many bytes side by side (LLVM's mergeable `.rodata.cst4`
    /// to `.rodata.cst32`, where a Rust literal of that length goes: serde_json's `true`,
    /// `null` and `-inf` share one).
    Constants(usize),
}

/// How the section named `name` holds literals, if it holds them.
fn literals_in(name: &str) -> Option<Literals> {
    if name.starts_with(".rodata.str") || name.starts_with(".rodata..L") {
        return Some(Literals::Strings);
    }
    let size = name.strip_prefix(".rodata.cst")?.parse().ok()?;
    [4, 8, 16, 32]
        .contains(&size)
        .then_some(Literals::Constants(size))
}

/// Adds the tokens of one object file, if SanitizerCoverage instrumented it.
fn add_object_tokens(bytes: &[u8], tokens: &mut BTreeSet<Vec<u8>>) {
    let Ok(file) = object::File::parse(bytes) else {
        return;
    };
    let instrumented = file
        .sections()
        .any(|s| s.name().is_ok_and(|n| n.starts_with("__sancov")));
    if !instrumented {
        return;
    }
    for section in file.sections() {
        let Some(kind) = section.name().ok().and_then(literals_in) else {
            continue;
        };
        let Ok(data) = section.data() else {
            continue;
        };
        let entries: Vec<&[u8]> = match kind {
            Literals::Strings => data.split(|&b| b == 0).collect(),
            Literals::Constants(size) => data
                .chunks_exact(size)
                .flat_map(|entry| entry.split(|&b| b == 0))
                .collect(),
        };
        for literal in entries {
            add_literal_tokens(literal, tokens);
        }
    }
}

/// Adds the tokens of one literal, if it is printable text: the literal itself up to
/// [`MAX_TOKEN_LEN`] bytes, and each of its words (letters, digits and `_`, not starting with a
/// digit) of at least [`MIN_WORD_LEN`] bytes (in binary data, letters side by side are chance).
fn add_literal_tokens(literal: &[u8], tokens: &mut BTreeSet<Vec<u8>>) {
    let printable = literal
        .iter()
        .all(|&b| b.is_ascii_graphic() || b == b' ' || b == b'\t' || b == b'\n');
    if !printable {
        return;
    }
    if (2..=MAX_TOKEN_LEN).contains(&literal.len()) {
        tokens.insert(literal.to_vec());
    }
    for word in literal.split(|&b| !(b.is_ascii_alphanumeric() || b == b'_')) {
        let starts_well = word.first().is_some_and(|b| !b.is_ascii_digit());
        if starts_well && (MIN_WORD_LEN..=MAX_TOKEN_LEN).contains(&word.len()) {
            tokens.insert(word.to_vec());
        }
    }
}

/// The contents of [`SECTION`] for `tokens`.
#[must_use]
pub fn encode(tokens: &[Vec<u8>]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for token in tokens {
        bytes.extend_from_slice(token);
        bytes.push(0);
    }
    bytes
}

/// The tokens in the [`SECTION`] of the ELF file `bytes` (none without one).
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

/// Stores the tokens of the instrumented objects among `inputs` in `executable`'s [`SECTION`]
/// with `objcopy` (binutils' or LLVM's); returns how many ([`collect`], then [`embed_tokens`]).
///
/// # Errors
/// As [`embed_tokens`].
pub fn embed(
    objcopy: &Path,
    inputs: &[impl AsRef<Path>],
    executable: &Path,
) -> Result<usize, EmbedError> {
    embed_tokens(objcopy, &collect(inputs), executable)
}

/// Stores `tokens` in `executable`'s [`SECTION`] with `objcopy`; returns how many. Nothing is
/// written when there are none, or when the executable already has the section (a build that
/// did not relink it).
///
/// # Errors
/// Reading the executable, writing the section's contents beside it, or running `objcopy`.
pub fn embed_tokens(
    objcopy: &Path,
    tokens: &[Vec<u8>],
    executable: &Path,
) -> Result<usize, EmbedError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |error| EmbedError::Io { path, error }
    };
    if tokens.is_empty() {
        return Ok(0);
    }
    let existing = std::fs::read(executable).map_err(io(executable))?;
    let has_section =
        object::File::parse(&*existing).is_ok_and(|file| file.section_by_name(SECTION).is_some());
    if has_section {
        return Ok(0);
    }
    let mut contents = executable.as_os_str().to_owned();
    contents.push(".dict-section");
    let contents = PathBuf::from(contents);
    std::fs::write(&contents, encode(tokens)).map_err(io(&contents))?;
    let mut section = OsString::from(format!("{SECTION}="));
    section.push(&contents);
    let result = Command::new(objcopy)
        .arg("--add-section")
        .arg(section)
        .arg(executable)
        .output();
    let _ = std::fs::remove_file(&contents);
    let objcopy = objcopy.to_path_buf();
    match result {
        Ok(out) if out.status.success() => Ok(tokens.len()),
        Ok(out) => Err(EmbedError::Objcopy {
            objcopy,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        }),
        Err(error) => Err(EmbedError::Start { objcopy, error }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens_of(literals: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut tokens = BTreeSet::new();
        for literal in literals {
            add_literal_tokens(literal, &mut tokens);
        }
        tokens.into_iter().collect()
    }

    #[test]
    fn literals_and_their_words_are_tokens() {
        let got = tokens_of(&[
            b"SELECT*FROM sqlite_master",
            b"%s",
            b"\x01\x02bin",
            b"a",
            b"CREATE TABLE t(x)",
        ]);
        let want: Vec<&[u8]> = vec![
            b"%s",
            b"CREATE",
            b"CREATE TABLE t(x)",
            b"FROM",
            b"SELECT",
            b"SELECT*FROM sqlite_master",
            b"TABLE",
            b"sqlite_master",
        ];
        assert_eq!(
            got, want,
            "binary data gives no words, one letter is no token"
        );
    }

    #[test]
    fn long_literals_give_only_their_words() {
        let tokens = tokens_of(&[b"this message is longer than thirty-two bytes"]);
        assert!(tokens.iter().all(|t| t.len() <= MAX_TOKEN_LEN));
        assert!(tokens.contains(&b"message".to_vec()));
        assert!(!tokens.contains(&b"is".to_vec()), "two letters are no word");
        assert!(tokens.contains(&b"thirty".to_vec()), "a hyphen ends a word");
    }

    #[test]
    fn string_and_constant_sections_are_told_apart_by_name() {
        assert_eq!(literals_in(".rodata.str1.1"), Some(Literals::Strings));
        assert_eq!(
            literals_in(".rodata..Lanon.fad5.3"),
            Some(Literals::Strings)
        );
        assert_eq!(literals_in(".rodata.cst4"), Some(Literals::Constants(4)));
        assert_eq!(literals_in(".rodata.cst16"), Some(Literals::Constants(16)));
        assert_eq!(literals_in(".rodata.cst3"), None);
        assert_eq!(literals_in(".rodata.cstx"), None);
        assert_eq!(literals_in(".rodata"), None);
        assert_eq!(literals_in(".text"), None);
    }

    #[test]
    fn the_section_is_the_tokens_each_ended_by_nul_and_reads_back() {
        assert_eq!(encode(&[b"ab".to_vec(), b"c".to_vec()]), b"ab\0c\0");
        assert!(tokens_in_elf(b"not an ELF file").is_empty());
        let exe = std::fs::read("/proc/self/exe").expect("the test's own executable");
        assert!(
            tokens_in_elf(&exe).is_empty(),
            "a test binary has no dictionary"
        );
    }

    #[test]
    fn objects_without_sanitizer_coverage_give_no_tokens() {
        // The test binary itself: full of literals, and not instrumented.
        let exe = std::env::current_exe().expect("the test's own executable");
        assert!(collect(&[exe]).is_empty());
        assert!(collect(&["/nonexistent/file.o"]).is_empty());
    }
}
