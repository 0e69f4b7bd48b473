//! The benchmark's scaling and memory sections: `scaling` (labelfuzz on 1 and 2 cores against
//! one plain process, libFuzzer `-fork=N` against plain libFuzzer) and `soak` (`cargo make
//! soak`: memory over 30 minutes on both cores), with the process-group memory reading both use.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::extras::{read_summary, run_labelfuzz, run_libfuzzer};
use crate::targets::{build_native, build_rust_twin, RustBuild, TARGETS};
use crate::util::{env_secs, fresh_dir, root};
use crate::yardstick;

/// Throughput and coverage on `json` with 1 and 2 cores: labelfuzz's Launcher/LLMP clients
/// against one plain labelfuzz process, and libFuzzer `-fork=2` against plain libFuzzer.
/// Coverage is the yardstick's (lines of serde_json, the final corpus replayed).
pub(crate) fn scaling(lf_json: &Path, lib_json: &Path, work: &Path) -> String {
    let secs = env_secs("BENCH_SCALING_SECS", 120);
    let json = TARGETS
        .iter()
        .find(|t| t.name == "json")
        .expect("json is a target");
    let coverage_bin = build_rust_twin(RustBuild::Coverage).join("json");
    let lines = |corpus: &Path| {
        let inputs = crate::util::files_in(corpus);
        yardstick::measure(json, &coverage_bin, &inputs, &work.join("scratch"), 0).lines
    };
    let mut t = String::new();
    let _ = writeln!(
        t,
        "Scaling on `json`, {secs} s per run: executions per second over all processes, and \
         lines of serde_json the final corpus covers (one coverage build for both fuzzers). \
         The 1-core rows are one plain process.\n"
    );
    let _ = writeln!(
        t,
        "| fuzzer | cores | exec/s | speed-up | lines | corpus entries |"
    );
    let _ = writeln!(t, "|---|---:|---:|---:|---:|---:|");
    let mut one_core = [0.0_f64; 2];
    for cores in [1_usize, 2] {
        eprintln!("bench: scaling, labelfuzz on {cores} core(s)");
        let out = fresh_dir(&work.join(format!("scaling-labelfuzz-{cores}")));
        let spec = format!("0-{}", cores - 1);
        let flags: Vec<&str> = if cores == 1 {
            vec![]
        } else {
            vec!["--cores", &spec]
        };
        let summary = run_labelfuzz(lf_json, &out, secs, &flags, &[]);
        let execs = summary["execs_per_sec"].as_f64().unwrap_or(0.0);
        if cores == 1 {
            one_core[0] = execs;
        }
        let _ = writeln!(
            t,
            "| labelfuzz | {cores} | {execs:.0} | {:.2}x | {} | {} |",
            execs / one_core[0].max(1.0),
            lines(&out.join("corpus")),
            summary["corpus"]["entries"].as_u64().unwrap_or(0),
        );

        eprintln!("bench: scaling, libFuzzer on {cores} core(s)");
        let dir = fresh_dir(&work.join(format!("scaling-libfuzzer-{cores}")));
        let fork = format!("-fork={cores}");
        let extra: Vec<&str> = if cores == 1 { vec![] } else { vec![&fork] };
        let run = run_libfuzzer(lib_json, &dir, secs, false, &[], &extra);
        if cores == 1 {
            one_core[1] = run.execs_per_sec;
        }
        let _ = writeln!(
            t,
            "| libFuzzer{} | {cores} | {:.0} | {:.2}x | {} | {} |",
            if cores == 1 {
                String::new()
            } else {
                format!(" {fork}")
            },
            run.execs_per_sec,
            run.execs_per_sec / one_core[1].max(1.0),
            lines(&dir.join("corpus")),
            run.corpus_entries,
        );
    }
    t
}

/// Resident memory of the processes in process group `group`: (sum, largest, count), in MiB.
pub(crate) fn group_rss(group: u32) -> (u64, u64, usize) {
    let page_kib = 4;
    let (mut total, mut largest, mut count) = (0, 0, 0);
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        // SAFETY: getpgid(2) only reads the process table; a pid gone meanwhile gives -1, which
        // no group id equals.
        let in_group = u32::try_from(unsafe { libc::getpgid(pid) }) == Ok(group);
        if !in_group || !labelfuzz::process::is_running(pid.unsigned_abs()) {
            continue;
        }
        let resident_pages: u64 = std::fs::read_to_string(entry.path().join("statm"))
            .ok()
            .and_then(|m| m.split(' ').nth(1).and_then(|v| v.parse().ok()))
            .unwrap_or(0);
        let mib = resident_pages * page_kib / 1024;
        total += mib;
        largest = largest.max(mib);
        count += 1;
    }
    (total, largest, count)
}

/// The soak run (`cargo make soak`): SQLite in grammar mode on both cores for
/// `BENCH_SOAK_SECS` (default 1800), memory sampled every `BENCH_SOAK_EVERY` seconds (60).
pub(crate) fn soak(work: &Path) -> String {
    use std::os::unix::process::CommandExt;
    let secs = env_secs("BENCH_SOAK_SECS", 1800);
    let every = env_secs("BENCH_SOAK_EVERY", 60).max(1);
    let fuzzer = build_native("sqlite", None);
    let out = fresh_dir(&work.join("soak"));
    let mut child = Command::new(&fuzzer)
        .args([
            "-q",
            "--seed",
            "1",
            "--cores",
            "0-1",
            "--max-time",
            &secs.to_string(),
        ])
        .arg("--grammar")
        .arg(root().join("fuzzers/sql/grammar.json"))
        .arg("-o")
        .arg(&out)
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("the soak fuzzer starts");
    let group = child.id();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "Soak: SQLite (grammar mode) on 2 cores for {secs} s; resident memory of all of the \
         run's processes, sampled every {every} s.\n"
    );
    let _ = writeln!(
        t,
        "| minute | processes | RSS total MiB | largest process MiB | executions | labels | corpus | crashes |"
    );
    let _ = writeln!(t, "|---:|---:|---:|---:|---:|---:|---:|---:|");
    let started = std::time::Instant::now();
    let mut next = every;
    loop {
        std::thread::sleep(std::time::Duration::from_millis(500));
        if child.try_wait().ok().flatten().is_some() {
            break;
        }
        if started.elapsed().as_secs() < next {
            continue;
        }
        next += every;
        let (total, largest, count) = group_rss(group);
        let summary = std::fs::read(out.join("summary.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .unwrap_or(Value::Null);
        let line = format!(
            "| {:.0} | {count} | {total} | {largest} | {} | {} | {} | {} |",
            started.elapsed().as_secs_f64() / 60.0,
            summary["executions"].as_u64().unwrap_or(0),
            summary["labels"].as_u64().unwrap_or(0),
            summary["corpus"]["entries"].as_u64().unwrap_or(0),
            summary["crashes"].as_array().map_or(0, Vec::len),
        );
        eprintln!("soak: {line}");
        let _ = writeln!(t, "{line}");
    }
    let summary = read_summary(&out);
    let _ = writeln!(
        t,
        "\nFinal: {} executions ({:.0}/s), {} labels, {} edges, corpus {} entries, peak RSS \
         {} MiB (the clients' peaks added up), {} crash labels.",
        summary["executions"].as_u64().unwrap_or(0),
        summary["execs_per_sec"].as_f64().unwrap_or(0.0),
        summary["labels"].as_u64().unwrap_or(0),
        summary["edges"].as_u64().unwrap_or(0),
        summary["corpus"]["entries"].as_u64().unwrap_or(0),
        summary["peak_rss_mb"].as_u64().unwrap_or(0),
        summary["crashes"].as_array().map_or(0, Vec::len),
    );
    t
}
