//! The grammar sections of the benchmark: `sql-hooks` (SQLite's SQL grammar with and without
//! its hooks) and `grammars` (serde_json in bytes mode, with the hand-written JSON grammar and
//! with a grammar mined from the bytes run's corpus). Both count edges and labels as labelfuzz
//! does, with one binary for every variant, so the yardstick is the same.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::extras::read_summary;
use crate::targets::{build_labelfuzz, build_native};
use crate::util::{env_secs, fresh_dir, root};

/// The SQL grammar without its hooks: every `{"symbol": S, "hook": H}` token becomes `S`, so
/// table and column names are whatever the names' own rules produce.
fn without_hooks(grammar: &Value) -> Value {
    match grammar {
        Value::Object(map) if map.contains_key("hook") => match map.get("symbol") {
            Some(symbol) => symbol.clone(),
            None => {
                let mut map = map.clone();
                map.remove("hook");
                Value::Object(map)
            }
        },
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), without_hooks(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_hooks).collect()),
        other => other.clone(),
    }
}

/// `BENCH_ONLY=sql-hooks`: SQLite in grammar mode with the SQL grammar (its hooks make
/// statements name tables and columns that exist) and with the same grammar without hooks,
/// `BENCH_SECS` each (default 600) for `BENCH_SEEDS` seeds (default 1), on one core (the first
/// of `BENCH_CPUS`); edges
/// as labelfuzz counts them (same binary, same counter for both).
pub(crate) fn sql_hooks(work: &Path) -> String {
    let secs = env_secs("BENCH_SECS", 600);
    let seeds = env_secs("BENCH_SEEDS", 1).max(1);
    let fuzzer = build_native("sqlite", None);
    let with = root().join("fuzzers/sql/grammar.json");
    let text = std::fs::read_to_string(&with).expect("the SQL grammar");
    let plain: Value =
        without_hooks(&serde_json::from_str(&text).expect("the SQL grammar is JSON"));
    let without = work.join("sql-without-hooks.json");
    std::fs::write(&without, plain.to_string()).expect("write the grammar");
    let mut t = format!(
        "SQLite in grammar mode, {secs} s per run, {seeds} seed(s), one core; edges and labels \
         as labelfuzz counts them.\n\n\
         | grammar | seed | edges | labels | executions | corpus |\n\
         |---|---:|---:|---:|---:|---:|\n"
    );
    for seed in 1..=seeds {
        for (name, grammar) in [("with hooks", &with), ("without hooks", &without)] {
            eprintln!("bench: SQL grammar {name}, seed {seed}");
            let out = fresh_dir(&work.join(format!("sql-{}-{seed}", name.replace(' ', "-"))));
            let flags = [std::ffi::OsStr::new("--grammar"), grammar.as_os_str()];
            let summary = run_pinned(&fuzzer, &out, secs, seed, &flags);
            let _ = writeln!(
                t,
                "| {name} | {seed} | {} | {} | {} | {} |",
                summary["edges"],
                summary["labels"],
                summary["executions"],
                summary["corpus"]["entries"]
            );
        }
    }
    t
}

/// Runs `fuzzer` pinned to the first of the bench's cores (`BENCH_CPUS`) for `secs` with
/// `flags` and random seed `seed`, into `out`; returns its summary.
fn run_pinned(
    fuzzer: &Path,
    out: &Path,
    secs: u64,
    seed: u64,
    flags: &[&std::ffi::OsStr],
) -> Value {
    let core = crate::cpus().first().copied().unwrap_or(0);
    let status = Command::new("taskset")
        .args(["-c", &core.to_string()])
        .arg(fuzzer)
        .args([
            "-q",
            "--seed",
            &seed.to_string(),
            "--max-time",
            &secs.to_string(),
        ])
        .args(flags)
        .arg("-o")
        .arg(out)
        // A target may write files where it runs (SQLite's ATTACH makes database files).
        .current_dir(crate::util::fresh_dir(&out.with_extension("scratch")))
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("the fuzzer runs");
    assert!(status.code().is_some_and(|c| c <= 1), "fuzzer: {status}");
    read_summary(out)
}

/// `BENCH_ONLY=grammars`: the `json` target (serde_json) for `BENCH_SECS` each (default 600),
/// seed 1, pinned to one core (the first of `BENCH_CPUS`): in bytes mode; with the hand-written grammar
/// (`fuzzers/json/grammar.json`); and with the grammar `FUZZER mine` mines from the bytes run's
/// corpus with the target's mining build (`cargo labelfuzz build --mine`), its error path
/// serde_json's syntax-error constructor. The mined run starts from nothing but its grammar.
pub(crate) fn grammars(work: &Path) -> String {
    let secs = env_secs("BENCH_SECS", 600);
    let fuzzer = build_labelfuzz("json", None);
    let miner = crate::targets::build_labelfuzz_as("json", labelfuzz_build::Mode::Mine);
    let hand_written = root().join("fuzzers/json/grammar.json");
    let bytes_out = fresh_dir(&work.join("json-bytes"));
    eprintln!("bench: json in bytes mode");
    let bytes = run_pinned(&fuzzer, &bytes_out, secs, 1, &[]);
    eprintln!("bench: mining json's grammar from the bytes run's corpus");
    let mined = work.join("json-mined.json");
    let started = std::time::Instant::now();
    let mining = Command::new(&miner)
        .arg("mine")
        .arg(bytes_out.join("corpus"))
        .arg("-o")
        .arg(&mined)
        .args(["--error", "serde_json::error::Error::syntax"])
        .stderr(Stdio::inherit())
        .output()
        .expect("the miner runs");
    assert!(mining.status.success(), "mining failed: {}", mining.status);
    let mining_secs = started.elapsed().as_secs_f64();
    let said = String::from_utf8_lossy(&mining.stdout);
    let precision = said
        .lines()
        .find(|l| l.contains("precision"))
        .unwrap_or("")
        .trim()
        .to_string();
    let mut rows = vec![("bytes", bytes)];
    for (name, grammar) in [
        ("hand-written grammar", &hand_written),
        ("mined grammar", &mined),
    ] {
        eprintln!("bench: json with the {name}");
        let out = fresh_dir(&work.join(format!("json-{}", name.replace(' ', "-"))));
        let flags = [std::ffi::OsStr::new("--grammar"), grammar.as_os_str()];
        rows.push((name, run_pinned(&fuzzer, &out, secs, 1, &flags)));
    }
    let mut t = format!(
        "serde_json (the `json` target), {secs} s per run, seed 1, one core; edges and labels \
         as labelfuzz counts them, one binary for every mode. The mined grammar came from the bytes run's corpus in {mining_secs:.0} s \
         ({precision}).\n\n\
         | inputs | edges | labels | executions | corpus |\n\
         |---|---:|---:|---:|---:|\n"
    );
    for (name, summary) in rows {
        let _ = writeln!(
            t,
            "| {name} | {} | {} | {} | {} |",
            summary["edges"],
            summary["labels"],
            summary["executions"],
            summary["corpus"]["entries"]
        );
    }
    t
}
