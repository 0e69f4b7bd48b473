//! CI engine mode: a fuzzer started the way libFuzzer's runners start it (flags in `-name=value`
//! form) reports each crash in libFuzzer's shape and exits with libFuzzer's status, so that
//! OSS-Fuzz's and ClusterFuzzLite's libFuzzer engine, and scripts around `cargo fuzz run`, read
//! labelfuzz's crashes as they read libFuzzer's.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{build_fuzzer, labelfuzz_cc, root, scratch};

/// The lines of libFuzzer's crash report that such tools parse, checked for one crash whose
/// reproducer is `input`, whose innermost target frame is `function` at `file`, in `stderr`.
fn assert_libfuzzer_report(
    stderr: &str,
    artifacts: &Path,
    input: &[u8],
    function: &str,
    file: &str,
) {
    let hex: String = input.iter().map(|b| format!("0x{b:x},")).collect();
    let block_start = stderr
        .find(&format!("\n{hex}\n"))
        .unwrap_or_else(|| panic!("no report of {input:?} in:\n{stderr}"));
    // The block that holds this input: from its ERROR line to its Base64 line.
    let error_at = stderr[..block_start]
        .rfind("== ERROR: libFuzzer: ")
        .expect("an ERROR line before the input");
    let line_start = stderr[..error_at].rfind('\n').map_or(0, |i| i + 1);
    let block_end = stderr[block_start..]
        .find("Base64: ")
        .map(|i| block_start + i)
        .expect("a Base64 line after the input");
    let block = &stderr[line_start
        ..stderr[block_end..]
            .find('\n')
            .map_or(stderr.len(), |i| block_end + i)];
    let pid_line = block.lines().next().unwrap();
    assert!(
        pid_line.starts_with("==") && pid_line.contains("== ERROR: libFuzzer: deadly signal"),
        "{block}"
    );
    let pid = pid_line
        .trim_start_matches("==")
        .split("==")
        .next()
        .unwrap_or("");
    assert!(pid.parse::<u32>().is_ok(), "==PID==: {pid_line}");
    let first_frame = block
        .lines()
        .find(|l| l.trim_start().starts_with("#0 "))
        .unwrap_or_else(|| panic!("no #0 frame:\n{block}"));
    let parts: Vec<&str> = first_frame.split_whitespace().collect();
    assert!(parts[1].starts_with("0x"), "{first_frame}");
    assert_eq!(parts[2], "in", "{first_frame}");
    assert!(parts[3].contains(function), "{first_frame}");
    assert!(
        parts[4].contains(file) && parts[4].split(':').count() >= 2,
        "file:line: {first_frame}"
    );
    assert!(
        block.contains("\nSUMMARY: libFuzzer: deadly signal\n"),
        "{block}"
    );
    let written = block
        .lines()
        .find_map(|l| l.split("Test unit written to ").nth(1))
        .unwrap_or_else(|| panic!("no Test unit line:\n{block}"));
    assert!(
        written.starts_with(&artifacts.display().to_string()),
        "{written}"
    );
    assert_eq!(std::fs::read(written).expect("the unit was written"), input);
    let base64 = block.lines().last().unwrap().trim_start_matches("Base64: ");
    assert_eq!(base64, labelfuzz::cli::libfuzzer_report::base64(input));
}

/// Runs `fuzzer` as a libFuzzer runner does, with `-artifact_prefix=DIR/artifacts/` and `flags`
/// (output in `DIR/out`); its exit status, stderr and the artifact directory.
fn run_as_a_runner(fuzzer: &Path, dir: &Path, flags: &[&str]) -> (Option<i32>, String, PathBuf) {
    let artifacts = dir.join("artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let result = Command::new(fuzzer)
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .args(flags)
        .arg("-o")
        .arg(dir.join("out"))
        .output()
        .expect("the fuzzer runs");
    let stderr = String::from_utf8_lossy(&result.stderr).into_owned();
    (result.status.code(), stderr, artifacts)
}

#[test]
fn a_rust_target_reports_its_panics_as_libfuzzer_does() {
    let fuzzer = build_fuzzer("planted");
    let dir = scratch("ci-rust");
    let (status, stderr, artifacts) = run_as_a_runner(&fuzzer, &dir, &["-runs=3000000", "-seed=1"]);
    assert_eq!(status, Some(77), "libFuzzer's crash status:\n{stderr}");
    for input in [&b"FUZZ"[..], b"B\x00\xff", b"+\x01\xff"] {
        assert_libfuzzer_report(
            &stderr,
            &artifacts,
            input,
            "planted::",
            "planted/src/lib.rs",
        );
    }
    assert!(
        stderr.contains("thread '<unnamed>' panicked at planted/src/lib.rs:"),
        "{stderr}"
    );
}

#[test]
fn a_c_harness_reports_its_signals_as_libfuzzer_does() {
    let dir = scratch("ci-c");
    let source = root().join("fuzzers/c_planted/planted.c");
    labelfuzz_cc(
        &dir,
        &["-O1", "-g", source.to_str().unwrap(), "-o", "fuzzer"],
    );
    let (status, stderr, artifacts) = run_as_a_runner(
        &dir.join("fuzzer"),
        &dir,
        &[
            "-runs=2000000",
            "-max_total_time=120",
            "-seed=1",
            "-error_exitcode=99",
        ],
    );
    assert_eq!(status, Some(99), "-error_exitcode is honoured:\n{stderr}");
    assert_libfuzzer_report(&stderr, &artifacts, b"H!", "check_header", "planted.c");
    assert_libfuzzer_report(&stderr, &artifacts, b"T?", "check_trailer", "planted.c");
}
