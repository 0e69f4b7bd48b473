//! End to end: grammars mined from recursive-descent C parsers (`fuzzers/mine/`) by their
//! mining builds (`LABELFUZZ_MINE=1 labelfuzz-cc`), measured against hand-written reference
//! grammars kept here only (`tests/data/mine/`).
//!
//! - **Precision**: the share of 1 000 sentences generated from the mined grammar that the
//!   parser accepts (`FUZZER mine` measures it and prints it).
//! - **Recall**: the share of 1 000 sentences generated from the reference grammar that the mined
//!   grammar parses (labelfuzz's Earley parser).
//!
//! Mimid (ESEC/FSE 2020) reports 83.8–100 % precision and 90.5–100 % recall on its C subjects.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{checked, compiler_wrapper_dir, root, run, scratch};
use labelfuzz::grammar::{parse, Grammar, ParseError};
use labelfuzz_grammar::mine::sentences;

/// Builds `fuzzers/mine/<subject>.c` into `dir/<name>`, as a mining build when `mining`.
fn build(dir: &Path, subject: &str, name: &str, mining: bool) -> PathBuf {
    build_with(dir, subject, name, mining, &[])
}

/// [`build`] with more compiler `flags`.
fn build_with(dir: &Path, subject: &str, name: &str, mining: bool, flags: &[&str]) -> PathBuf {
    let source = root().join("fuzzers/mine").join(format!("{subject}.c"));
    let mut command = Command::new(compiler_wrapper_dir().join("labelfuzz-cc"));
    command
        .current_dir(dir)
        .args(["-O2", source.to_str().unwrap(), "-o", name])
        .args(flags);
    if mining {
        command.env("LABELFUZZ_MINE", "1");
    }
    checked(&mut command, &format!("building {subject} ({name})"));
    dir.join(name)
}

fn reference(subject: &str) -> Grammar {
    let path = root()
        .join("tests/data/mine")
        .join(format!("{subject}.json"));
    let text = std::fs::read_to_string(&path).expect("reference grammar");
    Grammar::from_json(&text).expect("a valid reference grammar")
}

/// The share of `of` a line `precision: A of N ...` of the miner's output says.
fn precision_of(stdout: &str) -> f64 {
    let line = stdout
        .lines()
        .find(|line| line.starts_with("precision: "))
        .unwrap_or_else(|| panic!("no precision line in:\n{stdout}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let accepted: f64 = words[1].parse().expect("accepted count");
    let total: f64 = words[3].parse().expect("sentence count");
    accepted / total
}

/// Mines `fuzzers/mine/<subject>.c` from 200 samples of its reference grammar; returns
/// (precision, recall).
fn mine_and_measure(subject: &str) -> (f64, f64) {
    let dir = scratch(&format!("mine-{subject}"));
    let miner = build(&dir, subject, "miner", true);
    measure(subject, &miner, &dir, &[])
}

/// Mines with the mining build `miner` (and the miner's `flags`) from 200 samples of
/// `subject`'s reference grammar (written under `dir`); returns (precision, recall).
fn measure(subject: &str, miner: &Path, dir: &Path, flags: &[&str]) -> (f64, f64) {
    let reference = reference(subject);
    let samples = dir.join("samples");
    std::fs::create_dir_all(&samples).expect("samples dir");
    for (i, sample) in sentences(&reference, 200, 7, 6).iter().enumerate() {
        std::fs::write(samples.join(format!("{i:03}")), sample).expect("sample written");
    }
    let grammar_path = dir.join("mined.json");
    let mut args = vec![
        "mine",
        samples.to_str().unwrap(),
        "-o",
        grammar_path.to_str().unwrap(),
    ];
    args.extend_from_slice(flags);
    let output = run(miner, &args);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let precision = precision_of(&stdout);
    let mined_text = std::fs::read_to_string(&grammar_path).expect("the grammar is written");
    let mined = Grammar::from_json(&mined_text).expect("the mined grammar reads back");
    let probes = sentences(&reference, 1000, 99, 8);
    let (parsed, missed): (Vec<&Vec<u8>>, Vec<&Vec<u8>>) = probes.iter().partition(|sentence| {
        matches!(
            parse(&mined, 256, sentence),
            Ok(_) | Err(ParseError::TooDeep { .. })
        )
    });
    let recall = parsed.len() as f64 / probes.len() as f64;
    let examples: Vec<String> = missed
        .iter()
        .take(8)
        .map(|s| format!("{:?}", String::from_utf8_lossy(s)))
        .collect();
    println!(
        "{subject}: precision {:.1} %, recall {:.1} %\nnot parsed, for example: {}\n{mined_text}",
        100.0 * precision,
        100.0 * recall,
        examples.join(", ")
    );
    (precision, recall)
}

fn assert_above_mimid(subject: &str) {
    let (precision, recall) = mine_and_measure(subject);
    assert!(precision >= 0.9, "{subject}: precision {precision}");
    assert!(recall >= 0.95, "{subject}: recall {recall}");
}

#[test]
fn the_seed_arithmetic_grammar_is_mined_from_its_parser() {
    assert_above_mimid("expr");
}

#[test]
fn the_seed_arithmetic_grammar_is_mined_from_a_rust_parser() {
    // The Rust twin of expr.c, built as `cargo labelfuzz build --mine` builds it. Its bytes
    // are read through library code instantiated in the crate (`<[u8]>::get`,
    // `Option::copied`), which the miner sees through to the parser's functions.
    let miner = common::build_fuzzer_as("mine_expr", labelfuzz_build::Mode::Mine);
    let (precision, recall) = measure("expr", &miner, &scratch("mine-rust-expr"), &[]);
    assert!(precision >= 0.9, "precision {precision}");
    assert!(recall >= 0.95, "recall {recall}");
}

#[test]
fn a_json_grammar_is_mined_from_serde_json() {
    // The repository's serde_json fuzz target, unchanged: it rejects nothing, so invalid input
    // is what reaches serde_json's syntax error constructor. serde_json peeks at structural
    // bytes in its whitespace skipper and dispatches on them in the caller (comparison
    // ownership), scans strings eight bytes at a time (bytes read by memcpy go to the scanner),
    // and reads `ull`, `alse` and `rue` in one function (split by call site).
    let miner = common::build_fuzzer_as("json", labelfuzz_build::Mode::Mine);
    let (precision, recall) = measure(
        "serde_json",
        &miner,
        &scratch("mine-serde-json"),
        &["--error", "serde_json::error::Error::syntax"],
    );
    assert!(precision >= 0.85, "precision {precision}");
    assert!(recall >= 0.9, "recall {recall}");
}

#[test]
fn a_json_grammar_is_mined_from_its_parser() {
    assert_above_mimid("json");
}

#[test]
fn an_ini_grammar_is_mined_from_its_parser() {
    assert_above_mimid("ini");
}

#[test]
fn a_fuzzing_run_mines_its_own_corpus_and_fuzzes_with_the_grammar() {
    let dir = scratch("mine-flow");
    let fuzzer = build(&dir, "expr", "fuzzer", false);
    let miner = build(&dir, "expr", "miner", true);
    let out = dir.join("out");
    let out_arg = out.to_str().unwrap();
    let fuzzed = run(&fuzzer, &["-o", out_arg, "--runs", "20000", "--seed", "3"]);
    assert_eq!(fuzzed.status.code(), Some(0), "{fuzzed:?}");
    let mined = run(&miner, &["mine", out_arg, "--precision", "200"]);
    let stdout = String::from_utf8_lossy(&mined.stdout);
    assert_eq!(mined.status.code(), Some(0), "{stdout}");
    assert!(out.join("mined.json").is_file(), "{stdout}");
    assert!(precision_of(&stdout) >= 0.9, "{stdout}");
    let with_grammar = run(
        &fuzzer,
        &[
            "-o",
            out_arg,
            "--grammar",
            "mined",
            "--runs",
            "2000",
            "--seed",
            "3",
        ],
    );
    assert_eq!(
        with_grammar.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&with_grammar.stderr)
    );
}

#[test]
fn a_crash_found_with_the_mined_grammar_is_a_pattern_over_that_grammar() {
    // mine -> fuzz with the mined grammar -> crash -> grammar-level pattern, on expressions
    // whose parser aborts at the third nested parenthesis.
    let dir = scratch("mine-crash");
    let bug = ["-DNESTED_PARENS_BUG"];
    let fuzzer = build_with(&dir, "expr", "fuzzer", false, &bug);
    let miner = build_with(&dir, "expr", "miner", true, &bug);
    let samples = dir.join("samples");
    std::fs::create_dir_all(&samples).expect("samples dir");
    for (i, sample) in ["1+2", "(3*4)-5", "-6/(7.5)", "((8))"].iter().enumerate() {
        std::fs::write(samples.join(i.to_string()), sample).expect("sample written");
    }
    let grammar = dir.join("mined.json");
    let mined = run(
        &miner,
        &[
            "mine",
            samples.to_str().unwrap(),
            "-o",
            grammar.to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&mined.stdout);
    assert_eq!(mined.status.code(), Some(0), "{stdout}");
    let out = dir.join("out");
    let fuzzed = run(
        &fuzzer,
        &[
            "-o",
            out.to_str().unwrap(),
            "--grammar",
            grammar.to_str().unwrap(),
            // Every crash costs a restart, and this grammar nests parentheses often. The runs
            // bound the test; the time limit only stops a run gone wrong (under a loaded CI
            // machine's restarts, 60 s cut a run short).
            "--runs",
            "20000",
            "--max-time",
            "600",
            "--seed",
            "5",
        ],
    );
    let stderr = String::from_utf8_lossy(&fuzzed.stderr);
    assert_eq!(fuzzed.status.code(), Some(1), "a crash is found: {stderr}");
    let summary = common::summary(&out);
    let crashes = summary["crashes"].as_array().expect("crashes");
    assert_eq!(crashes.len(), 1, "one bug: {crashes:?}");
    let reproducer = out.join(crashes[0]["input"].as_str().unwrap());
    let rendered = reproducer.with_file_name(format!(
        "{}.rendered",
        reproducer.file_name().unwrap().to_string_lossy()
    ));
    assert_eq!(
        std::fs::read(&rendered).expect("the rendered sentence"),
        b"(((0)))",
        "the smallest sentence that fails"
    );
    let pattern = crashes[0]["pattern"].as_str().unwrap_or_default();
    assert!(
        pattern.starts_with("(((") && pattern.contains('<'),
        "three parentheses, anything inside, over the mined grammar's nonterminals: {pattern}"
    );
}

#[test]
fn a_build_without_mining_instrumentation_gets_a_clear_error() {
    let dir = scratch("mine-plain");
    let fuzzer = build(&dir, "expr", "fuzzer", false);
    let samples = dir.join("samples");
    std::fs::create_dir_all(&samples).expect("samples dir");
    std::fs::write(samples.join("one"), "1+2").expect("sample");
    let output = run(&fuzzer, &["mine", samples.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("LABELFUZZ_MINE=1"), "{stderr}");
}
