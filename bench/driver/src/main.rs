//! `cargo make bench`: labelfuzz, libFuzzer and AFL++ on the same targets, measured with one
//! yardstick.
//!
//! Every target is built five ways (labelfuzz, libFuzzer, AFL++ and its CmpLog twin, and a
//! clang/rustc source-based coverage build). Each fuzzer runs alone on one core for
//! `BENCH_SECS`, once per seed; its corpus is hard-linked into a snapshot every minute, and
//! every snapshot (plus the seeds, where a target has them) is replayed through the coverage
//! build, counting the library's branches and lines only. Tables, one SVG plot per target and
//! the raw numbers go to `target/bench/<secs>s/`.
//!
//! Environment:
//! - `BENCH_SECS` (600) per run and `BENCH_SEEDS` (3) runs per fuzzer and target; the smoke
//!   run is `BENCH_SECS=120 BENCH_SEEDS=1`, the long one `BENCH_SECS=3600`;
//! - `BENCH_TARGETS` (all): comma-separated target names;
//! - `BENCH_FUZZERS` (all): comma-separated fuzzers to run (`labelfuzz`, `libfuzzer`,
//!   `aflpp`), or `none`; the tables still include every fuzzer's finished runs, as long as
//!   they were built from the current sources;
//! - `BENCH_CPUS` (every core): the cores to run on, one fuzzer per core at a time;
//! - `BENCH_MEASURE_EVERY` (1 minute up to 20-minute runs, else 5): minutes between measured
//!   snapshots;
//! - `BENCH_PROCESSOR` (this machine's): the processor model whose records (kept per model, see
//!   `ledger.rs`) are reused and tabled; another model's only with `BENCH_FUZZERS=none`;
//! - `BENCH_FRESH=1` reruns runs that already finished (by default a rerun only does what is
//!   missing or was run from other sources, so an interrupted benchmark resumes, on this machine
//!   or, from the records in `bench/results/` (see `ledger.rs`), on another);
//! - `BENCH_PUBLISH=<file>` writes the tables and plots into that Markdown file between
//!   `<!-- bench:<secs>s:begin -->` and `<!-- bench:<secs>s:end -->` (plots to
//!   `docs/bench/<secs>s/`);
//! - `BENCH_ONLY=empty,planted,scaling`, `sql-hooks`, `grammars`, `soak` or `kill-trials` runs
//!   those smaller sections instead (see `extras.rs`, `grammars.rs` and `scaling.rs`), and
//!   `BENCH_ONLY=gaps` (with `BENCH_SECS` and `BENCH_TARGETS`) lists what the other fuzzers'
//!   final corpora of the runs kept here cover and labelfuzz's do not (`gaps.rs`); with
//!   `BENCH_PUBLISH` their text goes between `<!-- bench:<BENCH_ONLY>:begin -->` and its end,
//!   with the command, processor and commit that produced it;
//! - `BENCH_ABLATION=cmp-progress,cmp-progress-from-start,cmplog,cmplog-transforms,
//!   cmplog-colorize,cmplog-repair,havoc,regular-runs,long-runs,long-runs-from-start,
//!   rare-schedule,charge-exec-time,shrink-budget,auto-dict,split-conditions` runs labelfuzz
//!   with each named lever flipped from its default beside labelfuzz as it ships, instead of the
//!   three fuzzers, and writes the ablation table (`ablation.rs`; published between
//!   `<!-- bench:<secs>s-ablation-<levers>:begin -->` and its end, the levers joined by `+`).

mod ablation;
mod extras;
mod fuzzers;
mod gaps;
mod grammars;
mod kill_trials;
mod ledger;
mod plot;
mod publish;
mod reading;
mod report;
mod scaling;
mod targets;
mod util;
mod yardstick;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::json;

use fuzzers::Fuzzer;
use report::Measured;
use targets::{Builds, Target, TARGETS};
use util::{env_secs, files_in, read_json, root};

/// One run to do: a target, a fuzzer and a seed.
struct Job {
    target: usize,
    fuzzer: Fuzzer,
    seed: u64,
    /// Whether to run it when it is missing or stale; otherwise its last results are used.
    run: bool,
    /// The fingerprint of its sources ([`ledger::fingerprint`]).
    fingerprint: String,
    /// Its finished results built from those sources: the kept record, or else the run
    /// directory's `measured.json`.
    finished: Option<PathBuf>,
}

/// What one `cargo make bench` was asked for, read from the environment.
struct Settings {
    secs: u64,
    seeds: u64,
    measure_every: u64,
    fresh: bool,
    /// `BENCH_FUZZERS`: the fuzzers to run (empty: all).
    fuzzers_to_run: String,
    /// `BENCH_FUZZERS=none`: only the tables, from the runs already finished.
    run_none: bool,
    /// `BENCH_ABLATION`: the levers to flip (empty: the standard comparison of three fuzzers).
    pub(crate) ablation: Vec<ablation::Lever>,
    /// The processor model whose records fill the tables ([`ledger::processor`]).
    processor: String,
    /// Whether `processor` is this machine's: only then do the run directories under
    /// `target/bench` hold its runs.
    processor_is_here: bool,
}

impl Settings {
    fn from_env() -> Self {
        let secs = env_secs("BENCH_SECS", 600);
        let ablation =
            ablation::Lever::parse_list(&std::env::var("BENCH_ABLATION").unwrap_or_default())
                .unwrap_or_else(|e| panic!("{e}"));
        let fuzzers_to_run = std::env::var("BENCH_FUZZERS").unwrap_or_default();
        let (processor, here) = ledger::processor();
        let processor_is_here = processor == here;
        assert!(
            processor_is_here || fuzzers_to_run.trim() == "none",
            "BENCH_PROCESSOR={processor} is not this machine's processor ({here}): runs are kept \
             with the processor they ran on, so another model's records can only be tabled \
             (BENCH_FUZZERS=none)"
        );
        let run_none = fuzzers_to_run.trim() == "none";
        let known: Vec<&str> = fuzzers_of(&ablation).iter().map(|f| f.dir_name()).collect();
        assert!(
            run_none
                || fuzzers_to_run
                    .split(',')
                    .filter(|f| !f.trim().is_empty())
                    .all(|f| known.contains(&f.trim())),
            "BENCH_FUZZERS: the fuzzers are {} (or none, for the tables of the finished runs \
             only)",
            known.join(", ")
        );
        Settings {
            secs,
            seeds: env_secs("BENCH_SEEDS", 3).max(1),
            measure_every: env_secs("BENCH_MEASURE_EVERY", if secs <= 1200 { 1 } else { 5 }).max(1),
            fresh: std::env::var("BENCH_FRESH").is_ok_and(|v| v == "1"),
            fuzzers_to_run,
            run_none,
            ablation,
            processor,
            processor_is_here,
        }
    }

    /// The fuzzers this benchmark compares.
    fn fuzzers(&self) -> Vec<Fuzzer> {
        fuzzers_of(&self.ablation)
    }

    /// Whether `fuzzer` is to be run (rather than only read from its finished runs).
    fn runs(&self, fuzzer: Fuzzer) -> bool {
        !self.run_none && self.fuzzers_to_run.is_empty()
            || self
                .fuzzers_to_run
                .split(',')
                .any(|f| f.trim() == fuzzer.dir_name())
    }
}

fn main() {
    let only: Vec<String> = std::env::var("BENCH_ONLY")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if !only.is_empty() {
        // One directory per choice of sections: a soak and the kill trials may run at once.
        let work = util::fresh_dir(&root().join("target/bench/extras").join(only.join("-")));
        let text = extras::run(&only, &work);
        println!("{text}");
        std::fs::write(work.join("results.md"), &text).expect("results.md");
        if let Ok(file) = std::env::var("BENCH_PUBLISH") {
            publish::publish_extras(Path::new(&file), &only, &text);
        }
        return;
    }
    let settings = Settings::from_env();
    let targets = chosen_targets();
    let bench = root().join(format!("target/bench/{}s", settings.secs));
    std::fs::create_dir_all(&bench).expect("bench directory");

    // Fingerprinted before and after building, so that a record never names sources its
    // binaries were not built from.
    let fingerprint_all = || -> Vec<Vec<String>> {
        targets
            .iter()
            .map(|t| {
                let fuzzers = settings.fuzzers();
                fuzzers.iter().map(|&f| ledger::fingerprint(t, f)).collect()
            })
            .collect()
    };
    let fingerprints = fingerprint_all();
    let builds: Vec<Option<Builds>> = targets
        .iter()
        .map(|t| (!settings.run_none).then(|| t.build(&settings.ablation)))
        .collect();
    assert!(
        fingerprints == fingerprint_all(),
        "the sources changed while the benchmark was building; run it again"
    );
    let jobs = plan_jobs(&settings, &targets, &fingerprints, &bench);
    let all = run_jobs(&settings, jobs, &targets, &builds, &bench);
    publish::write_results(&settings, &targets, &all, &bench);
}

/// The three fuzzers, or in an ablation labelfuzz as it ships and with each lever flipped.
fn fuzzers_of(levers: &[ablation::Lever]) -> Vec<Fuzzer> {
    if levers.is_empty() {
        Fuzzer::ALL.to_vec()
    } else {
        ablation::fuzzers(levers)
    }
}

/// The targets `BENCH_TARGETS` names (all by default).
fn chosen_targets() -> Vec<&'static Target> {
    let chosen = std::env::var("BENCH_TARGETS").unwrap_or_default();
    let targets: Vec<&'static Target> = TARGETS
        .iter()
        .filter(|t| chosen.is_empty() || chosen.split(',').any(|c| c.trim() == t.name))
        .collect();
    assert!(
        !targets.is_empty(),
        "BENCH_TARGETS names no target; the targets are: {}",
        TARGETS
            .iter()
            .map(|t| t.name)
            .collect::<Vec<_>>()
            .join(", ")
    );
    targets
}

/// Every (target, fuzzer, seed) to run or to read, seeds outermost: a benchmark cut short still
/// has every target and fuzzer once. Returned in reverse, to be popped.
fn plan_jobs(
    settings: &Settings,
    targets: &[&'static Target],
    fingerprints: &[Vec<String>],
    bench: &Path,
) -> Vec<Job> {
    let mut jobs = Vec::new();
    for seed in 1..=settings.seeds {
        for (target, chosen_target) in targets.iter().enumerate() {
            for (fuzzer, fingerprint) in settings.fuzzers().into_iter().zip(&fingerprints[target]) {
                let run = settings.runs(fuzzer);
                // The kept record first: it is what the tables were published from.
                let record = ledger::record_path(
                    settings.secs,
                    &settings.processor,
                    chosen_target.name,
                    fuzzer,
                    seed,
                );
                // A run directory holds this machine's runs; tables of another processor's
                // records read those records only.
                let here =
                    fuzzers::run_dir(bench, chosen_target.name, fuzzer, seed).join("measured.json");
                let finished = std::iter::once(record.clone())
                    .chain(settings.processor_is_here.then_some(here))
                    .find(|file| {
                        let kept = read_json(file);
                        kept["build"].as_str() == Some(fingerprint.as_str())
                            && ledger::ran_its_time(&kept["stats"], settings.secs)
                    });
                // A fuzzer not run this time still fills the tables with its finished runs.
                if !run && finished.is_none() {
                    if record.exists() {
                        eprintln!(
                            "bench: {} on {} (seed {}) left out: its record is of other sources, \
                             or of a run cut short",
                            fuzzer.name(),
                            chosen_target.name,
                            seed
                        );
                    }
                    continue;
                }
                jobs.push(Job {
                    target,
                    fuzzer,
                    seed,
                    run,
                    fingerprint: fingerprint.clone(),
                    finished,
                });
            }
        }
    }
    jobs.reverse();
    jobs
}

/// Runs (or reads) the jobs, one per core at a time; returns every result, sorted.
fn run_jobs(
    settings: &Settings,
    jobs: Vec<Job>,
    targets: &[&'static Target],
    builds: &[Option<Builds>],
    bench: &Path,
) -> Vec<Measured> {
    let queue = Mutex::new(jobs);
    let results = Mutex::new(Vec::new());
    // A target may write files where it runs (SQLite's `ATTACH 'x'` creates `x`): labelfuzz's
    // runs and every coverage replay, which have no working directory of their own, run in a
    // scratch directory of this benchmark process's (benches started at once each have their
    // own), never in the repository.
    let scratch = util::fresh_dir(&bench.join(format!("cwd-{}", std::process::id())));
    let before = std::env::current_dir().ok();
    std::env::set_current_dir(&scratch).expect("the benchmark's scratch directory");
    std::thread::scope(|scope| {
        for cpu in cpus() {
            let (queue, results) = (&queue, &results);
            scope.spawn(move || loop {
                let Some(job) = queue.lock().expect("queue").pop() else {
                    break;
                };
                if let Some(measured) = run_job(settings, &job, targets, builds, bench, cpu) {
                    results.lock().expect("results").push(measured);
                }
            });
        }
    });
    if let Some(before) = before {
        let _ = std::env::set_current_dir(before);
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let mut all = results.into_inner().expect("results");
    all.sort_by_key(|m| (m.target.name, m.fuzzer.name(), m.seed));
    all
}

/// One job on core `cpu`: its finished results, or a fresh run measured and kept. `None` when
/// the core stayed busy.
fn run_job(
    settings: &Settings,
    job: &Job,
    targets: &[&'static Target],
    builds: &[Option<Builds>],
    bench: &Path,
    cpu: usize,
) -> Option<Measured> {
    let secs = settings.secs;
    let target = targets[job.target];
    let dir = fuzzers::run_dir(bench, target.name, job.fuzzer, job.seed);
    let record = ledger::record_path(secs, &settings.processor, target.name, job.fuzzer, job.seed);
    let measured_here = dir.join("measured.json");
    let measured = match &job.finished {
        Some(file) if !settings.fresh || !job.run => {
            // A run finished before records were kept gets one now.
            if file == &measured_here {
                ledger::keep(&measured_here, &record);
            }
            ledger::load(target, job.fuzzer, job.seed, file)
        }
        _ => {
            if !util::wait_for_idle_core(cpu, Duration::from_secs(600)) {
                eprintln!(
                    "bench: error: core {cpu} stayed busy for ten minutes; {} on {} (seed {}) is \
                     not run (a fuzzer sharing its core would be measured at half speed)",
                    job.fuzzer.name(),
                    target.name,
                    job.seed
                );
                return None;
            }
            eprintln!(
                "bench: {} on {} (seed {}) for {secs} s on core {cpu}",
                job.fuzzer.name(),
                target.name,
                job.seed
            );
            let builds = builds[job.target].as_ref().expect("built when runs are");
            let run = fuzzers::run(job.fuzzer, builds, &dir, secs, job.seed, cpu);
            util::kill_leftovers(&dir);
            if !ledger::ran_its_time(&run.stats, secs) {
                eprintln!(
                    "bench: error: {} on {} (seed {}) stopped after {:.0} s of its {secs} s \
                     (stopped from outside, or it quit: see {}); not recorded, it runs again \
                     next time",
                    job.fuzzer.name(),
                    target.name,
                    job.seed,
                    run.stats["wall_secs"].as_f64().unwrap_or(0.0),
                    dir.display()
                );
                return None;
            }
            let every = settings.measure_every;
            measure(target, builds, &run, &dir, every, cpu, &job.fingerprint);
            ledger::keep(&measured_here, &record);
            ledger::load(target, job.fuzzer, job.seed, &record)
        }
    };
    if let Some(last) = measured.points.last() {
        eprintln!(
            "bench: {} on {} (seed {}): {} branches, {} lines, {} entries",
            job.fuzzer.name(),
            target.name,
            job.seed,
            last.coverage.branches,
            last.coverage.lines,
            last.entries
        );
    }
    Some(measured)
}

/// The cores to run on: `BENCH_CPUS` or all of them.
pub(crate) fn cpus() -> Vec<usize> {
    match std::env::var("BENCH_CPUS") {
        Ok(list) if !list.trim().is_empty() => list
            .split(',')
            .map(|c| {
                c.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("BENCH_CPUS: '{c}' is not a core number"))
            })
            .collect(),
        _ => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

/// Measures a run's snapshots (every `every` minutes, and the last) and writes
/// `measured.json` beside them.
fn measure(
    target: &Target,
    builds: &Builds,
    run: &fuzzers::Run,
    dir: &Path,
    every: u64,
    cpu: usize,
    fingerprint: &str,
) {
    let seeds = files_in(&dir.join("seeds"));
    let last = run.snapshots.last().map_or(0, |(m, _)| *m);
    let mut points = Vec::new();
    for (minute, snapshot) in &run.snapshots {
        if minute % every != 0 && *minute != last {
            continue;
        }
        let corpus = files_in(snapshot);
        let bytes: u64 = corpus
            .iter()
            .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
            .sum();
        let mut inputs = seeds.clone();
        inputs.extend(corpus.iter().cloned());
        let coverage =
            yardstick::measure(target, &builds.coverage, &inputs, &dir.join("scratch"), cpu);
        points.push(json!({
            "minute": minute,
            "branches": coverage.branches,
            "branches_total": coverage.branches_total,
            "lines": coverage.lines,
            "lines_total": coverage.lines_total,
            "regions": coverage.regions,
            "entries": corpus.len(),
            "bytes": bytes,
        }));
    }
    let _ = std::fs::remove_dir_all(dir.join("scratch"));
    let measured = json!({ "stats": run.stats, "points": points, "build": fingerprint });
    std::fs::write(
        dir.join("measured.json"),
        serde_json::to_vec_pretty(&measured).expect("json"),
    )
    .expect("measured.json");
}
