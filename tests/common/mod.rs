//! Helpers for end-to-end tests: build instrumented fuzzers and run them.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// Root of the repository.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Fuzz builds share one target directory; build them one at a time.
static BUILD_LOCK: Mutex<()> = Mutex::new(());

/// Runs `command` to completion; panics with `what` and its stderr if it fails.
pub fn checked(command: &mut Command, what: &str) -> Output {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Builds the fuzz target crate at `fuzzers/<name>` with instrumentation; returns its binary.
pub fn build_fuzzer(name: &str) -> PathBuf {
    let _guard = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let out = checked(
        Command::new("bash")
            .arg(root().join("scripts/build-fuzzer.sh"))
            .arg(root().join("fuzzers").join(name)),
        &format!("building {name}"),
    );
    let path = String::from_utf8(out.stdout).expect("utf-8 path");
    PathBuf::from(path.trim())
}

/// A fresh, empty scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = root().join("target/test-scratch").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Runs `fuzzer` with `args`, quietly.
pub fn run(fuzzer: &Path, args: &[&str]) -> Output {
    Command::new(fuzzer)
        .args(args)
        .arg("-q")
        .output()
        .expect("the fuzzer starts")
}

/// Reads `summary.json` from an output directory.
pub fn summary(out: &Path) -> serde_json::Value {
    let text = std::fs::read(out.join("summary.json")).expect("summary.json exists");
    serde_json::from_slice(&text).expect("summary.json parses")
}

/// Builds `labelfuzz-cc`, `labelfuzz-cxx` and the harness (release, the shared target
/// directory) once; returns the directory holding them.
pub fn compiler_wrapper_dir() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let _guard = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
            checked(
                Command::new(env!("CARGO"))
                    .current_dir(root())
                    .args(["build", "--release", "-j2"])
                    .args(["-p", "labelfuzz-compiler-wrapper"])
                    .args(["-p", "labelfuzz-harness"]),
                "building the compiler wrapper",
            );
            root().join("target/release")
        })
        .clone()
}

/// Runs `labelfuzz-cc` with `args` in `dir`; panics with clang's messages if it fails.
pub fn labelfuzz_cc(dir: &Path, args: &[&str]) {
    let cc = compiler_wrapper_dir().join("labelfuzz-cc");
    checked(
        Command::new(&cc).current_dir(dir).args(args),
        &format!("labelfuzz-cc {args:?}"),
    );
}

/// The crash records of a run: reproducer bytes → (kind, location).
pub fn crashes_by_input(out: &Path) -> std::collections::BTreeMap<Vec<u8>, (String, String)> {
    let summary = summary(out);
    summary["crashes"]
        .as_array()
        .expect("crashes")
        .iter()
        .map(|crash| {
            let input = std::fs::read(out.join(crash["input"].as_str().expect("input")))
                .expect("the reproducer file exists");
            (
                input,
                (
                    crash["kind"].as_str().expect("kind").to_string(),
                    crash["location"].as_str().expect("location").to_string(),
                ),
            )
        })
        .collect()
}
