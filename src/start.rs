//! The inputs a run starts from: the empty input, the inputs given, what an earlier run in the
//! same output directory left, the seeds; and, after a kill, what the killed process had done.

use std::time::Duration;

use libafl::inputs::BytesInput;
use libafl::HasMetadata;

use crate::config::{Config, Mode};
use crate::consider::{Considerer, ObservedExecutor, Run, RunFuzzer};
use crate::engine::State;
use crate::error::LabelfuzzError;
use crate::output::OutputDir;
use crate::report::Client;

/// The start inputs of this process's state (the empty input, the inputs given, what an
/// earlier run left, the seeds) and how many have been run. State metadata: a start input that
/// crashes or times out ends the process, and the next one must go on with the same list, also
/// when the list was read again after a kill (read in that process, it exists nowhere else; a
/// restart that went back to the run's first list left the corpus of a killed libpng run
/// unrun, and the corpus directory then followed the nearly empty table). Emptied once run.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct StartQueue {
    inputs: Vec<(Vec<u8>, Start)>,
    next: usize,
}

libafl_bolts::impl_serdeany!(StartQueue);

/// How a start input is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Start {
    /// Run and shrink it if it improves a label.
    Consider,
    /// Only run it, whatever the run limits: it restores what an earlier run in the same
    /// output directory found (its corpus holds the best input of every label already; a
    /// crash reproducer that was still being shrunk is finished by the crash-shrink stage).
    Run,
}

/// The inputs a run starts from, read before any process forks (so that every restart of a
/// fuzzing process sees the same list).
#[derive(Debug, Default)]
pub(crate) struct StartInputs {
    /// Inputs given directly, run first after the empty input.
    pub(crate) given: Vec<Vec<u8>>,
    /// What an earlier run in the same output directory left.
    pub(crate) previous: crate::output::PreviousRun,
    /// The seed files' contents.
    pub(crate) seeds: Vec<Vec<u8>>,
    /// Where an earlier run's time series in the same output directory ended.
    pub(crate) series: crate::stats::SeriesOffset,
    /// Read again after a fuzzing process was killed without saving its state: every client
    /// then starts from them, not only the first, with what the killed process had done.
    pub(crate) after_kill: Option<AfterKill>,
}

/// What a fuzzing process killed without saving its state had done, from its last summary: the
/// next one goes on from there (its deadline, executions and time series do not start over)
/// with a random sequence of its own (the same seed would repeat the killed one's choices).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AfterKill {
    /// How many processes of this client were killed so far.
    pub(crate) kills: u64,
    /// The killed process's run time, as of its last summary.
    pub(crate) elapsed: Duration,
    /// Its executions, as of its last summary.
    pub(crate) executions: u64,
}

/// The inputs this process starts from, in order: the empty input first (unless the run only
/// runs what it was given), then the inputs given, what an earlier run in this output directory
/// left, and the seeds. Only the first client of a multi-core run reads them; the others get
/// them from it.
fn start_inputs(
    config: &Config,
    start: &StartInputs,
    client: Client,
    out: &OutputDir,
) -> Vec<(Vec<u8>, Start)> {
    let nothing = StartInputs::default();
    let start = if client.is_first() || start.after_kill.is_some() {
        start
    } else {
        &nothing
    };
    let previous = &start.previous;
    if !previous.corpus.is_empty() && !config.quiet {
        crate::say!(
            "labelfuzz: resuming from {}: {} corpus inputs, {} crash reproducers",
            out.root().display(),
            previous.corpus.len(),
            previous.crashes.len()
        );
    }
    let consider = |input: &Vec<u8>| (input.clone(), Start::Consider);
    let restore = |input: &Vec<u8>| (input.clone(), Start::Run);
    std::iter::once((Vec::new(), Start::Consider))
        .filter(|_| config.mode != Mode::Replay)
        .chain(start.given.iter().map(consider))
        .chain(previous.crashes.iter().map(restore))
        .chain(previous.corpus.iter().map(restore))
        .chain(start.seeds.iter().map(consider))
        .collect()
}

/// Runs the state's start inputs ([`StartQueue`], made from `start` when the state has none
/// yet). The cursor moves before each input runs, so an input that kills the process is not run
/// again after the restart.
pub(crate) fn run_start_inputs<E, EM, Z>(
    config: &Config,
    start: &StartInputs,
    client: Client,
    out: &OutputDir,
    considerer: &mut Considerer,
    run: &mut Run<'_, E, EM, State, Z>,
) -> Result<(), LabelfuzzError>
where
    E: ObservedExecutor,
    Z: RunFuzzer<E, EM, State>,
{
    if !run.state.has_metadata::<StartQueue>() {
        let inputs = start_inputs(config, start, client, out);
        run.state.add_metadata(StartQueue { inputs, next: 0 });
    }
    let mode = config.mode;
    loop {
        let queue = run.state.metadata_mut::<StartQueue>()?;
        let Some((input, how)) = queue
            .inputs
            .get_mut(queue.next)
            .map(|(input, how)| (std::mem::take(input), *how))
        else {
            // Run: the list's memory goes, the (empty) queue stays as the mark that it was.
            *queue = StartQueue::default();
            break;
        };
        queue.next += 1;
        if mode == Mode::Replay || how == Start::Run {
            let input = BytesInput::new(input);
            run.fuzzer
                .evaluate_input(run.state, run.executor, run.manager, &input)?;
        } else {
            considerer.consider(run, &input, false)?;
        }
    }
    Ok(())
}
