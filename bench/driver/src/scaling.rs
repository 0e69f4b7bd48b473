//! The benchmark's scaling and memory sections: `scaling` (labelfuzz on 1 and 2 cores against
//! one plain process, libFuzzer `-fork=N` against plain libFuzzer) and `soak` (`cargo make
//! soak`: memory on both cores in grammar and bytes mode), with the process-group memory reading both use.

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

/// One run of the soak: a mode's fuzzer process group and the rows sampled from it.
struct SoakRun {
    mode: &'static str,
    child: std::process::Child,
    out: std::path::PathBuf,
    /// (minute, RSS total MiB, largest process MiB) of every sample, for the growth figures.
    rss: Vec<(f64, u64, u64)>,
    table: String,
}

impl SoakRun {
    /// Starts SQLite's fuzzer on both cores, with the SQL grammar when `mode` is `grammar`.
    fn start(fuzzer: &Path, mode: &'static str, secs: u64, work: &Path) -> SoakRun {
        use std::os::unix::process::CommandExt;
        let out = fresh_dir(&work.join(format!("soak-{mode}")));
        let mut command = Command::new(fuzzer);
        command.args([
            "-q",
            "--seed",
            "1",
            "--cores",
            "0-1",
            "--max-time",
            &secs.to_string(),
        ]);
        if mode == "grammar" {
            command
                .arg("--grammar")
                .arg(root().join("fuzzers/sql/grammar.json"));
        }
        let child = command
            .arg("-o")
            .arg(&out)
            // SQLite's ATTACH makes database files where it runs.
            .current_dir(fresh_dir(&out.with_extension("scratch")))
            .stderr(Stdio::null())
            .stdout(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("the soak fuzzer starts");
        let mut table = String::new();
        let _ = writeln!(
            table,
            "| minute | processes | RSS total MiB | largest process MiB | executions | labels | \
             corpus | crashes |"
        );
        let _ = writeln!(table, "|---:|---:|---:|---:|---:|---:|---:|---:|");
        SoakRun {
            mode,
            child,
            out,
            rss: Vec::new(),
            table,
        }
    }

    /// Samples the run's processes and its summary into one row.
    fn sample(&mut self, minute: f64) {
        let (total, largest, count) = group_rss(self.child.id());
        let summary = std::fs::read(self.out.join("summary.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .unwrap_or(Value::Null);
        let line = format!(
            "| {minute:.0} | {count} | {total} | {largest} | {} | {} | {} | {} |",
            summary["executions"].as_u64().unwrap_or(0),
            summary["labels"].as_u64().unwrap_or(0),
            summary["corpus"]["entries"].as_u64().unwrap_or(0),
            summary["crashes"].as_array().map_or(0, Vec::len),
        );
        eprintln!("soak ({}): {line}", self.mode);
        let _ = writeln!(self.table, "{line}");
        self.rss.push((minute, total, largest));
    }

    /// The table, the final summary and the change of resident memory from minute 30 (or the
    /// first sample, in a shorter soak) to the end.
    fn report(self) -> String {
        let summary = read_summary(&self.out);
        let mut t = format!("#### {} mode\n\n{}", self.mode, self.table);
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
        let from = self
            .rss
            .iter()
            .find(|(minute, _, _)| *minute >= 29.5)
            .or(self.rss.first());
        if let (Some(&(m0, r0, _)), Some(&(m1, r1, _))) = (from, self.rss.last()) {
            let lo = self.rss.iter().filter(|s| s.0 >= m0).map(|s| s.1).min();
            let hi = self.rss.iter().filter(|s| s.0 >= m0).map(|s| s.1).max();
            let _ = writeln!(
                t,
                "RSS total from minute {m0:.0} to {m1:.0}: {r0} → {r1} MiB ({:+.1} %); lowest {} \
                 and highest {} MiB in that span ({:.1} % apart).",
                (r1 as f64 / r0.max(1) as f64 - 1.0) * 100.0,
                lo.unwrap_or(0),
                hi.unwrap_or(0),
                (hi.unwrap_or(0) as f64 / lo.unwrap_or(1).max(1) as f64 - 1.0) * 100.0,
            );
        }
        t.push_str(&self.window_peaks());
        t
    }

    /// The highest readings in each half hour. A client restarts after every crash or timeout
    /// and comes back small, so single readings jump down and up again; growth shows as peaks
    /// that rise from one half hour to the next.
    fn window_peaks(&self) -> String {
        let mut t = String::from(
            "\n| minutes | samples | highest RSS total MiB | highest largest process MiB |\n\
             |---|---:|---:|---:|\n",
        );
        let last = self.rss.last().map_or(0.0, |s| s.0);
        let mut start = 0.0;
        while start < last {
            let window: Vec<_> = self
                .rss
                .iter()
                .filter(|s| s.0 >= start && s.0 < start + 30.0)
                .collect();
            if !window.is_empty() {
                let _ = writeln!(
                    t,
                    "| {start:.0}–{:.0} | {} | {} | {} |",
                    start + 30.0,
                    window.len(),
                    window.iter().map(|s| s.1).max().unwrap_or(0),
                    window.iter().map(|s| s.2).max().unwrap_or(0),
                );
            }
            start += 30.0;
        }
        t
    }
}

/// The soak run (`cargo make soak`): SQLite on both cores in grammar mode and in bytes mode,
/// the two runs side by side (four clients on the machine's cores), for `BENCH_SOAK_SECS`
/// (default 1800); memory sampled every `BENCH_SOAK_EVERY` seconds (60).
pub(crate) fn soak(work: &Path) -> String {
    let secs = env_secs("BENCH_SOAK_SECS", 1800);
    let every = env_secs("BENCH_SOAK_EVERY", 60).max(1);
    let fuzzer = build_native("sqlite", None);
    let mut runs: Vec<SoakRun> = ["grammar", "bytes"]
        .into_iter()
        .map(|mode| SoakRun::start(&fuzzer, mode, secs, work))
        .collect();
    let started = std::time::Instant::now();
    let mut next = every;
    loop {
        std::thread::sleep(std::time::Duration::from_millis(500));
        if runs
            .iter_mut()
            .all(|run| run.child.try_wait().ok().flatten().is_some())
        {
            break;
        }
        // From `--max-time` on the runs are shutting down, and a sample would read the
        // processes that have already left as memory given back.
        if started.elapsed().as_secs() < next || next >= secs {
            continue;
        }
        next += every;
        let minute = started.elapsed().as_secs_f64() / 60.0;
        for run in runs.iter_mut() {
            run.sample(minute);
        }
    }
    let mut t = format!(
        "Soak: SQLite on 2 cores for {secs} s in grammar mode and in bytes mode, the two runs \
         side by side; resident memory of all of each run's processes (broker, supervisors, \
         clients), sampled every {every} s.\n\n"
    );
    for run in runs {
        t.push_str(&run.report());
        t.push('\n');
    }
    t
}
