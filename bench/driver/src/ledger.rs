//! The benchmark's finished runs, kept in the repository.
//!
//! A standard benchmark is 12 core-hours and the hour row 24, far more than one sitting, and
//! `target/` does not outlive the machine. So every measured run is also written to
//! `bench/results/<secs>s/<target>/<fuzzer>/seed<N>.json`, where it can be committed, and a later
//! run of `cargo make bench` on any machine reuses it instead of running it again, as long as
//! nothing that decides the run's outcome has changed since.
//!
//! Records are kept per processor model (`bench/results/<secs>s/<processor>/…`): executions a
//! second, and so coverage at a fixed time, depend on the processor, so a table mixes no two
//! models. Runs are reused and written for this machine's model; `BENCH_PROCESSOR` names
//! another model's records for the tables only (see [`processor`]).
//!
//! What decides it is the run's *sources*: the files its binaries and its measurement are built
//! from, and the compilers' versions. Their hash is the record's `build` field. Binaries cannot
//! serve: rebuilt on another machine or in another checkout they differ in embedded paths even
//! when they behave the same.

use std::path::{Path, PathBuf};
use std::process::Command;

use labelfuzz_core::stable_hash::Fnv1a;

use serde_json::Value;

use crate::fuzzers::Fuzzer;
use crate::report::{Measured, Point};
use crate::targets::{Kind, Target};
use crate::util::{read_json, root};
use crate::yardstick::Coverage;

/// Where a run's record is kept in the repository, among the records of processor model
/// `processor` (a [`slug`]).
pub fn record_path(secs: u64, processor: &str, target: &str, fuzzer: Fuzzer, seed: u64) -> PathBuf {
    root()
        .join("bench/results")
        .join(format!("{secs}s"))
        .join(processor)
        .join(target)
        .join(fuzzer.dir_name())
        .join(format!("seed{seed}.json"))
}

/// A processor model as a directory name: `Intel(R) Xeon(R) Processor` → `intel-xeon-processor`.
pub fn slug(model: &str) -> String {
    let plain = model
        .replace("(R)", " ")
        .replace("(TM)", " ")
        .replace("(tm)", " ");
    let words: Vec<String> = plain
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    if words.is_empty() {
        "unknown-processor".into()
    } else {
        words.join("-")
    }
}

/// Whose records the tables are made of, as a [`slug`]: `BENCH_PROCESSOR` (a model's name or
/// its slug) or else this machine's model; and this machine's model, the only one whose runs can
/// be done and kept here.
pub fn processor() -> (String, String) {
    let here = slug(&crate::util::cpu_model());
    let chosen = std::env::var("BENCH_PROCESSOR")
        .ok()
        .filter(|chosen| !chosen.trim().is_empty())
        .map_or_else(|| here.clone(), |chosen| slug(&chosen));
    (chosen, here)
}

/// The repository paths (files or directories) whose contents decide how `fuzzer` behaves on
/// `target` and how its corpus is measured.
///
/// Each lock file counts only for the builds it pins: the workspace's `Cargo.lock` pins the
/// engine's dependencies (LibAFL) and so only labelfuzz's runs; `fuzzers/Cargo.lock` its Rust
/// twins' (serde_json); `fuzzers/native/sources` the C libraries' and AFL++'s source packages;
/// `bench/libfuzzer` has its own. So a change to the engine's crates leaves the anchors' records
/// valid, and a multi-session benchmark re-runs only what the change concerns.
pub fn sources(target: &Target, fuzzer: Fuzzer) -> Vec<String> {
    let mut paths: Vec<String> = [
        "bench/coverage",
        "bench/driver/src/fuzzers/mod.rs",
        "bench/driver/src/yardstick.rs",
    ]
    .map(String::from)
    .to_vec();
    match target.kind {
        // build.sh and the harness live in the target's directory; every build of it goes
        // through native.sh, which takes the library's version from fuzzers/native, and the
        // yardstick's compiler set-up (clang.sh, the libFuzzer anchor's too).
        Kind::Native => paths.extend([
            format!("fuzzers/{}", target.name),
            "fuzzers/native".into(),
            "scripts/native.sh".into(),
            "scripts/native/clang.sh".into(),
        ]),
        // The anchors and the coverage build are bench/libfuzzer; labelfuzz's twin is its own
        // crate.
        Kind::Rust => paths.push("bench/libfuzzer".into()),
    }
    // Each fuzzer's own command (bench/driver/src/fuzzers/<fuzzer>.rs) and compiler set-up
    // (scripts/native/<compiler>.sh) count for its runs only.
    match fuzzer {
        Fuzzer::Labelfuzz | Fuzzer::LabelfuzzFlipped(_) => {
            paths.extend(
                [
                    "bench/driver/src/fuzzers/labelfuzz.rs",
                    "scripts/native/labelfuzz.sh",
                    "Cargo.lock",
                    "Cargo.toml",
                    "build.rs",
                    "src",
                    "labelfuzz-core",
                    "labelfuzz-dictionary",
                    "labelfuzz-grammar",
                    "labelfuzz-runtime",
                    "labelfuzz-tools",
                    "harness",
                    "compiler-wrapper",
                    "labelfuzz-build",
                    "labelfuzz-sys",
                ]
                .map(String::from),
            );
            if target.kind == Kind::Rust {
                paths.push(format!("fuzzers/{}", target.name));
                paths.push("fuzzers/Cargo.lock".into());
            }
        }
        Fuzzer::Libfuzzer => paths.push("bench/driver/src/fuzzers/libfuzzer.rs".into()),
        Fuzzer::Aflpp => {
            paths.push("bench/driver/src/fuzzers/aflpp.rs".into());
            paths.push("scripts/native/afl.sh".into());
            paths.push("scripts/install-aflpp.sh".into());
            // AFL++'s version: the cargo-afl-common package pinned there.
            paths.push("fuzzers/native/sources".into());
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

/// The fingerprint of `fuzzer`'s runs on `target`: a hash of [`sources`] (as they are in the
/// working tree, committed or not) and of the compilers' versions.
pub fn fingerprint(target: &Target, fuzzer: Fuzzer) -> String {
    let root = root();
    let mut files = tracked_files(&root, &sources(target, fuzzer));
    files.sort();
    let mut hash = Fnv1a::new();
    for file in &files {
        hash.write(file.as_bytes());
        hash.write(&[0]);
        // A tracked file deleted in the working tree hashes as empty.
        hash.write(&std::fs::read(root.join(file)).unwrap_or_default());
        hash.write(&[0]);
    }
    for tool in [
        &["rustc", "-V"][..],
        &["/usr/lib/llvm-19/bin/clang", "--version"],
    ] {
        let version = Command::new(tool[0])
            .args(&tool[1..])
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string()
            })
            .unwrap_or_default();
        hash.write(version.as_bytes());
        hash.write(&[0]);
    }
    format!("sources:{:016x}", hash.finish())
}

/// The files git tracks under `paths` (relative to the repository root). Tracked files only, so
/// that build output and editor files inside those directories do not count.
fn tracked_files(root: &Path, paths: &[String]) -> Vec<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["ls-files", "-z", "--"])
        .args(paths)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git ls-files failed in {}: the benchmark fingerprints its runs by their tracked sources",
        root.display()
    );
    String::from_utf8_lossy(&out.stdout)
        .split('\0')
        .filter(|f| !f.is_empty())
        .map(String::from)
        .collect()
}

/// Whether a run's stats (`run.json`, or a record's `stats`) show it ran for the `secs` it was
/// given. A fuzzer stopped from outside (a stray `kill`, the machine's OOM killer) still leaves
/// a corpus that measures like a short run; kept, it would pass for a finished one and the
/// bench would never run it again. Two percent of slack covers start-up and the last snapshot;
/// records from before runs were timed (no `wall_secs`) count as finished.
pub fn ran_its_time(stats: &Value, secs: u64) -> bool {
    stats["wall_secs"]
        .as_f64()
        .is_none_or(|wall| wall >= secs as f64 * 0.98)
}

/// Reads a run's `measured.json` or its kept record.
pub fn load(target: &'static Target, fuzzer: Fuzzer, seed: u64, file: &Path) -> Measured {
    let value = read_json(file);
    let number = |v: &Value| v.as_u64().unwrap_or(0);
    let points = value["points"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| Point {
            minute: number(&p["minute"]),
            coverage: Coverage {
                branches: number(&p["branches"]),
                branches_total: number(&p["branches_total"]),
                lines: number(&p["lines"]),
                lines_total: number(&p["lines_total"]),
                regions: number(&p["regions"]),
            },
            entries: number(&p["entries"]),
            bytes: number(&p["bytes"]),
        })
        .collect();
    let stats = &value["stats"];
    Measured {
        target,
        fuzzer,
        seed,
        points,
        executions: number(&stats["executions"]),
        wall_secs: stats["wall_secs"].as_f64().unwrap_or(1.0),
        crashes: number(&stats["crashes"]),
        // A run kept before records named their processor was measured here.
        machine: value["machine"]
            .as_str()
            .map_or_else(crate::util::cpu_model, String::from),
    }
}

/// Copies a run's `measured.json` into its record, adding where it ran and the commit its
/// sources were at (`-dirty`: with changes not yet committed).
pub fn keep(measured: &Path, record: &Path) {
    let mut value = crate::util::read_json(measured);
    if let Some(map) = value.as_object_mut() {
        let cpu = crate::util::cpu_model();
        map.insert("machine".into(), cpu.into());
        let commit = Command::new("git")
            .arg("-C")
            .arg(root())
            .args(["describe", "--always", "--dirty", "--abbrev=7"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        map.insert("commit".into(), commit.into());
    }
    if let Some(dir) = record.parent() {
        std::fs::create_dir_all(dir).expect("bench/results");
    }
    let mut text = serde_json::to_vec_pretty(&value).expect("json");
    text.push(b'\n');
    std::fs::write(record, text).expect("a benchmark record");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::targets::TARGETS;

    #[test]
    fn a_run_cut_short_is_not_a_finished_run() {
        let stats = |wall: f64| serde_json::json!({ "executions": 10, "wall_secs": wall });
        assert!(ran_its_time(&stats(599.4), 600));
        assert!(ran_its_time(&stats(3599.0), 3600));
        assert!(!ran_its_time(&stats(145.8), 600));
        assert!(!ran_its_time(&stats(4.3), 600));
        assert!(ran_its_time(&serde_json::json!({ "executions": 10 }), 600));
    }

    #[test]
    fn processor_models_become_directory_names() {
        assert_eq!(slug("Intel(R) Xeon(R) Processor"), "intel-xeon-processor");
        assert_eq!(slug("AMD EPYC"), "amd-epyc");
        assert_eq!(slug("amd-epyc"), "amd-epyc");
        assert_eq!(
            slug("Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz"),
            "intel-core-i7-8700-cpu-3-20ghz"
        );
        assert_eq!(slug(""), "unknown-processor");
    }

    #[test]
    fn a_fuzzers_own_command_and_compilers_count_for_its_runs_only() {
        let own = |fuzzer: Fuzzer| -> Vec<&str> {
            match fuzzer {
                Fuzzer::Labelfuzz | Fuzzer::LabelfuzzFlipped(_) => vec![
                    "bench/driver/src/fuzzers/labelfuzz.rs",
                    "scripts/native/labelfuzz.sh",
                ],
                Fuzzer::Libfuzzer => vec!["bench/driver/src/fuzzers/libfuzzer.rs"],
                Fuzzer::Aflpp => vec!["bench/driver/src/fuzzers/aflpp.rs", "scripts/native/afl.sh"],
            }
        };
        let native = TARGETS
            .iter()
            .find(|t| t.kind == Kind::Native)
            .expect("a C target");
        for fuzzer in Fuzzer::ALL {
            let paths = sources(native, fuzzer);
            for other in Fuzzer::ALL {
                for file in own(other) {
                    assert_eq!(
                        paths.iter().any(|p| p == file),
                        other == fuzzer,
                        "{file} in {}'s sources",
                        fuzzer.name()
                    );
                }
            }
        }
    }

    #[test]
    fn only_labelfuzz_runs_depend_on_the_engine_and_its_lock_file() {
        for target in TARGETS {
            let engine = |f| {
                let paths = sources(target, f);
                // The workspace's lock pins the engine's dependencies only.
                assert_eq!(
                    paths.iter().any(|p| p == "src"),
                    paths.iter().any(|p| p == "Cargo.lock"),
                    "{}",
                    target.name
                );
                paths.iter().any(|p| p == "src")
            };
            assert!(engine(Fuzzer::Labelfuzz), "{}", target.name);
            assert!(!engine(Fuzzer::Libfuzzer), "{}", target.name);
            assert!(!engine(Fuzzer::Aflpp), "{}", target.name);
            for fuzzer in Fuzzer::ALL {
                let paths = sources(target, fuzzer);
                assert!(paths.iter().any(|p| p == "bench/coverage"));
                let files = tracked_files(&root(), &paths);
                for path in &paths {
                    assert!(
                        files
                            .iter()
                            .any(|f| f == path || f.starts_with(&format!("{path}/"))),
                        "{} ({}): {path} holds no tracked file",
                        target.name,
                        fuzzer.name()
                    );
                }
            }
        }
    }
}
