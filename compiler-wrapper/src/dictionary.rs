//! The automatic dictionary: the string literals of the code under test, embedded in the fuzzer.
//!
//! The words a program compares its input against are often written in its source as string
//! literals: SQLite's keywords and the SQL it runs on itself, a parser's names, a format's
//! magic strings. Coverage alone finds such a word only by luck, when no branch tells the fuzzer
//! it is getting closer (SQLite's keyword lookup is a hash and a table). When it links a fuzzer,
//! the wrapper reads the string-literal sections (`.rodata.str*`) of the objects and archive
//! members built with SanitizerCoverage — the program under test, not the fuzzer's runtime or
//! the system's libraries — and stores their tokens in the executable's [`SECTION`], which the
//! runtime reads when a run starts (`labelfuzz_runtime::embedded_dictionary`).
//!
//! A source file compiled and linked by the same command is not read (its object is clang's
//! temporary); build systems compile the library on its own, and the harness's literals are
//! rarely the input's words.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::read::archive::ArchiveFile;
use object::{Object, ObjectSection};

use crate::{Invocation, Llvm};

/// The executable's section holding the tokens, each followed by a NUL byte (literals hold no
/// NUL). Not loaded into memory: the runtime reads it from the file.
pub const SECTION: &str = ".labelfuzz_dict";

/// Literals longer than this are not tokens themselves (their words still are): a long message
/// is not something the input repeats.
const MAX_TOKEN_LEN: usize = 32;

/// Words shorter than this are not taken out of a literal (every text has them).
const MIN_WORD_LEN: usize = 3;

/// At most this many tokens (the shortest first): havoc picks a token uniformly, so a huge
/// dictionary would make each one rare.
const MAX_TOKENS: usize = 4096;

/// The tokens of the instrumented objects among `inputs` (objects and archives; other files are
/// skipped), shortest first.
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
        if !section.name().is_ok_and(is_literal_section) {
            continue;
        }
        if let Ok(data) = section.data() {
            add_literal_tokens(data, tokens);
        }
    }
}

/// Whether a section of that name holds string literals: C's mergeable strings
/// (`.rodata.str1.1`), or one of Rust's anonymous constants (`.rodata..Lanon.*`, one literal
/// each, without a NUL).
fn is_literal_section(name: &str) -> bool {
    name.starts_with(".rodata.str") || name.starts_with(".rodata..L")
}

/// Adds the tokens of a string-literal section: each literal of printable text up to
/// [`MAX_TOKEN_LEN`] bytes, and each word (letters, digits and `_`, not starting with a digit)
/// of at least [`MIN_WORD_LEN`] bytes in a literal of printable text (in binary data, letters
/// side by side are chance).
fn add_literal_tokens(section: &[u8], tokens: &mut BTreeSet<Vec<u8>>) {
    for literal in section.split(|&b| b == 0) {
        let printable = literal
            .iter()
            .all(|&b| b.is_ascii_graphic() || b == b' ' || b == b'\t' || b == b'\n');
        if !printable {
            continue;
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

/// Stores the tokens of the instrumented objects `invocation` linked in the fuzzer it wrote;
/// a warning if that fails (the fuzzer works without them).
pub fn embed_into_fuzzer(llvm: &Llvm, invocation: &Invocation) {
    let executable = invocation
        .output_file
        .clone()
        .unwrap_or_else(|| PathBuf::from("a.out"));
    if let Err(why) = embed(llvm, &invocation.inputs, &executable) {
        eprintln!(
            "labelfuzz-cc: warning: no automatic dictionary in {}: {why}",
            executable.display()
        );
    }
}

/// Stores the tokens of the instrumented objects among `inputs` in `executable`'s
/// [`SECTION`] (nothing when there are none).
///
/// # Errors
/// What went wrong writing the section's contents or running `llvm-objcopy`, as text.
pub fn embed(llvm: &Llvm, inputs: &[PathBuf], executable: &Path) -> Result<(), String> {
    let tokens = collect(inputs);
    if tokens.is_empty() {
        return Ok(());
    }
    let mut contents = executable.as_os_str().to_owned();
    contents.push(".dict-section");
    let contents = PathBuf::from(contents);
    std::fs::write(&contents, encode(&tokens))
        .map_err(|e| format!("writing {}: {e}", contents.display()))?;
    let mut section = OsString::from(format!("{SECTION}="));
    section.push(&contents);
    let result = Command::new(llvm.tool("llvm-objcopy"))
        .arg("--add-section")
        .arg(section)
        .arg(executable)
        .output();
    let _ = std::fs::remove_file(&contents);
    match result {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(String::from_utf8_lossy(&out.stderr).trim().to_string()),
        Err(e) => Err(format!("could not run llvm-objcopy: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_their_words_are_tokens() {
        let mut tokens = BTreeSet::new();
        add_literal_tokens(
            b"SELECT*FROM sqlite_master\0%s\0\x01\x02bin\0a\0CREATE TABLE t(x)\0",
            &mut tokens,
        );
        let got: Vec<&[u8]> = tokens.iter().map(Vec::as_slice).collect();
        assert_eq!(
            got,
            vec![
                &b"%s"[..],
                b"CREATE",
                b"CREATE TABLE t(x)",
                b"FROM",
                b"SELECT",
                b"SELECT*FROM sqlite_master",
                b"TABLE",
                b"sqlite_master",
            ],
            "binary data gives no words, one letter is no token"
        );
    }

    #[test]
    fn long_literals_give_only_their_words() {
        let mut tokens = BTreeSet::new();
        let long = b"this message is longer than thirty-two bytes\0";
        add_literal_tokens(long, &mut tokens);
        assert!(tokens.iter().all(|t| t.len() <= MAX_TOKEN_LEN));
        assert!(tokens.contains(b"message".as_slice()));
        assert!(
            !tokens.contains(b"is".as_slice()),
            "two letters are too short for a word"
        );
        assert!(
            tokens.contains(b"thirty".as_slice()),
            "a hyphen ends a word"
        );
    }

    #[test]
    fn the_section_is_the_tokens_each_ended_by_nul() {
        assert_eq!(encode(&[b"ab".to_vec(), b"c".to_vec()]), b"ab\0c\0");
    }
}
