//! `BENCH_ONLY=kill-trials` (`cargo make kill-trials`): random `kill -9`s of a two-core run, and
//! what they cost. Each trial resumes the same output directory with the `faults` target (it
//! panics, faults and hangs in many ways, so reproducers, the corpus and the summary are written
//! all the time), waits a random moment, notes every reproducer on disk, SIGKILLs one process
//! chosen at random (the launching process with the broker, a client's supervisor, a client,
//! or the whole process group), then lets the rest run a moment and kills what is left. A
//! reproducer is lost when its file is gone or holds anything but the same bytes or a simpler
//! reproducer; a corpus file is partial when it does not hold the input its name is the digest
//! of. A last run resumes from what the trials left and must leave no temporary file behind.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use labelfuzz::process::children;

use crate::targets::build_labelfuzz;
use crate::util::{env_secs, fresh_dir};

/// The process a trial kills.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Victim {
    Broker,
    Supervisor,
    Client,
    Everything,
}

impl Victim {
    /// How the report's table names it.
    fn describe(self) -> &'static str {
        match self {
            Victim::Broker => "the launching process (broker)",
            Victim::Supervisor => "a supervisor",
            Victim::Client => "a client",
            Victim::Everything => "every process",
        }
    }
}

const VICTIMS: [Victim; 4] = [
    Victim::Broker,
    Victim::Supervisor,
    Victim::Client,
    Victim::Everything,
];

/// The reproducers in `out/crashes`, by path (pattern and rendering files left out).
fn reproducers(out: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    std::fs::read_dir(out.join("crashes"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_none() && !path.to_string_lossy().contains(".tmp."))
        .filter_map(|path| Some((path.clone(), std::fs::read(&path).ok()?)))
        .collect()
}

fn kill(pid: i32, signal: i32) {
    // SAFETY: kill(2) on a process (or, negative, the process group) this driver started.
    unsafe { libc::kill(pid, signal) };
}

/// The `faults` fuzzer on two cores for at most `secs` seconds, quiet, on `out`.
fn two_core_run(fuzzer: &Path, out: &Path, secs: u64, seed: u64) -> Command {
    let mut command = Command::new(fuzzer);
    command
        .args(["-q", "--cores", "0-1", "--timeout", "200"])
        .args(["--max-time", &secs.to_string(), "--seed", &seed.to_string()])
        .arg("-o")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// A small deterministic generator (the trials are reproducible from `BENCH_SEED`).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// What the trials found.
#[derive(Default)]
struct Tally {
    kills: BTreeMap<Victim, usize>,
    reproducers_checked: usize,
    lost: Vec<String>,
    partial_corpus_files: usize,
    unreadable_summaries: usize,
}

/// Every corpus file holds the input its name is the digest of; returns how many do not.
fn partial_corpus_files(out: &Path) -> usize {
    std::fs::read_dir(out.join("corpus"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
        .filter(|entry| {
            let bytes = std::fs::read(entry.path()).unwrap_or_default();
            entry.file_name().to_string_lossy() != labelfuzz::labels::short_digest(&bytes)
        })
        .count()
}

/// Runs the trials (`BENCH_KILL_TRIALS`, default 100) and returns their table.
pub(crate) fn kill_trials(work: &Path) -> String {
    let trials = env_secs("BENCH_KILL_TRIALS", 100);
    let fuzzer = build_labelfuzz("faults", None);
    let out = fresh_dir(&work.join("kill-trials")).join("out");
    let mut random = Lcg(env_secs("BENCH_SEED", 1));
    let mut tally = Tally::default();
    for trial in 0..trials {
        let mut child = two_core_run(&fuzzer, &out, 60, trial)
            .process_group(0)
            .spawn()
            .expect("the fuzzer starts");
        let group = i32::try_from(child.id()).expect("pid fits");
        std::thread::sleep(Duration::from_millis(1_000 + random.below(5_000)));
        let before = reproducers(&out);
        let victim = VICTIMS[random.below(4) as usize];
        let supervisors = children(child.id());
        let pick = |list: &[u32], random: &mut Lcg| {
            list.get(random.below(list.len().max(1) as u64) as usize)
                .map(|&p| i32::try_from(p).expect("pid fits"))
        };
        let target = match victim {
            Victim::Broker => Some(group),
            Victim::Supervisor => pick(&supervisors, &mut random),
            Victim::Client => {
                let clients: Vec<u32> = supervisors.iter().flat_map(|&s| children(s)).collect();
                pick(&clients, &mut random)
            }
            Victim::Everything => Some(-group),
        };
        if let Some(pid) = target {
            kill(pid, libc::SIGKILL);
            *tally.kills.entry(victim).or_default() += 1;
        }
        // The rest of the run goes on for a moment (a killed client is started again), then
        // everything goes.
        std::thread::sleep(Duration::from_millis(500 + random.below(1_500)));
        kill(-group, libc::SIGKILL);
        let _ = child.wait();
        let started = Instant::now();
        while crate::scaling::group_rss(child.id()).2 > 0 && started.elapsed().as_secs() < 10 {
            std::thread::sleep(Duration::from_millis(50));
        }
        let after = reproducers(&out);
        for (path, bytes) in &before {
            tally.reproducers_checked += 1;
            let kept = after
                .get(path)
                .is_some_and(|now| now == bytes || labelfuzz::is_simpler(now, bytes));
            if !kept {
                tally
                    .lost
                    .push(format!("trial {trial}: {}", path.display()));
            }
        }
        tally.partial_corpus_files += partial_corpus_files(&out);
        let summary = out.join("summary.json");
        if summary.exists()
            && std::fs::read(&summary)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .is_none()
        {
            tally.unreadable_summaries += 1;
        }
        eprintln!(
            "kill-trials: {}/{trials} {victim:?}: {} reproducers, {} lost so far",
            trial + 1,
            before.len(),
            tally.lost.len()
        );
    }
    // A last run resumes from what the kills left and ends by itself.
    let last = two_core_run(&fuzzer, &out, 20, trials)
        .status()
        .expect("the last run starts");
    let leftovers = walk(&out)
        .into_iter()
        .filter(|path| path.to_string_lossy().contains(".tmp."))
        .count();
    report(trials, &tally, last.code(), leftovers)
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

fn report(trials: u64, tally: &Tally, last_status: Option<i32>, leftovers: usize) -> String {
    let mut t = format!(
        "Kill trials: {trials} random `kill -9`s of a two-core run of the `faults` target, each \
         trial resuming the same output directory.\n\n"
    );
    let _ = writeln!(t, "| killed | trials |\n|---|---:|");
    for (victim, count) in &tally.kills {
        let _ = writeln!(t, "| {} | {count} |", victim.describe());
    }
    let _ = writeln!(
        t,
        "\nReproducers on disk at the moments of the kills: {} (counted once per trial); lost: \
         {}. Corpus files not holding the input their name is the digest of: {}. Unreadable \
         summary.json after a trial: {}. The last run, resuming from what the trials left, \
         ended with status {} and left {leftovers} temporary files.",
        tally.reproducers_checked,
        tally.lost.len(),
        tally.partial_corpus_files,
        tally.unreadable_summaries,
        last_status.map_or_else(|| "none (killed)".to_string(), |c| c.to_string()),
    );
    for lost in &tally.lost {
        let _ = writeln!(t, "- lost: {lost}");
    }
    t
}
