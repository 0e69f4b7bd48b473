//! The engine: LibAFL's parts put together into the labelfuzz loop.
//!
//! The parent process only supervises: LibAFL's restarting event manager forks the fuzzing child
//! and starts a new one, from the serialized state, whenever a signal or timeout ends it. The
//! child starts from the empty input (plus any seeds), then repeats: pick a label at random, take
//! its best input, try its expansions until one improves a label, shrinking every improvement.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use libafl::corpus::InMemoryCorpus;
use libafl::events::{SendExiting, SimpleRestartingEventManager};
use libafl::executors::hooks::inprocess::HasTimeout;
use libafl::executors::hooks::timer::TimerStruct;
use libafl::executors::{ExitKind, InProcessExecutor};
use libafl::inputs::BytesInput;
use libafl::monitors::NopMonitor;
use libafl::mutators::{havoc_mutations, HavocScheduledMutator, I2SRandReplace};
use libafl::observers::HitcountsMapObserver;
use libafl::stages::Stage;
use libafl::state::{HasMaxSize, StdState, Stoppable};
use libafl::{Error, Evaluator, Fuzzer, HasMetadata, StdFuzzer};
use libafl_bolts::rands::StdRand;
use libafl_bolts::shmem::{ShMemProvider, StdShMemProvider};
use libafl_bolts::tuples::{tuple_list, Handled};

use crate::crash::{install_panic_hook, run_catching_panics, CrashObserver};
use crate::error::LabelfuzzError;
use crate::feedback::{CrashLabelFeedback, LabelFeedback};
use crate::grammar::GrammarInputs;
use crate::output::OutputDir;
use crate::report::{Reporter, Summary};
use crate::scheduler::LabelScheduler;
use crate::seen::{KilledInputs, SeenFilter};
use crate::stages::{
    CmpLogStage, Considerer, CrashShrinkStage, ExpandStage, HavocStage, Limits, ReportStage,
};
use crate::table::LabelTable;

/// The SanitizerCoverage edge map, with AFL hit-count classification.
pub type EdgesObserver =
    HitcountsMapObserver<libafl::observers::StdMapObserver<'static, u8, false>>;

/// Havoc stacks at most 2^this mutations per mutant.
const HAVOC_STACK_POW: usize = 3;

/// How often `summary.json` and `corpus/` are rewritten.
const REPORT_EVERY: Duration = Duration::from_secs(2);

/// Everything a run needs to know.
#[derive(Clone, Debug)]
pub struct Config {
    /// The output directory.
    pub output: PathBuf,
    /// Seed directories.
    pub corpus_dirs: Vec<PathBuf>,
    /// Random seed.
    pub seed: u64,
    /// Per-execution timeout.
    pub timeout: Duration,
    /// Longest input tried.
    pub max_len: usize,
    /// When the run ends.
    pub limits: Limits,
    /// Havoc mutants tried per scheduled input after its expansions (0: expand/shrink only).
    pub havoc: usize,
    /// Input-to-state (CmpLog) mutants tried per scheduled input after one traced run (0: off).
    pub cmplog: usize,
    /// Memory limit in MiB (0: none); a process over it while the target runs is an `oom` crash.
    pub rss_limit_mb: usize,
    /// Only run the seeds once each, record their labels and stop (no shrinking, no fuzzing).
    pub replay: bool,
    /// Only run the seeds and shrink the crashes they show to a fixpoint, then stop (no
    /// fuzzing): the `reduce` subcommand.
    pub reduce: bool,
    /// Start inputs given directly (after the empty input, before the seed directories).
    pub inputs: Vec<Vec<u8>>,
    /// Run one client per listed core, connected through an LLMP broker (None: one process).
    pub cores: Option<Vec<usize>>,
    /// The broker's TCP port in a multi-core run (None: a free port).
    pub broker_port: Option<u16>,
    /// A broker of another run to link this run's broker to (multi-machine runs).
    pub remote_broker: Option<crate::cores::RemoteBroker>,

    /// No progress line.
    pub quiet: bool,
    /// Grammar mode: inputs are choice bytes that this grammar renders into what the target
    /// sees; crash reproducers are shrunk with the grammar reducer and get their sentence
    /// written beside them.
    pub grammar: Option<Arc<GrammarInputs>>,
}

/// How many of the start inputs (the empty input, then the seeds) have been run.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct SeedProgress(usize);

libafl_bolts::impl_serdeany!(SeedProgress);

/// How a start input is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Start {
    /// Run and shrink it if it improves a label.
    Consider,
    /// Only run it, whatever the run limits: it restores what an earlier run in the same
    /// output directory found (its corpus holds the best input of every label already; a
    /// crash reproducer that was still being shrunk is finished by the crash-shrink stage).
    Run,
}

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

/// The fuzzer's LibAFL state.
pub(crate) type State =
    StdState<InMemoryCorpus<BytesInput>, BytesInput, StdRand, InMemoryCorpus<BytesInput>>;

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
    let out = OutputDir::create(&config.output)?.with_rendering(rendering);
    if instrumented_edges() == 0 {
        return Err(LabelfuzzError::NotInstrumented);
    }
    let seeds = read_seeds(&config.corpus_dirs, config.max_len)?;
    let previous = if config.replay || config.reduce {
        crate::output::PreviousRun::default()
    } else {
        out.previous_run(config.max_len)?
    };

    let start = StartInputs {
        given: config.inputs.clone(),
        previous,
        seeds,
    };

    crate::interrupt::install();
    // Before any fuzzing process forks: they inherit the table instead of reading it again
    // after every crash.
    crate::symbols::preload();
    match &config.cores {
        None => fuzz_in_one_process(config, target, &out, &start),
        Some(cores) => crate::cores::fuzz_on_cores(config, target, &out, &start, cores),
    }
}

/// The inputs a run starts from, read before any process forks (so that every restart of a
/// fuzzing process sees the same list).
#[derive(Debug, Default)]
pub(crate) struct StartInputs {
    given: Vec<Vec<u8>>,
    previous: crate::output::PreviousRun,
    seeds: Vec<Vec<u8>>,
}

/// One fuzzing process under a supervisor that restarts it after a crash.
fn fuzz_in_one_process(
    config: &Config,
    target: &mut dyn FnMut(&[u8]),
    out: &OutputDir,
    start: &StartInputs,
) -> Result<Outcome, LabelfuzzError> {
    let mut shmem_provider = StdShMemProvider::new()?;
    share_seen_filter();
    let (restored, manager) =
        match SimpleRestartingEventManager::launch(NopMonitor::new(), &mut shmem_provider, true) {
            Ok(launched) => launched,
            // We are the supervising parent and the fuzzing child has finished.
            Err(Error::ShuttingDown) => {
                if crate::interrupt::failed() {
                    return Err(LabelfuzzError::FuzzerFailed);
                }
                let summary = Summary::read(out)?;
                return Ok(Outcome {
                    summary,
                    supervisor: true,
                });
            }
            Err(e) => return Err(e.into()),
        };
    let summary = run_client(config, target, out, start, restored, manager, Client::ALONE)?;
    Ok(Outcome {
        summary,
        supervisor: false,
    })
}

/// Shares the "already run" filter between this supervisor and the fuzzing processes it
/// starts (a failure only costs speed: each process then keeps its own).
pub(crate) fn share_seen_filter() {
    if let Err(e) = crate::seen::share_across_restarts() {
        eprintln!("labelfuzz: warning: the filter of inputs already run is not shared across restarts: {e}");
    }
}

/// Which client of a multi-core run this process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Client {
    /// 1-based index among the clients.
    pub index: usize,
    /// How many clients the run has.
    pub count: usize,
}

impl Client {
    /// The only client of a single-process run.
    pub const ALONE: Client = Client { index: 1, count: 1 };

    /// The first client runs the start inputs (seeds, an earlier run's corpus) and owns
    /// `corpus/`; the others receive what it finds through the broker.
    #[must_use]
    pub fn is_first(self) -> bool {
        self.index == 1
    }
}

/// The events a fuzzing process's manager handles.
pub(crate) trait ClientManager:
    libafl::events::EventFirer<BytesInput, State>
    + libafl::events::EventRestarter<State>
    + libafl::events::ProgressReporter<State>
    + libafl::events::EventReceiver<BytesInput, State>
    + SendExiting
{
}

impl<EM> ClientManager for EM where
    EM: libafl::events::EventFirer<BytesInput, State>
        + libafl::events::EventRestarter<State>
        + libafl::events::ProgressReporter<State>
        + libafl::events::EventReceiver<BytesInput, State>
        + SendExiting
{
}

/// The fuzzing process: fuzzes until a limit, then tells its supervisor the run is over. Also
/// after an error: a supervisor not told restarts its client, and an error stops (and fails)
/// every process of the run.
pub(crate) fn run_client<EM: ClientManager>(
    config: &Config,
    target: &mut dyn FnMut(&[u8]),
    out: &OutputDir,
    start: &StartInputs,
    restored: Option<State>,
    mut manager: EM,
    client: Client,
) -> Result<Summary, LabelfuzzError> {
    let result = fuzz_until_done(config, target, out, start, restored, &mut manager, client);
    if result.is_err() {
        crate::interrupt::mark_failed();
    }
    let exited = manager.send_exiting();
    let summary = result?;
    exited?;
    Ok(summary)
}

/// Builds LibAFL's parts around `manager` and runs the loop until a limit.
fn fuzz_until_done<EM: ClientManager>(
    config: &Config,
    target: &mut dyn FnMut(&[u8]),
    out: &OutputDir,
    start: &StartInputs,
    restored: Option<State>,
    manager: &mut EM,
    client: Client,
) -> Result<Summary, LabelfuzzError> {
    let edges =
        HitcountsMapObserver::new(unsafe { libafl_targets::std_edges_map_observer("edges") });
    let crash_observer = CrashObserver::new();
    let (edges_handle, crash_handle) = (edges.handle(), crash_observer.handle());

    let mut feedback = LabelFeedback::new(edges_handle);
    let mut objective = CrashLabelFeedback::new(crash_handle.clone(), out.clone());
    let mut state: State = match restored {
        Some(state) => state,
        None => StdState::new(
            StdRand::with_seed(config.seed),
            InMemoryCorpus::new(),
            InMemoryCorpus::new(),
            &mut feedback,
            &mut objective,
        )?,
    };
    state.set_max_size(config.max_len);
    let mut seen = SeenFilter::for_fuzzing_process();
    if let Ok(killed) = state.metadata::<KilledInputs>() {
        for hash in killed.hashes() {
            seen.pin(hash);
        }
    }
    let mut fuzzer = StdFuzzer::builder()
        .input_filter(seen)
        .scheduler(LabelScheduler::new())
        .feedback(feedback)
        .objective(objective)
        .build();

    let mut harness =
        |input: &BytesInput| -> ExitKind { run_catching_panics(target, input.as_ref()) };
    let mut executor = InProcessExecutor::builder()
        .harness(&mut harness)
        .observers(tuple_list!(edges, crash_observer))
        .timeout(config.timeout)
        // LibAFL's crash dump symbolizes a backtrace on every crash (100+ ms in a large
        // binary); the crash table names a site once, when its label is new.
        .crashdump(false)
        .fuzzer(&mut fuzzer)
        .state(&mut state)
        .event_mgr(manager)
        .build()?;
    // Arm the timeout timer once for many executions instead of twice per execution: the
    // re-arming syscalls cost more than a fast target itself.
    *executor.hooks_mut().0.timer_mut() = TimerStruct::batch_mode(config.timeout);
    install_panic_hook();
    crate::signals::install();
    crate::crash::install_exit_guard();
    crate::memory::start_watch(config.rss_limit_mb);
    crate::interrupt::install_in_fuzzer();

    let considerer_for = |crash: &libafl_bolts::tuples::Handle<CrashObserver>| {
        Considerer::new(crash.clone(), config.limits.clone()).with_grammar(config.grammar.clone())
    };
    let mut considerer = considerer_for(&crash_handle);
    // The empty input first, then the inputs given, what an earlier run in this output
    // directory left, and the seeds. The cursor lives in the state and moves before each input
    // runs, so an input that kills the process is not run again after the restart.
    let empty = crate::output::PreviousRun::default();
    let (given, previous, seeds): (&[Vec<u8>], _, &[Vec<u8>]) = if client.is_first() {
        (&start.given, &start.previous, &start.seeds)
    } else {
        (&[], &empty, &[])
    };
    let (resumed_crashes, resumed_corpus) = (previous.crashes.len(), previous.corpus.len());
    if !previous.corpus.is_empty() && !config.quiet {
        eprintln!(
            "labelfuzz: resuming from {}: {resumed_corpus} corpus inputs, {resumed_crashes} crash reproducers",
            out.root().display()
        );
    }
    let start_inputs = std::iter::once((Vec::new(), Start::Consider))
        .chain(given.iter().map(|i| (i.clone(), Start::Consider)))
        .chain(previous.crashes.iter().map(|i| (i.clone(), Start::Run)))
        .chain(previous.corpus.iter().map(|i| (i.clone(), Start::Run)))
        .chain(seeds.iter().map(|i| (i.clone(), Start::Consider)));
    for (index, (input, how)) in start_inputs.enumerate() {
        let progress = state.metadata_or_insert_with(|| SeedProgress(0));
        if index < progress.0 {
            continue;
        }
        progress.0 = index + 1;
        if config.replay || how == Start::Run {
            fuzzer.evaluate_input(&mut state, &mut executor, manager, &BytesInput::new(input))?;
        } else {
            considerer.consider(
                &mut fuzzer,
                &mut executor,
                &mut state,
                manager,
                &input,
                false,
            )?;
        }
    }
    if config.replay {
        state.request_stop();
    }
    if config.reduce && !state.stop_requested() {
        // Only the crash shrinker, until every reproducer is at its fixpoint (across restarts:
        // the crash table says which are done).
        CrashShrinkStage::new(considerer_for(&crash_handle)).perform(
            &mut fuzzer,
            &mut executor,
            &mut state,
            manager,
        )?;
        state.request_stop();
    }

    let reporter = Reporter::new(out.clone(), config.quiet, client);
    let havoc = HavocStage::new(
        considerer_for(&crash_handle),
        // At most 8 stacked mutations per mutant (LibAFL's default is 128, libFuzzer's 5): deep
        // stacks cost more than the execution on fast targets and mostly produce noise.
        HavocScheduledMutator::with_max_stack_pow(havoc_mutations(), HAVOC_STACK_POW),
        config.havoc,
        config.max_len,
    );
    let cmplog = CmpLogStage::new(HavocStage::new(
        considerer_for(&crash_handle),
        I2SRandReplace::new(),
        config.cmplog,
        config.max_len,
    ));
    let mut stages = tuple_list!(
        CrashShrinkStage::new(considerer_for(&crash_handle)),
        ExpandStage::new(considerer, config.max_len),
        havoc,
        cmplog,
        ReportStage::new(reporter.clone(), config.limits.clone(), REPORT_EVERY)
    );
    // Expansion needs a label to start from. None can only mean that every input so far failed
    // before reaching an edge (the empty input crashes): the crash is saved, nothing is left to do.
    let no_labels = state
        .metadata::<LabelTable>()
        .map_or(true, |t| t.label_count() == 0);
    if no_labels {
        state.request_stop();
    }
    loop {
        // A target that crashes often restarts this process often: check the deadline at every
        // scheduling point, not only every few hundred executions.
        if state.stop_requested()
            || config.limits.past_deadline(&state)
            || crate::interrupt::requested()
        {
            break;
        }
        match fuzzer.fuzz_one(&mut stages, &mut executor, &mut state, manager) {
            Ok(_) => {}
            Err(Error::ShuttingDown) => break,
            Err(e) => return Err(e.into()),
        }
    }
    reporter.report(&state)
}
