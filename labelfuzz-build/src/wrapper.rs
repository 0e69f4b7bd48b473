//! The `RUSTC_WRAPPER` of fuzz builds: decides, crate by crate, what instrumentation rustc adds.
//!
//! This file is a program of its own (std only): `labelfuzz-build` embeds it and compiles it
//! with `rustc` into its cache on first use, so an installed tool needs no checkout to wrap
//! rustc. The library also includes it as a module, where [`plan`] is unit-tested.
//!
//! The rule: a crate compiled for the target (cargo passes `--target`: fuzz builds name the host
//! triple explicitly, so build scripts, proc-macros and their dependencies are compiled without
//! it) gets SanitizerCoverage (pc-guard edges and comparison operands), debug assertions,
//! overflow checks and `--cfg fuzzing`, as cargo-fuzz does; so do registry crates, where a bug
//! deep in a dependency hides as well as in the user's code. Never instrumented: build scripts
//! and the fuzz-target glue (`labelfuzz_sys`, `libfuzzer_sys`), whose edges would be noise.
//! `LABELFUZZ_INSTRUMENT=crate_a,crate_b` narrows instrumentation to those crates and the crates
//! built from a local path; `LABELFUZZ_MODE=coverage` swaps SanitizerCoverage for rustc's
//! source-based coverage (the coverage build of the same crates), `LABELFUZZ_MODE=mine` for the
//! callbacks grammar mining records (the mining build).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// What the wrapper adds to one rustc invocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Nothing: host code, build scripts, the fuzz-target glue, or crates left out.
    Plain,
    /// SanitizerCoverage edges and comparisons (the fuzz build).
    Sancov,
    /// rustc's source-based coverage (the coverage build).
    Coverage,
    /// A callback on every function entry and every load, functions kept whole (the mining
    /// build, which `FUZZER mine` runs).
    Mine,
}

/// Crates that are glue between the target and the runtime, never code under test.
const GLUE_CRATES: &[&str] = &["labelfuzz_sys", "libfuzzer_sys"];

/// The plan for a rustc invocation with `args`. `mode` is `LABELFUZZ_MODE` (`coverage`, `mine`,
/// or anything else for SanitizerCoverage), `instrument` is `LABELFUZZ_INSTRUMENT` (`None` or
/// `all` for every crate), `cargo_home` is where registry and git sources live.
#[must_use]
pub fn plan(
    args: &[String],
    mode: Option<&str>,
    instrument: Option<&str>,
    cargo_home: &str,
) -> Plan {
    let mut crate_name = None;
    let mut source = None;
    let mut for_target = false;
    let mut previous = "";
    for arg in args {
        match previous {
            "--crate-name" => crate_name = Some(arg.as_str()),
            "--target" => for_target = true,
            _ => {}
        }
        if arg.starts_with("--target=") {
            for_target = true;
        }
        if source.is_none() && arg.ends_with(".rs") {
            source = Some(arg.as_str());
        }
        previous = arg;
    }
    let Some(name) = crate_name else {
        return Plan::Plain;
    };
    if !for_target || name.starts_with("build_script_") || GLUE_CRATES.contains(&name) {
        return Plan::Plain;
    }
    let selected = match instrument.map(str::trim) {
        None | Some("" | "all") => true,
        Some(list) => {
            list.split(',').any(|listed| listed.trim() == name)
                || !source.is_some_and(|path| from_registry(path, cargo_home))
        }
    };
    match (selected, mode) {
        (false, _) => Plan::Plain,
        (true, Some("coverage")) => Plan::Coverage,
        (true, Some("mine")) => Plan::Mine,
        (true, _) => Plan::Sancov,
    }
}

/// Whether `path` is a registry or git dependency's source (not a crate of the user's tree).
fn from_registry(path: &str, cargo_home: &str) -> bool {
    let home = cargo_home.trim_end_matches('/');
    [format!("{home}/registry/"), format!("{home}/git/")]
        .iter()
        .any(|prefix| path.starts_with(prefix.as_str()))
        || path.contains("/.cargo/registry/")
        || path.contains("/.cargo/git/")
}

/// What every instrumented crate gets, as cargo-fuzz gives it.
const CHECKS: &[&str] = &[
    "-C",
    "debug-assertions",
    "-C",
    "overflow-checks",
    "--cfg",
    "fuzzing",
];

/// The fuzzing build's instrumentation: edges, comparisons.
const SANCOV: &[&str] = &[
    "-C",
    "passes=sancov-module",
    "-C",
    "llvm-args=-sanitizer-coverage-level=3",
    "-C",
    "llvm-args=-sanitizer-coverage-trace-pc-guard",
    "-C",
    "llvm-args=-sanitizer-coverage-trace-compares",
    // A short comparison with a constant (`s.starts_with(b"_ZN")`, `word == b"true"`)
    // is a call to bcmp when SanitizerCoverage instruments it, which LLVM's code
    // generator then expands into loads compared as integers: the only comparison left
    // traced is bcmp's result against 0, and CmpLog never sees the bytes. Kept as a
    // call, the interceptors every fuzzer carries hand the operands over (what
    // `-fno-builtin-memcmp` does for C).
    "-C",
    "llvm-args=-max-loads-per-memcmp=0",
];

/// Each condition kept a branch of its own, so that each is an edge, as `labelfuzz-cc` keeps
/// them in C (its `conditions` module says why): CFG simplification would otherwise fold
/// `a || b` and cheap `if`s into one branch or a select before SanitizerCoverage runs.
/// `LABELFUZZ_FOLDED_CONDITIONS=1` keeps the folding.
const SPLIT_CONDITIONS: &[&str] = &[
    "-C",
    "llvm-args=-simplifycfg-branch-fold-threshold=0",
    "-C",
    "llvm-args=-bonus-inst-threshold=0",
    "-C",
    "llvm-args=-phi-node-folding-threshold=0",
    "-C",
    "llvm-args=-two-entry-phi-node-folding-threshold=0",
];

fn keeps_folded_conditions() -> bool {
    std::env::var("LABELFUZZ_FOLDED_CONDITIONS").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The flags `plan` stands for.
#[must_use]
pub fn flags(plan: Plan) -> Vec<&'static str> {
    let instrumentation: &[&str] = match plan {
        Plan::Plain => return Vec::new(),
        Plan::Sancov if keeps_folded_conditions() => SANCOV,
        Plan::Sancov => return [SANCOV, SPLIT_CONDITIONS, CHECKS].concat(),
        Plan::Coverage => &["-C", "instrument-coverage"],
        // What the C mining build gets (labelfuzz-cc's LABELFUZZ_MINE=1), function entries and
        // loads, plus one-byte comparisons (a byte peeked in one function and matched in its
        // caller belongs to the caller). No optimisation, so that no function is inlined into
        // its caller or left by a tail call (the recorder tells invocations apart by their
        // frame address, hence frame pointers too); rustc takes the last opt-level given, and
        // the wrapper's flags come last.
        Plan::Mine => &[
            "-C",
            "passes=sancov-module",
            "-C",
            "llvm-args=-sanitizer-coverage-level=1",
            "-C",
            "llvm-args=-sanitizer-coverage-trace-pc",
            "-C",
            "llvm-args=-sanitizer-coverage-trace-loads",
            "-C",
            "llvm-args=-sanitizer-coverage-trace-compares",
            "-C",
            "force-frame-pointers=yes",
            "-C",
            "opt-level=0",
        ],
    };
    [instrumentation, CHECKS].concat()
}

/// The line the wrapper adds to `rustc -vV`. Cargo hashes that output into every crate's
/// fingerprint, so crates an earlier labelfuzz instrumented with other flags are rebuilt (the
/// flags themselves never reach cargo: the wrapper adds them behind its back).
#[must_use]
pub fn instrumentation_line() -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    for plan in [Plan::Plain, Plan::Sancov, Plan::Coverage, Plan::Mine] {
        flags(plan).hash(&mut hasher);
    }
    format!("labelfuzz-instrumentation: {:016x}", hasher.finish())
}

/// Answers cargo's `rustc -vV` with rustc's answer and [`instrumentation_line`], then exits.
#[allow(dead_code)] // part of the program's entry
fn print_version_with_instrumentation(rustc: &std::ffi::OsStr) -> ! {
    match Command::new(rustc).arg("-vV").output() {
        Ok(out) if out.status.success() => {
            print!("{}", String::from_utf8_lossy(&out.stdout));
            println!("{}", instrumentation_line());
            std::process::exit(0);
        }
        Ok(out) => {
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
            std::process::exit(out.status.code().unwrap_or(1));
        }
        Err(error) => {
            eprintln!(
                "labelfuzz-rustc: cannot run {}: {error}",
                rustc.to_string_lossy()
            );
            std::process::exit(1);
        }
    }
}

#[allow(dead_code)] // the program's entry; the library only uses the rule
fn main() {
    let mut args = std::env::args_os().skip(1);
    let Some(rustc) = args.next() else {
        eprintln!(
            "labelfuzz-rustc: a RUSTC_WRAPPER, run by cargo as `labelfuzz-rustc RUSTC ARGS…`"
        );
        std::process::exit(2);
    };
    let rest: Vec<OsString> = args.collect();
    let text: Vec<String> = rest
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if text == ["-vV"] {
        print_version_with_instrumentation(&rustc);
    }
    let cargo_home = std::env::var("CARGO_HOME")
        .unwrap_or_else(|_| format!("{}/.cargo", std::env::var("HOME").unwrap_or_default()));
    let mode = std::env::var("LABELFUZZ_MODE").ok();
    let instrument = std::env::var("LABELFUZZ_INSTRUMENT").ok();
    let plan = plan(&text, mode.as_deref(), instrument.as_deref(), &cargo_home);
    let mut extra = flags(plan);
    if plan != Plan::Plain && !text.iter().any(|a| a.starts_with("debuginfo=")) {
        // Line tables where the profile has none: crash reports then name file:line.
        extra.extend(["-C", "debuginfo=line-tables-only"]);
    }
    // exec, not spawn: cargo's jobserver, signals and exit status pass straight through.
    let error = Command::new(&rustc).args(&rest).args(extra).exec();
    eprintln!(
        "labelfuzz-rustc: cannot run {}: {error}",
        rustc.to_string_lossy()
    );
    std::process::exit(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_string()).collect()
    }

    const HOME: &str = "/home/u/.cargo";

    #[test]
    fn the_version_line_names_the_instrumentation() {
        let line = instrumentation_line();
        assert!(line.starts_with("labelfuzz-instrumentation: "), "{line}");
        assert_eq!(line, instrumentation_line());
    }

    #[test]
    fn target_crates_get_sancov_and_host_code_does_not() {
        let target = args(&[
            "--crate-name",
            "serde_json",
            "src/lib.rs",
            "--target",
            "x86_64-unknown-linux-gnu",
        ]);
        assert_eq!(plan(&target, None, None, HOME), Plan::Sancov);
        let host = args(&["--crate-name", "serde_derive", "src/lib.rs"]);
        assert_eq!(plan(&host, None, None, HOME), Plan::Plain);
        let script = args(&[
            "--crate-name",
            "build_script_build",
            "build.rs",
            "--target=x86_64-unknown-linux-gnu",
        ]);
        assert_eq!(plan(&script, None, None, HOME), Plan::Plain);
        assert_eq!(plan(&args(&["-vV"]), None, None, HOME), Plan::Plain);
    }

    #[test]
    fn the_glue_is_never_instrumented() {
        for glue in GLUE_CRATES {
            let a = args(&["--crate-name", glue, "src/lib.rs", "--target", "t"]);
            assert_eq!(plan(&a, None, None, HOME), Plan::Plain, "{glue}");
        }
    }

    #[test]
    fn the_instrument_list_narrows_to_named_and_local_crates() {
        let registry = args(&[
            "--crate-name",
            "chrono",
            "/home/u/.cargo/registry/src/idx/chrono-0.4/src/lib.rs",
            "--target",
            "t",
        ]);
        let local = args(&[
            "--crate-name",
            "mine",
            "/work/mine/src/lib.rs",
            "--target",
            "t",
        ]);
        assert_eq!(plan(&registry, None, Some("chrono"), HOME), Plan::Sancov);
        assert_eq!(
            plan(&registry, None, Some("other,crate"), HOME),
            Plan::Plain
        );
        assert_eq!(plan(&local, None, Some("other"), HOME), Plan::Sancov);
        assert_eq!(plan(&registry, None, Some("all"), HOME), Plan::Sancov);
    }

    #[test]
    fn coverage_mode_swaps_the_instrumentation() {
        let target = args(&["--crate-name", "mine", "src/lib.rs", "--target", "t"]);
        assert_eq!(plan(&target, Some("coverage"), None, HOME), Plan::Coverage);
        assert!(flags(Plan::Coverage).contains(&"instrument-coverage"));
        assert!(flags(Plan::Sancov).contains(&"llvm-args=-sanitizer-coverage-trace-pc-guard"));
        assert!(flags(Plan::Plain).is_empty());
    }

    #[test]
    fn mining_mode_records_entries_and_loads_in_unoptimised_code() {
        let target = args(&["--crate-name", "parser", "src/lib.rs", "--target", "t"]);
        assert_eq!(plan(&target, Some("mine"), None, HOME), Plan::Mine);
        let mine = flags(Plan::Mine);
        assert!(mine.contains(&"llvm-args=-sanitizer-coverage-trace-loads"));
        assert!(mine.contains(&"force-frame-pointers=yes"));
        assert!(!mine.contains(&"llvm-args=-sanitizer-coverage-trace-pc-guard"));
        let build_script = args(&["--crate-name", "build_script_build", "build.rs"]);
        assert_eq!(plan(&build_script, Some("mine"), None, HOME), Plan::Plain);
    }
}
