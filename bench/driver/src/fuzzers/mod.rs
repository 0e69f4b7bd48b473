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

mod aflpp;
mod labelfuzz;
mod libfuzzer;

use crate::util::{files_in, fresh_dir};
pub use libfuzzer::libfuzzer_units;

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
        Fuzzer::Aflpp => aflpp::corpus(&work),
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
        let invocation = Invocation {
            work: &work,
            seeds: &seeds_dir,
            has_seeds: !builds.seeds.is_empty(),
            secs: remaining,
            seed: seed + restarts,
            cpu,
        };
        let mut cmd = command(fuzzer, builds, &invocation);
        cmd.stdout(log.try_clone().expect("log")).stderr(log);
        let child = cmd.spawn().expect("the fuzzer starts");
        wait_with_snapshots(child, &mut snapshots, started, deadline, secs.div_ceil(60));
        if fuzzer != Fuzzer::Libfuzzer {
            break;
        }
        let log = std::fs::read(work.join(format!("log-{restarts}.txt"))).unwrap_or_default();
        libfuzzer_execs += libfuzzer::libfuzzer_units(&String::from_utf8_lossy(&log));
        restarts += 1;
    }
    let wall = started.elapsed().as_secs_f64();
    snapshots.take(secs.div_ceil(60));
    let stats = match fuzzer {
        Fuzzer::Labelfuzz | Fuzzer::LabelfuzzFlipped(_) => labelfuzz::stats(&work),
        Fuzzer::Libfuzzer => libfuzzer::stats(&work, libfuzzer_execs, restarts),
        Fuzzer::Aflpp => aflpp::stats(&work),
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

/// The command that runs `fuzzer` for `secs` more seconds in `work`: each fuzzer's own module
/// says how, so that a change to one fuzzer's command leaves the others' records valid (the
/// bench fingerprints each fuzzer's runs by its module, [`crate::ledger::sources`]).
fn command(fuzzer: Fuzzer, builds: &Builds, run: &Invocation<'_>) -> Command {
    match fuzzer {
        Fuzzer::Labelfuzz => labelfuzz::command(None, builds, run),
        Fuzzer::LabelfuzzFlipped(lever) => labelfuzz::command(Some(lever), builds, run),
        Fuzzer::Libfuzzer => libfuzzer::command(builds, run),
        Fuzzer::Aflpp => aflpp::command(builds, run),
    }
}

/// One start of a fuzzer inside a run: where it works and for how long.
pub(crate) struct Invocation<'a> {
    /// The run's working directory.
    pub work: &'a Path,
    /// The seeds' directory (empty when the target has none).
    pub seeds: &'a Path,
    /// Whether the target has seeds.
    pub has_seeds: bool,
    /// Seconds left of the run.
    pub secs: u64,
    /// The fuzzer's random seed.
    pub seed: u64,
    /// The core it is pinned to.
    pub cpu: usize,
}

/// A command for `program`, pinned to `cpu` with `taskset`.
pub(crate) fn pinned(program: &Path, cpu: usize) -> Command {
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
