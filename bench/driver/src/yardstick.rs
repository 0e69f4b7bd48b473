//! The one yardstick: a set of inputs replayed through the target's source-based coverage build
//! (clang `-fprofile-instr-generate -fcoverage-mapping`, or rustc `-C instrument-coverage`),
//! counted by `llvm-cov export -summary-only` over the library's files only.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::targets::{Kind, Target};
use crate::util::{fresh_dir, host_triple};

/// Covered and total counts of the library's code.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Coverage {
    pub branches: u64,
    pub branches_total: u64,
    pub lines: u64,
    pub lines_total: u64,
    pub regions: u64,
}

/// `llvm-profdata` and `llvm-cov` that read the target's profiles: LLVM 19 for C (the
/// compiler's), rustup's `llvm-tools` for Rust (rustc's own LLVM).
pub fn tools(kind: Kind) -> (PathBuf, PathBuf) {
    match kind {
        Kind::Native => ("llvm-profdata-19".into(), "llvm-cov-19".into()),
        Kind::Rust => {
            let out = Command::new("rustc")
                .args(["--print", "sysroot"])
                .output()
                .expect("rustc runs");
            let bin = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
                .join("lib/rustlib")
                .join(host_triple())
                .join("bin");
            assert!(
                bin.join("llvm-cov").exists(),
                "rustup's llvm-tools are missing: run scripts/bootstrap.sh"
            );
            (bin.join("llvm-profdata"), bin.join("llvm-cov"))
        }
    }
}

/// Replays `inputs` through `coverage_binary` and counts what they cover of `target`'s
/// library. `scratch` is emptied and reused.
pub fn measure(
    target: &Target,
    coverage_binary: &Path,
    inputs: &[PathBuf],
    scratch: &Path,
    cpu: usize,
) -> Coverage {
    fresh_dir(scratch);
    let list = scratch.join("inputs.txt");
    let text: String = inputs
        .iter()
        .map(|p| format!("{}\n", p.display()))
        .collect();
    std::fs::write(&list, text).expect("input list");
    let profiles = scratch.join("profiles");
    std::fs::create_dir_all(&profiles).expect("profile directory");
    // Each process writes its own profile; a crash, hang or exit() ends one process, and the
    // next goes on after the input that was running (the replayer notes each index before it
    // runs the input).
    let progress = scratch.join("progress");
    let mut first = 0usize;
    while first < inputs.len() {
        let _ = std::fs::remove_file(&progress);
        let out = Command::new("taskset")
            .args(["-c", &cpu.to_string()])
            .arg(coverage_binary)
            .arg(&list)
            .arg(first.to_string())
            .env("LLVM_PROFILE_FILE", profiles.join("replay-%p.profraw"))
            .env("REPLAY_PROGRESS", &progress)
            .env("REPLAY_TIMEOUT", "5")
            .env("RUST_BACKTRACE", "0")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("the coverage replayer runs");
        let last_started = std::fs::read(&progress)
            .ok()
            .and_then(|b| {
                b.get(..8)
                    .map(|b| i64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))
            })
            .and_then(|i| usize::try_from(i).ok());
        match last_started {
            Some(last) if last + 1 >= inputs.len() => break,
            // Always forward, even if the same input ended two processes.
            Some(last) => first = (last + 1).max(first + 1),
            None if out.success() => break,
            // Nothing ran (the harness's initialization failed): nothing more will.
            None => {
                eprintln!("bench: the coverage build of {} runs no input", target.name);
                break;
            }
        }
    }
    let raw: Vec<PathBuf> = std::fs::read_dir(&profiles)
        .expect("profiles")
        .flatten()
        .map(|e| e.path())
        .collect();
    if raw.is_empty() {
        return Coverage::default();
    }
    let (profdata, cov) = tools(target.kind);
    let merged = scratch.join("merged.profdata");
    // Pinned and single-threaded: fuzzers are running on the other cores.
    let status = Command::new("taskset")
        .args(["-c", &cpu.to_string()])
        .arg(&profdata)
        .args(["merge", "-sparse", "-num-threads=1", "-o"])
        .arg(&merged)
        .args(&raw)
        .status()
        .expect("llvm-profdata runs");
    assert!(status.success(), "llvm-profdata merge failed: {status}");
    let summary = export(&cov, &merged, coverage_binary, &["-summary-only"], cpu);
    let summary: Value = serde_json::from_slice(&summary).expect("llvm-cov JSON");
    library_coverage(target, &summary)
}

/// `llvm-cov export` (the `cov` of [`tools`]) of the profile `merged` over `coverage_binary`, in
/// the `format` its arguments ask for (`-summary-only` JSON, `-format=lcov`), pinned to `cpu`:
/// its output.
pub fn export(
    cov: &Path,
    merged: &Path,
    coverage_binary: &Path,
    format: &[&str],
    cpu: usize,
) -> Vec<u8> {
    let out = Command::new("taskset")
        .args(["-c", &cpu.to_string()])
        .arg(cov)
        .arg("export")
        .args(format)
        .args(["-num-threads=1", "-instr-profile"])
        .arg(merged)
        .arg(coverage_binary)
        .output()
        .expect("llvm-cov runs");
    assert!(
        out.status.success(),
        "llvm-cov export failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Adds up the per-file summaries of an `llvm-cov export` over the library's files.
pub fn library_coverage(target: &Target, export: &Value) -> Coverage {
    let mut total = Coverage::default();
    let files = export["data"][0]["files"].as_array();
    for file in files.into_iter().flatten() {
        let name = file["filename"].as_str().unwrap_or("");
        // Toolchain and system code is not the library's either.
        if target.is_harness(name)
            || name.starts_with("/usr/")
            || name.contains("/rustc/")
            || name.contains("/.rustup/")
        {
            continue;
        }
        let summary = &file["summary"];
        let count = |kind: &str, field: &str| summary[kind][field].as_u64().unwrap_or(0);
        total.branches += count("branches", "covered");
        total.branches_total += count("branches", "count");
        total.lines += count("lines", "covered");
        total.lines_total += count("lines", "count");
        total.regions += count("regions", "covered");
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::targets::TARGETS;

    #[test]
    fn harness_and_system_files_are_not_counted() {
        let zlib = &TARGETS[0];
        let file = |name: &str, covered: u64| {
            serde_json::json!({
                "filename": name,
                "summary": {
                    "branches": {"covered": covered, "count": 10},
                    "lines": {"covered": covered, "count": 20},
                    "regions": {"covered": covered, "count": 30},
                }
            })
        };
        let export = serde_json::json!({"data": [{"files": [
            file("/home/u/.cargo/registry/src/x/libz-sys-1.1.31/src/zlib/inflate.c", 4),
            file("/work/main/fuzzers/zlib/fuzz_uncompress.c", 7),
            file("/work/main/bench/coverage/replay_main.c", 9),
            file("/usr/include/stdlib.h", 1),
        ]}]});
        let coverage = library_coverage(zlib, &export);
        assert_eq!(
            coverage,
            Coverage {
                branches: 4,
                branches_total: 10,
                lines: 4,
                lines_total: 20,
                regions: 4
            }
        );
    }
}
