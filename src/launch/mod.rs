//! The launch layer: turns a [`Config`] into processes. One fuzzing process under a restarting
//! supervisor (`fuzz_in_one_process`), or one per core under LibAFL's `Launcher` with an LLMP
//! broker ([`cores`]), optionally linked to other machines' brokers (`link`). Each fuzzing
//! process runs the engine (`engine::run_client`), which knows nothing of cores.

pub mod cores;
pub(crate) mod link;
pub(crate) mod respawn;

use std::path::PathBuf;
use std::sync::Arc;

use libafl::events::SimpleRestartingEventManager;
use libafl::monitors::NopMonitor;
use libafl::Error;
use libafl_bolts::shmem::{ShMemProvider, StdShMemProvider};

use crate::config::{Config, Mode};
use crate::engine::run_client;
use crate::error::LabelfuzzError;
use crate::output::OutputDir;
use crate::report::{Client, Summary};
use crate::start::{AfterKill, StartInputs};

/// What a finished run found.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The final summary.
    pub summary: Summary,
    /// True in the supervising process (which returns last, after the fuzzing process).
    pub supervisor: bool,
}

impl Outcome {
    /// True when any crash label was found.
    #[must_use]
    pub fn found_crashes(&self) -> bool {
        !self.summary.crashes.is_empty()
    }
}

/// Reads every seed file in `dirs` (a path that is a file is one seed; a directory is read with
/// [`crate::output::read_inputs`]).
fn read_seeds(dirs: &[PathBuf], max_len: usize) -> Result<Vec<Vec<u8>>, LabelfuzzError> {
    let mut seeds = Vec::new();
    for dir in dirs {
        if dir.is_file() {
            // A single input named on the command line, as libFuzzer accepts.
            let bytes =
                std::fs::read(dir).map_err(|e| LabelfuzzError::io("read input file", dir, e))?;
            seeds.push(bytes);
            continue;
        }
        seeds.extend(crate::output::read_inputs(dir, max_len)?);
    }
    Ok(seeds)
}

/// The number of SanitizerCoverage edges registered by the instrumented code in this process.
#[must_use]
pub fn instrumented_edges() -> usize {
    // SAFETY: written only by the sancov init callbacks, which run before `main`.
    unsafe { libafl_targets::MAX_EDGES_FOUND }
}

/// Fuzzes `target` as `config` says; returns when a limit is reached.
///
/// The target is taken as a trait object on purpose: were the engine generic over it, all of
/// LibAFL would be monomorphized into the (instrumented) target crate and its own edges would
/// drown the target's.
pub fn fuzz(config: &Config, target: &mut dyn FnMut(&[u8])) -> Result<Outcome, LabelfuzzError> {
    match &config.grammar {
        None => fuzz_bytes(config, target),
        Some(grammar) => {
            let grammar = Arc::clone(grammar);
            fuzz_bytes(config, &mut |choices: &[u8]| {
                target(&grammar.render(choices))
            })
        }
    }
}

/// [`fuzz`] on the bytes the engine carries (choice bytes in grammar mode).
fn fuzz_bytes(config: &Config, target: &mut dyn FnMut(&[u8])) -> Result<Outcome, LabelfuzzError> {
    let rendering = config.grammar.clone().map(|grammar| {
        crate::output::Rendering(Arc::new(move |bytes: &[u8]| grammar.render(bytes)))
    });
    let writes = !config.mode.only_runs_inputs();
    if writes && config.fresh && config.output.is_dir() {
        // Refused before the earlier run's directory is moved aside under a running one.
        drop(crate::output::RunLock::acquire(&config.output)?);
    }
    if config.fresh && config.output.exists() {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut aside = config.output.clone().into_os_string();
        aside.push(format!(".previous-{stamp}"));
        std::fs::rename(&config.output, &aside)
            .map_err(|e| LabelfuzzError::io("move aside", &config.output, e))?;
        eprintln!(
            "labelfuzz: --fresh: the earlier run is kept in {}",
            std::path::Path::new(&aside).display()
        );
    }
    let out = OutputDir::create(&config.output)?
        .with_rendering(rendering)
        .with_artifacts(config.artifacts.clone())
        .with_corpus_mirror(config.corpus_mirror.clone());
    // Held until the run ends; every fuzzing process of the run inherits it.
    let _lock = if writes {
        Some(crate::output::RunLock::acquire(&config.output)?)
    } else {
        None
    };
    // A replay only runs inputs: a coverage build (no SanitizerCoverage) replays too.
    if instrumented_edges() == 0 && config.mode != Mode::Replay {
        return Err(LabelfuzzError::NotInstrumented);
    }
    let seeds = read_seeds(&config.corpus_dirs, config.max_len)?;
    let previous = if config.mode.only_runs_inputs() {
        crate::output::PreviousRun::default()
    } else {
        out.previous_run(config.max_len)?
    };

    let series = if config.mode.only_runs_inputs() {
        crate::stats::SeriesOffset::default()
    } else {
        crate::stats::offset_of(&out)
    };
    let start = StartInputs {
        given: config.inputs.clone(),
        previous,
        seeds,
        series,
        after_kill: None,
    };

    crate::interrupt::install();
    crate::interference::share_reports();
    // Before any fuzzing process forks: they inherit the table instead of reading it again
    // after every crash.
    crate::symbols::preload();
    match &config.cores {
        None => fuzz_in_one_process(config, target, &out, &start),
        Some(cores) => cores::fuzz_on_cores(config, target, &out, &start, cores),
    }
}

/// One fuzzing process under a supervisor that restarts it after a crash.
pub(crate) fn fuzz_in_one_process(
    config: &Config,
    target: &mut dyn FnMut(&[u8]),
    out: &OutputDir,
    start: &StartInputs,
) -> Result<Outcome, LabelfuzzError> {
    let mut shmem_provider = StdShMemProvider::new()?;
    share_seen_filter();
    respawn::share_start_count();
    let supervisor = std::process::id();
    let (restored, manager) =
        match SimpleRestartingEventManager::launch(NopMonitor::new(), &mut shmem_provider, true) {
            Ok(launched) => launched,
            // We are the supervising parent and the fuzzing child has finished.
            Err(Error::ShuttingDown) => {
                if crate::interrupt::failed() {
                    return Err(LabelfuzzError::FuzzerFailed);
                }
                let summary = crate::report::summary::read(out)?;
                return Ok(Outcome {
                    summary,
                    supervisor: true,
                });
            }
            // In the fuzzing process (the state it was handed could not be restored, say): an
            // error exit would only make the supervisor start it again, forever. Fail the run.
            Err(e) if std::process::id() != supervisor => {
                crate::interrupt::mark_failed();
                crate::say!("labelfuzz: error: {}", LabelfuzzError::from(e));
                std::process::exit(libafl_bolts::os::CTRL_C_EXIT);
            }
            Err(e) => return Err(e.into()),
        };
    die_with_supervisor();
    let mut manager = manager;
    let restarted = start_after_kill(
        config,
        out,
        start,
        Client::ALONE,
        restored.is_some(),
        &mut manager,
    )?;
    let start = restarted.as_ref().unwrap_or(start);
    let summary = run_client(config, target, out, start, restored, manager, Client::ALONE)?;
    Ok(Outcome {
        summary,
        supervisor: false,
    })
}

/// In a fuzzing process that has just taken over its state: leaves the fresh-start record
/// (see [`respawn`]), and when its predecessor was killed without saving any state, returns the
/// start inputs read again from the output directory.
///
/// # Errors
/// When the record cannot be written, the output directory cannot be read, or processes were
/// killed on start too often ([`respawn::MOST_KILLED_STARTS`]).
pub(crate) fn start_after_kill(
    config: &Config,
    out: &OutputDir,
    start: &StartInputs,
    client: Client,
    restored: bool,
    manager: &mut (impl respawn::LeaveFreshStart + libafl::events::SendExiting),
) -> Result<Option<StartInputs>, LabelfuzzError> {
    let this_start = respawn::this_start(restored);
    manager.leave_fresh_start()?;
    let respawn::Start::AfterKill(kills) = this_start else {
        return Ok(None);
    };
    if kills > respawn::MOST_KILLED_STARTS {
        crate::interrupt::mark_failed();
        // Told, the supervisor ends instead of starting yet another process.
        let _ = manager.send_exiting();
        return Err(LabelfuzzError::Usage(format!(
            "the fuzzing process was killed {kills} times without saving its state (SIGKILL, or \
             the kernel's out-of-memory killer: see `dmesg`); stopping. Lower -rss_limit_mb \
             below the memory this machine has, or give the run more"
        )));
    }
    crate::say!(
        "labelfuzz: the fuzzing process was killed without saving its state (SIGKILL, or the \
         kernel's out-of-memory killer); a new one starts from {}",
        out.root().display()
    );
    Ok(Some(StartInputs {
        given: start.given.clone(),
        previous: if config.mode.only_runs_inputs() {
            start.previous.clone()
        } else {
            out.previous_run(config.max_len)?
        },
        seeds: start.seeds.clone(),
        series: start.series,
        after_kill: Some(killed_process(out, client, kills)),
    }))
}

/// What the killed predecessor of `client` had done, from the last summary it wrote (its own,
/// `clients/<n>.json`, in a multi-core run).
fn killed_process(out: &OutputDir, client: Client, kills: u64) -> AfterKill {
    let own = crate::report::summary::read_own(out, client).unwrap_or_default();
    AfterKill {
        kills,
        elapsed: std::time::Duration::from_secs_f64(own.elapsed_secs.max(0.0)),
        executions: own.executions,
    }
}

/// Asks the kernel to stop this fuzzing process (SIGTERM: a clean stop with its summary) when
/// the supervisor that started it dies, so that a supervisor killed by a script or a benchmark
/// never leaves an orphan fuzzing on in the background.
pub(crate) fn die_with_supervisor() {
    // SAFETY: getppid and prctl(PR_SET_PDEATHSIG) have no memory-safety preconditions.
    unsafe {
        let supervisor = libc::getppid();
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
        // The supervisor may have died before the request: then nothing would ever send it.
        if libc::getppid() != supervisor {
            libc::raise(libc::SIGTERM);
        }
    }
}

/// Shares the "already run" filter between this supervisor and the fuzzing processes it
/// starts (a failure only costs speed: each process then keeps its own).
pub(crate) fn share_seen_filter() {
    if let Err(e) = crate::seen::share_across_restarts() {
        eprintln!("labelfuzz: warning: the filter of inputs already run is not shared across restarts: {e}");
    }
}
