//! Runs one fuzzer on one target for a fixed time, pinned to one core, hard-linking its corpus
//! into a snapshot directory every minute.
//!
//! All three fuzzers get the same limits: inputs up to [`MAX_LEN`] bytes, [`TIMEOUT_MS`] per
//! execution, [`RSS_LIMIT_MB`] of memory, and they keep going after a crash (labelfuzz and
//! AFL++ do so themselves; libFuzzer is restarted on its corpus, as its users do).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::ablation::Lever;
use crate::targets::Builds;
use crate::util::{files_in, fresh_dir, read_json};

/// Longest input, bytes (libFuzzer's default for an empty corpus).
pub const MAX_LEN: usize = 4096;
/// Per-execution timeout, milliseconds.
pub const TIMEOUT_MS: u64 = 1000;
/// Memory limit, MiB (libFuzzer's default).
pub const RSS_LIMIT_MB: u64 = 2048;

/// The fuzzers compared.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Fuzzer {
    Labelfuzz,
    Libfuzzer,
    Aflpp,
    /// labelfuzz with one lever flipped from its default (`BENCH_ABLATION`).
    LabelfuzzFlipped(Lever),
}

impl Fuzzer {
    pub const ALL: [Fuzzer; 3] = [Fuzzer::Labelfuzz, Fuzzer::Libfuzzer, Fuzzer::Aflpp];

    /// Name in tables and directories.
    pub fn name(self) -> &'static str {
        match self {
            Fuzzer::Labelfuzz => "labelfuzz",
            Fuzzer::Libfuzzer => "libFuzzer",
            Fuzzer::Aflpp => "AFL++",
            Fuzzer::LabelfuzzFlipped(lever) => lever.fuzzer_name(),
        }
    }

    /// Name in directories and `BENCH_FUZZERS`.
    pub fn dir_name(self) -> &'static str {
        match self {
            Fuzzer::Labelfuzz => "labelfuzz",
            Fuzzer::Libfuzzer => "libfuzzer",
            Fuzzer::Aflpp => "aflpp",
            Fuzzer::LabelfuzzFlipped(lever) => lever.dir_name(),
        }
    }

    /// Line colour in the plots.
    pub fn colour(self) -> &'static str {
        match self {
            Fuzzer::Labelfuzz => "#d62728",
            Fuzzer::Libfuzzer => "#1f77b4",
            Fuzzer::Aflpp => "#2ca02c",
            Fuzzer::LabelfuzzFlipped(_) => "#9467bd",
        }
    }
}

/// Where one run keeps everything: `<bench>/runs/<target>/<fuzzer>/seed<N>/`.
pub fn run_dir(bench: &Path, target: &str, fuzzer: Fuzzer, seed: u64) -> PathBuf {
    bench
        .join("runs")
        .join(target)
        .join(fuzzer.dir_name())
        .join(format!("seed{seed}"))
}

/// One finished run: what the fuzzer reported, and its snapshots (minute, directory).
pub struct Run {
    pub stats: Value,
    pub snapshots: Vec<(u64, PathBuf)>,
}

/// Runs `fuzzer` for `secs` on `cpu`, into `dir` (made afresh); writes `dir/run.json`.
pub fn run(fuzzer: Fuzzer, builds: &Builds, dir: &Path, secs: u64, seed: u64, cpu: usize) -> Run {
    fresh_dir(dir);
    let work = dir.join("work");
    std::fs::create_dir_all(&work).expect("work directory");
    let seeds_dir = dir.join("seeds");
    std::fs::create_dir_all(&seeds_dir).expect("seeds directory");
    for (i, seed_file) in builds.seeds.iter().enumerate() {
        std::fs::copy(seed_file, seeds_dir.join(format!("seed-{i:04}"))).expect("copy a seed");
    }
    let corpus = match fuzzer {
        Fuzzer::Labelfuzz | Fuzzer::LabelfuzzFlipped(_) | Fuzzer::Libfuzzer => work.join("corpus"),
        Fuzzer::Aflpp => work.join("out/default/queue"),
    };
    let mut snapshots = Snapshots::new(dir.join("snapshots"), corpus);
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    let mut restarts = 0u64;
    let mut libfuzzer_execs = 0u64;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now()).as_secs();
        if remaining == 0 {
            break;
        }
        let log = std::fs::File::create(work.join(format!("log-{restarts}.txt"))).expect("log");
        let mut cmd = command(
            fuzzer,
            builds,
            &work,
            &seeds_dir,
            remaining,
            seed + restarts,
            cpu,
        );
        cmd.stdout(log.try_clone().expect("log")).stderr(log);
        let child = cmd.spawn().expect("the fuzzer starts");
        wait_with_snapshots(child, &mut snapshots, started, deadline, secs.div_ceil(60));
        if fuzzer != Fuzzer::Libfuzzer {
            break;
        }
        let log = std::fs::read(work.join(format!("log-{restarts}.txt"))).unwrap_or_default();
        libfuzzer_execs += libfuzzer_units(&String::from_utf8_lossy(&log));
        restarts += 1;
    }
    let wall = started.elapsed().as_secs_f64();
    snapshots.take(secs.div_ceil(60));
    let stats = match fuzzer {
        Fuzzer::Labelfuzz | Fuzzer::LabelfuzzFlipped(_) => {
            let summary = read_json(&work.join("summary.json"));
            json!({
                "executions": summary["executions"],
                "crashes": summary["crashes"].as_array().map_or(0, Vec::len),
            })
        }
        Fuzzer::Libfuzzer => json!({
            "executions": libfuzzer_execs,
            "crashes": files_in(&work.join("artifacts")).len(),
            "restarts": restarts.saturating_sub(1),
        }),
        Fuzzer::Aflpp => {
            let stats = afl_stats(&work.join("out/default/fuzzer_stats"));
            json!({
                "executions": stats.0,
                "crashes": stats.1,
            })
        }
    };
    // A fuzzer that did not run (a broken build, a bad flag) must not pass as one that found
    // nothing.
    assert!(
        stats["executions"].as_u64().unwrap_or(0) > 0,
        "{} did not run: see {}",
        fuzzer.name(),
        work.join("log-0.txt").display()
    );
    let mut stats = stats;
    stats["wall_secs"] = json!(wall);
    stats["cpu"] = json!(cpu);
    std::fs::write(
        dir.join("run.json"),
        serde_json::to_vec_pretty(&stats).expect("json"),
    )
    .expect("run.json");
    Run {
        stats,
        snapshots: snapshots.taken,
    }
}

/// The command that runs `fuzzer` for `secs` more seconds in `work`.
fn command(
    fuzzer: Fuzzer,
    builds: &Builds,
    work: &Path,
    seeds: &Path,
    secs: u64,
    seed: u64,
    cpu: usize,
) -> Command {
    let has_seeds = !builds.seeds.is_empty();
    match fuzzer {
        Fuzzer::Labelfuzz | Fuzzer::LabelfuzzFlipped(_) => {
            let lever = match fuzzer {
                Fuzzer::LabelfuzzFlipped(lever) => Some(lever),
                _ => None,
            };
            let mut cmd = pinned(builds.labelfuzz_for(lever), cpu);
            cmd.args(lever.map_or(&[][..], |l| l.flip_flags()));
            cmd.args(["-q", "--seed", &seed.to_string()])
                .args(["--max-time", &secs.to_string()])
                .args(["--timeout", &TIMEOUT_MS.to_string()])
                .args(["--max-len", &MAX_LEN.to_string()])
                .args(["--rss-limit-mb", &RSS_LIMIT_MB.to_string()])
                .arg("-o")
                .arg(work);
            if has_seeds {
                cmd.arg(seeds);
            }
            cmd.env("RUST_BACKTRACE", "0");
            cmd
        }
        Fuzzer::Libfuzzer => {
            let corpus = work.join("corpus");
            let artifacts = work.join("artifacts");
            std::fs::create_dir_all(&corpus).expect("corpus");
            std::fs::create_dir_all(&artifacts).expect("artifacts");
            let mut cmd = pinned(&builds.libfuzzer, cpu);
            cmd.arg(&corpus);
            if has_seeds {
                cmd.arg(seeds);
            }
            cmd.arg(format!("-max_total_time={secs}"))
                .arg(format!("-seed={seed}"))
                .arg(format!("-max_len={MAX_LEN}"))
                .arg(format!("-timeout={}", TIMEOUT_MS.div_ceil(1000)))
                .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
                .arg("-print_final_stats=1")
                .arg(format!("-artifact_prefix={}/", artifacts.display()))
                .current_dir(work)
                .env("RUST_BACKTRACE", "0");
            cmd
        }
        Fuzzer::Aflpp => {
            let input = if has_seeds {
                seeds.to_path_buf()
            } else {
                // AFL++ needs one starting input: a newline, as its docs suggest.
                let dir = work.join("in");
                std::fs::create_dir_all(&dir).expect("AFL++ input");
                std::fs::write(dir.join("newline"), b"\n").expect("AFL++ input");
                dir
            };
            let mut cmd = pinned(&builds.aflpp.join("afl-fuzz"), cpu);
            cmd.arg("-i")
                .arg(input)
                .arg("-o")
                .arg(work.join("out"))
                .args(["-V", &secs.to_string()])
                .args(["-s", &seed.to_string()])
                .args(["-G", &MAX_LEN.to_string()])
                .args(["-t", &TIMEOUT_MS.to_string()])
                .args(["-m", &RSS_LIMIT_MB.to_string()])
                .arg("-c")
                .arg(&builds.afl_cmplog)
                .arg("--")
                .arg(&builds.afl)
                .env("AFL_NO_UI", "1")
                .env("AFL_SKIP_CPUFREQ", "1")
                .env("AFL_NO_AFFINITY", "1")
                .env("AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES", "1")
                .env("AFL_SKIP_CRASHES", "1")
                .env("RUST_BACKTRACE", "0")
                .current_dir(work);
            cmd
        }
    }
}

/// A command for `program`, pinned to `cpu` with `taskset`.
fn pinned(program: &Path, cpu: usize) -> Command {
    let mut cmd = Command::new("taskset");
    cmd.args(["-c", &cpu.to_string()])
        .arg(program)
        .stdin(Stdio::null());
    cmd
}

/// Waits for `child`, taking a snapshot at each whole minute. At the deadline the last
/// snapshot is taken, whatever the fuzzer's own clock says (AFL++'s `-V` counts from the end of
/// its dry run, so it would fuzz longer than the others), and the fuzzer is asked to stop
/// (SIGINT), then killed if it has not within 30 s.
fn wait_with_snapshots(
    mut child: Child,
    snapshots: &mut Snapshots,
    started: Instant,
    deadline: Instant,
    final_minute: u64,
) {
    let mut interrupted: Option<Instant> = None;
    loop {
        if child.try_wait().ok().flatten().is_some() {
            return;
        }
        let minute = started.elapsed().as_secs() / 60;
        if minute > snapshots.last_minute() && minute < final_minute {
            snapshots.take(minute);
        }
        let now = Instant::now();
        if now >= deadline && interrupted.is_none() {
            snapshots.take(final_minute);
            if let Ok(pid) = i32::try_from(child.id()) {
                // SAFETY: kill(2) on our own child.
                unsafe { libc::kill(pid, libc::SIGINT) };
            }
            interrupted = Some(now);
        }
        if interrupted.is_some_and(|at| now > at + Duration::from_secs(30)) {
            let _ = child.kill();
            let _ = child.wait();
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Minute-by-minute hard-link copies of a corpus directory.
struct Snapshots {
    root: PathBuf,
    corpus: PathBuf,
    taken: Vec<(u64, PathBuf)>,
}

impl Snapshots {
    fn new(root: PathBuf, corpus: PathBuf) -> Self {
        Snapshots {
            root,
            corpus,
            taken: Vec::new(),
        }
    }

    fn last_minute(&self) -> u64 {
        self.taken.last().map_or(0, |(m, _)| *m)
    }

    /// Links every file now in the corpus into `<root>/<minute>/` (once per minute).
    fn take(&mut self, minute: u64) {
        if minute == 0 || self.taken.iter().any(|(m, _)| *m == minute) {
            return;
        }
        let dir = self.root.join(format!("{minute:04}"));
        std::fs::create_dir_all(&dir).expect("snapshot directory");
        for file in files_in(&self.corpus) {
            if let Some(name) = file.file_name() {
                // A file the fuzzer deleted since we listed it is simply not in the snapshot.
                let _ = std::fs::hard_link(&file, dir.join(name));
            }
        }
        self.taken.push((minute, dir));
    }
}

/// Executions libFuzzer reports in one log (its final stats, or its last status line).
pub fn libfuzzer_units(log: &str) -> u64 {
    log.lines()
        .filter_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
        .filter_map(|v| v.trim().parse().ok())
        .next_back()
        .or_else(|| {
            log.lines()
                .filter_map(|l| l.strip_prefix('#'))
                .filter_map(|l| l.split([':', '\t', ' ']).next())
                .filter_map(|v| v.parse().ok())
                .next_back()
        })
        .unwrap_or(0)
}

/// (executions, saved crashes) from AFL++'s `fuzzer_stats`.
fn afl_stats(path: &Path) -> (u64, u64) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim() == name)
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (field("execs_done"), field("saved_crashes"))
}
