//! The benchmark's smaller sections, chosen with `BENCH_ONLY`: `empty` (each fuzzer's own cost
//! per execution), `planted` (seconds to each planted bug and reproducer length), the
//! `scaling` and `soak` sections of [`crate::scaling`], the grammar sections of
//! [`crate::grammars`] and the coverage gaps of [`crate::gaps`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use serde_json::Value;

use crate::targets::{build_labelfuzz, build_rust_twin, RustBuild};
use crate::util::{env_secs, fresh_dir};

/// The planted bugs, in the order the target checks them, with their shortlex-minimal inputs.
const PLANTED_BUGS: [(&str, &[u8]); 3] = [
    ("FUZZ", b"FUZZ"),
    ("B?\\xff", b"B\x00\xff"),
    ("+ overflow", b"+\x01\xff"),
];

/// Which planted bug an input triggers (the first check that fails, as in the target).
fn planted_bug(input: &[u8]) -> Option<usize> {
    if input.starts_with(b"FUZZ") {
        return Some(0);
    }
    if input.len() >= 3 && input[0] == b'B' && input[2] == 0xff {
        return Some(1);
    }
    if input.len() >= 3 && input[0] == b'+' && u16::from(input[1]) + u16::from(input[2]) > 255 {
        return Some(2);
    }
    None
}

pub(crate) fn read_summary(out: &Path) -> Value {
    let text = std::fs::read(out.join("summary.json")).expect("summary.json");
    serde_json::from_slice(&text).expect("summary.json parses")
}

/// Runs a labelfuzz fuzzer for `secs` (with seed directories, if any); returns its summary.
pub(crate) fn run_labelfuzz(
    bin: &Path,
    out: &Path,
    secs: u64,
    mix: &[&str],
    seeds: &[PathBuf],
) -> Value {
    let status = Command::new(bin)
        .args(["-q", "--seed", "1", "--max-time", &secs.to_string()])
        .args(mix)
        .arg("-o")
        .arg(out)
        .args(seeds)
        .status()
        .expect("labelfuzz runs");
    assert!(
        status.code().is_some_and(|c| c <= 1),
        "labelfuzz failed: {status}"
    );
    read_summary(out)
}

/// What one libFuzzer run left behind.
pub(crate) struct LibfuzzerRun {
    pub(crate) execs_per_sec: f64,
    pub(crate) corpus_entries: u64,
    pub(crate) corpus_bytes: u64,
    /// Crash files with their seconds since the start.
    pub(crate) crashes: Vec<(f64, Vec<u8>)>,
}

/// Runs libFuzzer for `secs` with a corpus directory under `work`.
pub(crate) fn run_libfuzzer(
    bin: &Path,
    work: &Path,
    secs: u64,
    keep_going: bool,
    seeds: &[PathBuf],
    extra: &[&str],
) -> LibfuzzerRun {
    let corpus = fresh_dir(&work.join("corpus"));
    let artifacts = fresh_dir(&work.join("artifacts"));
    let started = SystemTime::now();
    let mut cmd = Command::new(bin);
    cmd.arg(&corpus)
        .args(seeds)
        .arg(format!("-max_total_time={secs}"))
        .arg("-seed=1")
        .arg("-print_final_stats=1")
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .current_dir(work);
    if keep_going {
        cmd.args(["-fork=1", "-ignore_crashes=1"]);
    }
    cmd.args(extra);
    let out = cmd.output().expect("libFuzzer runs");
    let wall = started.elapsed().map_or(1.0, |d| d.as_secs_f64().max(1e-3));
    let log = String::from_utf8_lossy(&out.stderr);
    let _ = std::fs::write(work.join("log.txt"), log.as_bytes());
    // Executed units over wall time, for both modes: libFuzzer's own exec/s is 0 in fork mode
    // and after an early crash.
    let units = crate::fuzzers::libfuzzer_units(&log) as f64;
    let execs_per_sec = units / wall;
    let (mut corpus_entries, mut corpus_bytes) = (0, 0);
    for entry in std::fs::read_dir(&corpus).expect("corpus").flatten() {
        corpus_entries += 1;
        corpus_bytes += entry.metadata().map_or(0, |m| m.len());
    }
    let mut crashes = Vec::new();
    for entry in std::fs::read_dir(&artifacts).expect("artifacts").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("crash-") {
            continue;
        }
        let when = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(started).ok())
            .map_or(0.0, |d| d.as_secs_f64());
        crashes.push((when, std::fs::read(entry.path()).unwrap_or_default()));
    }
    LibfuzzerRun {
        execs_per_sec,
        corpus_entries,
        corpus_bytes,
        crashes,
    }
}

/// One row of the table.
struct Row {
    target: &'static str,
    fuzzer: String,
    execs_per_sec: f64,
    corpus_entries: u64,
    corpus_bytes: u64,
    /// Distinct crash labels (labelfuzz) or crash files (libFuzzer).
    crashes: usize,
    /// For the planted target: (seconds to find, reproducer length) per bug.
    bugs: Vec<Option<(f64, usize)>>,
}

fn labelfuzz_row(target: &'static str, name: &str, summary: &Value, out: &Path) -> Row {
    let mut bugs = vec![None; PLANTED_BUGS.len()];
    if target == "planted" {
        for crash in summary["crashes"].as_array().into_iter().flatten() {
            let input =
                std::fs::read(out.join(crash["input"].as_str().unwrap_or(""))).unwrap_or_default();
            if let Some(bug) = planted_bug(&input) {
                bugs[bug] = Some((
                    crash["first_found_secs"].as_f64().unwrap_or(0.0),
                    input.len(),
                ));
            }
        }
    }
    Row {
        target,
        fuzzer: name.into(),
        execs_per_sec: summary["execs_per_sec"].as_f64().unwrap_or(0.0),
        corpus_entries: summary["corpus"]["entries"].as_u64().unwrap_or(0),
        corpus_bytes: summary["corpus"]["bytes"].as_u64().unwrap_or(0),
        crashes: summary["crashes"].as_array().map_or(0, Vec::len),
        bugs,
    }
}

fn libfuzzer_row(target: &'static str, run: &LibfuzzerRun) -> Row {
    let mut bugs: Vec<Option<(f64, usize)>> = vec![None; PLANTED_BUGS.len()];
    for (when, input) in &run.crashes {
        if let Some(bug) = planted_bug(input) {
            if bugs[bug].is_none_or(|(t, _)| *when < t) {
                bugs[bug] = Some((*when, input.len()));
            }
        }
    }
    Row {
        target,
        fuzzer: "libFuzzer".into(),
        execs_per_sec: run.execs_per_sec,
        corpus_entries: run.corpus_entries,
        corpus_bytes: run.corpus_bytes,
        crashes: run.crashes.len(),
        bugs,
    }
}

fn table(rows: &[Row], secs: u64, empty_secs: u64) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "labelfuzz vs libFuzzer, same targets, same machine, one run each, seed 1 \
         ({empty_secs} s on `empty`, {secs} s otherwise; libFuzzer on `planted` uses \
         -fork=1 -ignore_crashes=1 to go on after the first crash).\n"
    );
    let bug_names: Vec<String> = PLANTED_BUGS
        .iter()
        .map(|(n, _)| format!("`{n}` s / len"))
        .collect();
    let _ = writeln!(
        t,
        "| target | fuzzer | exec/s | corpus entries | corpus bytes | crashes | {} |",
        bug_names.join(" | ")
    );
    let _ = writeln!(
        t,
        "|---|---|---:|---:|---:|---:|{}",
        "---:|".repeat(PLANTED_BUGS.len())
    );
    for row in rows {
        let bugs: Vec<String> = row
            .bugs
            .iter()
            .map(|b| match (row.target, b) {
                ("planted", Some((s, len))) => format!("{s:.1} / {len}"),
                ("planted", None) => "not found".into(),
                _ => "".into(),
            })
            .collect();
        let _ = writeln!(
            t,
            "| {} | {} | {:.0} | {} | {} | {} | {} |",
            row.target,
            row.fuzzer,
            row.execs_per_sec,
            row.corpus_entries,
            row.corpus_bytes,
            row.crashes,
            bugs.join(" | ")
        );
    }
    let minima: Vec<String> = PLANTED_BUGS
        .iter()
        .map(|(n, m)| format!("`{n}`: {} bytes", m.len()))
        .collect();
    let _ = writeln!(t, "\nShortlex-minimal reproducers: {}.", minima.join(", "));
    t
}

/// The mixes of mutators compared: a name and the flags that select it.
type Mixes<'a> = [(&'a str, &'a [&'a str]); 3];

/// `empty`: each fuzzer's own overhead per execution.
fn bench_empty(
    lf_empty: &Path,
    lib: &Path,
    work: &Path,
    configs: &Mixes<'_>,
    empty_secs: u64,
    rows: &mut Vec<Row>,
) {
    eprintln!("bench: empty");
    for (i, (name, mix)) in configs.iter().enumerate() {
        let out = fresh_dir(&work.join(format!("empty-labelfuzz-{i}")));
        let summary = run_labelfuzz(lf_empty, &out, empty_secs, mix, &[]);
        rows.push(labelfuzz_row("empty", name, &summary, &out));
    }
    let run = run_libfuzzer(
        &lib.join("empty"),
        &fresh_dir(&work.join("empty-libfuzzer")),
        empty_secs,
        false,
        &[],
        &[],
    );
    rows.push(libfuzzer_row("empty", &run));
}

/// Runs the sections named in `only` (`empty`, `planted`, `scaling`, `sql-hooks`, `grammars`,
/// `soak`, `kill-trials`); returns their tables.
pub fn run(only: &[String], work: &Path) -> String {
    let wanted = |section: &str| only.iter().any(|s| s == section);
    if wanted("soak") {
        return crate::scaling::soak(work);
    }
    if wanted("kill-trials") {
        return crate::kill_trials::kill_trials(work);
    }
    if wanted("sql-hooks") {
        return crate::grammars::sql_hooks(work);
    }
    if wanted("grammars") {
        return crate::grammars::grammars(work);
    }
    if wanted("gaps") {
        return crate::gaps::gaps(work);
    }
    let secs = env_secs("BENCH_SECS", 60);
    let empty_secs = env_secs("BENCH_EMPTY_SECS", 10);
    // labelfuzz's default mix (expand/shrink, 16 havoc and 16 CmpLog mutants per scheduled
    // input), without CmpLog, and expand/shrink alone.
    let configs: Mixes<'_> = [
        (
            "labelfuzz (expand/shrink)",
            &["--havoc", "0", "--cmplog", "0"],
        ),
        ("labelfuzz +havoc 16", &["--cmplog", "0"]),
        ("labelfuzz default (+havoc 16 +cmplog 16)", &[]),
    ];
    let needs_fuzzers = ["empty", "planted", "scaling"].iter().any(|s| wanted(s));
    let lib = if needs_fuzzers {
        build_rust_twin(RustBuild::Libfuzzer)
    } else {
        std::path::PathBuf::new()
    };
    let mut rows = Vec::new();
    if wanted("empty") {
        let lf_empty = build_labelfuzz("empty", None);
        bench_empty(&lf_empty, &lib, work, &configs, empty_secs, &mut rows);
    }
    if wanted("planted") {
        let lf_planted = build_labelfuzz("planted", None);
        for (i, (name, mix)) in configs.iter().enumerate() {
            eprintln!("bench: planted {name}");
            let out = fresh_dir(&work.join(format!("planted-labelfuzz-{i}")));
            let summary = run_labelfuzz(&lf_planted, &out, secs, mix, &[]);
            rows.push(labelfuzz_row("planted", name, &summary, &out));
        }
        eprintln!("bench: planted libFuzzer");
        let dir = fresh_dir(&work.join("planted-libfuzzer"));
        let run = run_libfuzzer(&lib.join("planted"), &dir, secs, true, &[], &[]);
        rows.push(libfuzzer_row("planted", &run));
    }
    let mut text = if rows.is_empty() {
        String::new()
    } else {
        table(&rows, secs, empty_secs) + "\n"
    };
    if wanted("scaling") {
        let lf_json = build_labelfuzz("json", None);
        text.push_str(&crate::scaling::scaling(&lf_json, &lib.join("json"), work));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_processes_of_one_group_are_counted() {
        use std::os::unix::process::CommandExt;
        let mut child = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let (total, largest, count) = crate::scaling::group_rss(child.id());
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(count, 1);
        assert_eq!(total, largest);
        // Killed and reaped: nothing of the group is left.
        assert_eq!(crate::scaling::group_rss(child.id()).2, 0);
    }

    #[test]
    fn planted_bugs_are_classified_like_the_target_does() {
        for (index, (_, minimal)) in PLANTED_BUGS.iter().enumerate() {
            assert_eq!(planted_bug(minimal), Some(index));
        }
        assert_eq!(planted_bug(b"FUZZB\x00\xff"), Some(0));
        assert_eq!(planted_bug(b"B\x00\xfe"), None);
        assert_eq!(planted_bug(b"+\x01\xfe"), None);
    }
}
