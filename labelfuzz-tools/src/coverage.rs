//! `FUZZER coverage OUT`: which source lines a run's inputs reach.
//!
//! Run by the coverage build of a fuzzer (`LABELFUZZ_COVERAGE=1` with `labelfuzz-cc`,
//! `scripts/build-fuzzer.sh` or `cargo labelfuzz coverage`: source-based coverage instead of
//! SanitizerCoverage). It replays `OUT/corpus` and `OUT/crashes` through itself, merges the
//! profiles and writes llvm-cov's HTML report (`OUT/coverage/index.html`) and
//! `OUT/coverage/summary.json`: totals of lines, branches and functions, and per source file
//! the lines reached and the lines never reached.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::error::ToolError;

/// Source files left out of the report: the Rust standard library's, instantiated in the
/// target's crates, and those under `own_sources` (labelfuzz's engine: its `fuzz_target!`
/// expands into the target's crate).
fn ignored_files(own_sources: &str) -> String {
    let escaped: String = own_sources
        .chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special.then_some('\\').into_iter().chain([c])
        })
        .collect();
    format!("/rustc/|/library/(core|std|alloc)/|^{escaped}")
}

/// A failure worded for the user.
fn failure(message: String) -> ToolError {
    ToolError::Usage(message)
}

/// Directories that may hold an `llvm-profdata`/`llvm-cov` pair matching the build's LLVM:
/// `LABELFUZZ_LLVM_BIN`, rustc's own (rustup's llvm-tools, for Rust targets), then LLVM 19's
/// (clang-19, for C targets).
fn tool_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("LABELFUZZ_LLVM_BIN")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    let rustc = |arg: &str| {
        Command::new("rustc")
            .args(arg.split(' '))
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    if let (Some(sysroot), Some(version)) = (rustc("--print sysroot"), rustc("-vV")) {
        if let Some(host) = version.lines().find_map(|l| l.strip_prefix("host: ")) {
            dirs.push(
                Path::new(&sysroot)
                    .join("lib/rustlib")
                    .join(host)
                    .join("bin"),
            );
        }
    }
    dirs.push(PathBuf::from("/usr/lib/llvm-19/bin"));
    dirs
}

/// Runs `command`, returning its stdout, or its stderr as the error.
fn output_of(command: &mut Command) -> Result<Vec<u8>, String> {
    match command.stderr(Stdio::piped()).output() {
        Ok(out) if out.status.success() => Ok(out.stdout),
        Ok(out) => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// Per source file, the line numbers with a count of zero and above zero, from llvm-cov's
/// LCOV export (`SF:` names a file, `DA:line,count` a line).
fn lines_by_file(lcov: &str) -> BTreeMap<String, (Vec<u64>, Vec<u64>)> {
    let mut files: BTreeMap<String, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
    let mut current = None;
    for line in lcov.lines() {
        if let Some(file) = line.strip_prefix("SF:") {
            current = Some(file.to_string());
        } else if let (Some(file), Some(data)) = (&current, line.strip_prefix("DA:")) {
            let mut parts = data.split(',');
            let number = parts.next().and_then(|n| n.parse::<u64>().ok());
            let count = parts.next().and_then(|c| c.parse::<u64>().ok());
            if let (Some(number), Some(count)) = (number, count) {
                let (reached, missed) = files.entry(file.clone()).or_default();
                if count > 0 {
                    reached.push(number);
                } else {
                    missed.push(number);
                }
            }
        }
    }
    files
}

/// Replays the run in `out` through this program (a coverage build) and writes
/// `out/coverage/`, leaving out files under `own_sources` (the directory of the engine's
/// sources, ending in `/`); returns the path of `summary.json`.
///
/// # Errors
/// When this program is not a coverage build, no LLVM tools match it, or a file cannot be
/// written.
pub fn write_coverage(out: &Path, own_sources: &str) -> Result<PathBuf, ToolError> {
    let exe =
        std::env::current_exe().map_err(|e| ToolError::io("find", Path::new("this program"), e))?;
    let dir = out.join("coverage");
    let _ = std::fs::remove_dir_all(&dir);
    let profiles = dir.join("profiles");
    std::fs::create_dir_all(&profiles).map_err(|e| ToolError::io("create", &profiles, e))?;
    let raw = replay_for_profiles(&exe, out, &dir, &profiles)?;
    let merged = dir.join("merged.profdata");
    let bin = merge_profiles(&raw, &merged)?;
    let cov = |args: &[&str]| {
        output_of(
            Command::new(bin.join("llvm-cov"))
                .args(args)
                .arg(&exe)
                .arg(format!("-instr-profile={}", merged.display()))
                .arg(format!(
                    "-ignore-filename-regex={}",
                    ignored_files(own_sources)
                )),
        )
        .map_err(|e| failure(format!("llvm-cov {}: {e}", args.join(" "))))
    };
    cov(&[
        "show",
        "-format=html",
        &format!("-output-dir={}", dir.display()),
    ])?;
    let totals: Value = serde_json::from_slice(&cov(&["export", "-summary-only"])?)
        .map_err(|e| failure(format!("llvm-cov export printed no JSON: {e}")))?;
    let lcov = cov(&["export", "-format=lcov"])?;
    let summary = coverage_summary(&totals, &String::from_utf8_lossy(&lcov), raw.len());
    let path = dir.join("summary.json");
    let text = serde_json::to_string_pretty(&summary).unwrap_or_default();
    std::fs::write(&path, text).map_err(|e| ToolError::io("write", &path, e))?;
    let _ = std::fs::remove_dir_all(&profiles);
    let _ = std::fs::remove_dir_all(dir.join("replay"));
    Ok(path)
}

/// Replays `out`'s inputs through `exe` with profiles written to `profiles`; returns them. A
/// crash ends a process and takes its profile with it: the corpus is replayed in one process,
/// each crash reproducer in one of its own.
fn replay_for_profiles(
    exe: &Path,
    out: &Path,
    dir: &Path,
    profiles: &Path,
) -> Result<Vec<PathBuf>, ToolError> {
    let corpus = out.join("corpus");
    let mut runs: Vec<Vec<PathBuf>> = Vec::new();
    if corpus.is_dir() {
        runs.push(vec![corpus]);
    }
    if let Ok(entries) = std::fs::read_dir(out.join("crashes")) {
        let mut crashes: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
                p.is_file()
                    && name.is_some_and(|n| !n.starts_with('.') && !n.ends_with(".rendered"))
            })
            .collect();
        crashes.sort();
        runs.extend(crashes.into_iter().map(|c| vec![c]));
    }
    if runs.is_empty() {
        return Err(failure(format!(
            "{} has no corpus/ or crashes/ to replay",
            out.display()
        )));
    }
    for inputs in &runs {
        let _ = Command::new(exe)
            .args(["--replay", "-q", "-o"])
            .arg(dir.join("replay"))
            .args(inputs)
            .env("LLVM_PROFILE_FILE", profiles.join("%p-%m.profraw"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(dir.join("replay"));
    }
    let raw: Vec<PathBuf> = std::fs::read_dir(profiles)
        .map_err(|e| ToolError::io("read", profiles, e))?
        .flatten()
        .map(|e| e.path())
        .collect();
    if raw.is_empty() {
        return Err(failure(format!(
            "{} wrote no coverage profile: it is not a coverage build (build it with \
             LABELFUZZ_COVERAGE=1, see the README)",
            exe.display()
        )));
    }
    Ok(raw)
}

/// Merges the raw profiles into `merged` with the first `llvm-profdata` that reads them;
/// returns the directory of that LLVM's tools.
fn merge_profiles(raw: &[PathBuf], merged: &Path) -> Result<PathBuf, ToolError> {
    let mut errors = Vec::new();
    let tools = tool_dirs().into_iter().find(|bin| {
        let merge = output_of(
            Command::new(bin.join("llvm-profdata"))
                .args(["merge", "-sparse", "-o"])
                .arg(merged)
                .args(raw),
        );
        match merge {
            Ok(_) => true,
            Err(e) => {
                errors.push(format!("{}: {}", bin.display(), e.trim()));
                false
            }
        }
    });
    tools.ok_or_else(|| {
        failure(format!(
            "no llvm-profdata reads these profiles (run scripts/bootstrap.sh; tried {})",
            errors.join("; ")
        ))
    })
}

/// `summary.json`: llvm-cov's totals of lines, branches and functions, and per source file the
/// lines reached and missed (from its lcov export).
fn coverage_summary(totals: &Value, lcov: &str, profiles: usize) -> Value {
    let files: Vec<Value> = lines_by_file(lcov)
        .into_iter()
        .map(|(file, (reached, missed))| {
            json!({
                "file": file,
                "lines_reached": reached,
                "lines_missed": missed,
            })
        })
        .collect();
    let total = &totals["data"][0]["totals"];
    let pick = |name: &str| {
        json!({
            "count": total[name]["count"],
            "covered": total[name]["covered"],
            "percent": total[name]["percent"],
        })
    };
    json!({
        "lines": pick("lines"),
        "branches": pick("branches"),
        "functions": pick("functions"),
        "profiles": profiles,
        "files": files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lcov_lines_are_split_into_reached_and_missed_per_file() {
        let lcov = "SF:/src/a.rs\nDA:1,5\nDA:2,0\nDA:3,1\nend_of_record\nSF:/src/b.c\nDA:7,0\n";
        let files = lines_by_file(lcov);
        assert_eq!(files["/src/a.rs"], (vec![1, 3], vec![2]));
        assert_eq!(files["/src/b.c"], (vec![], vec![7]));
    }

    #[test]
    fn labelfuzz_sources_are_ignored_with_regex_metacharacters_escaped() {
        let regex = ignored_files("/home/a+b (1)/labelfuzz/src/");
        assert!(
            regex.ends_with(r"/home/a\+b \(1\)/labelfuzz/src/"),
            "{regex}"
        );
        assert!(!regex.contains("\\\\"), "{regex}");
    }
}
