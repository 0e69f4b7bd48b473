//! The engine: LibAFL's parts put together into the labelfuzz loop, in one fuzzing process.
//!
//! The launch layer ([`crate::launch`]) starts the process under a supervisor that restarts it,
//! from the serialized state, whenever a signal or timeout ends it. The process starts from the
//! empty input (plus any seeds), then repeats: pick a label at random, take its best input, try
//! its expansions until one improves a label, shrinking every improvement.

use std::time::Duration;

use libafl::corpus::HasCurrentCorpusId;
use libafl::corpus::InMemoryCorpus;
use libafl::events::SendExiting;
use libafl::executors::hooks::inprocess::HasTimeout;
use libafl::executors::hooks::timer::TimerStruct;
use libafl::executors::{ExitKind, InProcessExecutor};
use libafl::inputs::BytesInput;
use libafl::mutators::{
    havoc_mutations, tokens_mutations, HavocScheduledMutator, MutatorsTuple, Tokens,
};
use libafl::stages::Stage;
use libafl::state::{HasCurrentStageId, HasMaxSize, StdState, Stoppable};
use libafl::{Error, Fuzzer, HasMetadata, StdFuzzer};
use libafl_bolts::rands::StdRand;
use libafl_bolts::tuples::{tuple_list, Handled, Merge, NamedTuple};

use crate::config::{Config, Mode, Switch};
use crate::consider::{Considerer, ObservedExecutor, Run, RunFuzzer};
use crate::crash::{run_catching_panics, CrashObserver};
use crate::error::LabelfuzzError;
use crate::feedback::{CrashLabelFeedback, LabelFeedback};
use crate::long_run::LongRunMutator;
use crate::mutators::DynMutator;
use crate::output::OutputDir;
use crate::report::{Client, Records, Reporter, Summary};
use crate::scheduler::LabelScheduler;
use crate::seen::{filter_for_fuzzing_process, KilledInputs};
use crate::side_labels::SideLabelsObserver;
use crate::stages::{
    finish_crash_shrinks, switch_on, CmpLogStage, CrashShrinkStage, ExpandStage, HavocStage,
    InputToStateReplace, PatternStage, ReportStage, StallSwitchStage,
};
use crate::start::StartInputs;
use crate::table::CorpusTable;

/// Havoc stacks at most 2^this mutations per mutant.
const HAVOC_STACK_POW: usize = 3;

/// How often `summary.json` and `corpus/` are rewritten.
const REPORT_EVERY: Duration = Duration::from_secs(2);

/// The fuzzer's LibAFL state.
pub(crate) type State =
    StdState<InMemoryCorpus<BytesInput>, BytesInput, StdRand, InMemoryCorpus<BytesInput>>;

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

/// LibAFL's havoc mutations, at most 8 stacked per mutant (LibAFL's default is 128, libFuzzer's
/// 5: deep stacks cost more than the execution on fast targets and mostly produce noise); with
/// tokens (the dictionary's and the program's), they go into the state and the token mutations
/// join; with `long_runs`, so does [`LongRunMutator`] (which writes nothing until it is on).
fn havoc_mutator(
    state: &mut State,
    token_lists: [&[Vec<u8>]; 2],
    long_runs: bool,
) -> DynMutator<BytesInput, State> {
    let with_tokens = token_lists.iter().any(|list| !list.is_empty());
    if with_tokens {
        let tokens = state.metadata_or_insert_with(Tokens::default);
        for token in token_lists.into_iter().flatten() {
            tokens.add_token(token);
        }
    }
    match (with_tokens, long_runs) {
        (false, false) => stacked(havoc_mutations()),
        (false, true) => stacked(havoc_mutations().merge(tuple_list!(LongRunMutator::default()))),
        (true, false) => stacked(havoc_mutations().merge(tokens_mutations())),
        (true, true) => stacked(
            havoc_mutations()
                .merge(tokens_mutations())
                .merge(tuple_list!(LongRunMutator::default())),
        ),
    }
}

/// `mutations` stacked up to [`HAVOC_STACK_POW`] deep, behind the one havoc mutator type.
fn stacked<MT>(mutations: MT) -> DynMutator<BytesInput, State>
where
    MT: MutatorsTuple<BytesInput, State> + NamedTuple + 'static,
{
    DynMutator(Box::new(HavocScheduledMutator::with_max_stack_pow(
        mutations,
        HAVOC_STACK_POW,
    )))
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

/// Builds LibAFL's parts around `manager`, runs the start inputs, and then, as the mode says,
/// stops, shrinks their crashes, or fuzzes until a limit.
fn fuzz_until_done<EM: ClientManager>(
    config: &Config,
    target: &mut dyn FnMut(&[u8]),
    out: &OutputDir,
    start: &StartInputs,
    restored: Option<State>,
    manager: &mut EM,
    client: Client,
) -> Result<Summary, LabelfuzzError> {
    let edges = unsafe { libafl_targets::std_edges_map_observer("edges") };
    let crash_observer = CrashObserver::new();
    let side_labels = SideLabelsObserver::new();
    let (edges_handle, crash_handle) = (edges.handle(), crash_observer.handle());

    let mut feedback = LabelFeedback::new(edges_handle.clone(), side_labels.handle());
    let mut objective = CrashLabelFeedback::new(crash_handle.clone(), out.clone());
    let mut state = fuzzing_state(config, start, restored, &mut feedback, &mut objective)?;
    let seen = filter_for_fuzzing_process(
        state
            .metadata::<KilledInputs>()
            .unwrap_or(&KilledInputs::default()),
    );
    let mut fuzzer = StdFuzzer::builder()
        .input_filter(seen)
        .scheduler(LabelScheduler::new(config.schedule).charging_exec_time(config.charge_exec_time))
        .feedback(feedback)
        .objective(objective)
        .build();

    let mut harness =
        |input: &BytesInput| -> ExitKind { run_catching_panics(target, input.as_ref()) };
    let mut executor = InProcessExecutor::builder()
        .harness(&mut harness)
        .observers(tuple_list!(edges, crash_observer, side_labels))
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
    prepare_fuzzing_process(config, out);

    let mut considerer = considerer_for(config, &crash_handle);
    let mut run = Run {
        fuzzer: &mut fuzzer,
        executor: &mut executor,
        state: &mut state,
        manager,
    };
    crate::start::run_start_inputs(config, start, client, out, &mut considerer, &mut run)?;
    if config.mode.only_runs_inputs() {
        if config.mode == Mode::Reduce && !run.state.stop_requested() {
            shrink_every_crash(considerer_for(config, &crash_handle), &mut run)?;
        }
        run.state.request_stop();
    }
    let reporter = reporter_for(config, out, client);
    let repair = config.cmplog > 0 && config.cmplog_repair;
    let havoc = HavocStage::new(
        considerer_for(config, &crash_handle),
        havoc_mutator(
            run.state,
            [&config.dictionary, &config.program_tokens],
            config.long_runs != Switch::Off,
        ),
        config.havoc,
        config.max_len,
    )
    .with_repair(repair);
    let cmplog = CmpLogStage::new(
        HavocStage::new(
            considerer_for(config, &crash_handle),
            InputToStateReplace::new(),
            config.cmplog,
            config.max_len,
        )
        // An input-to-state mutant writes a compared value, and breaks the entry's checksum.
        .with_repair(repair),
        config.cmplog_transforms,
    )
    .with_gates(repair)
    .with_colorization(config.cmplog_colorize.then(|| edges_handle.clone()));
    let mut expand = ExpandStage::new(considerer, config.max_len)
        .with_dictionary(&config.dictionary)
        .with_regular_runs(config.regular_runs)
        .with_repair(repair);
    if config.mode == Mode::Fuzz {
        reach_a_first_label(&mut expand, &config.limits, &mut run)?;
    }
    let mut stages = tuple_list!(
        CrashShrinkStage::new(considerer_for(config, &crash_handle)),
        PatternStage::new(
            considerer_for(config, &crash_handle),
            config.grammar.clone(),
            config.debug_form,
            crate::pattern::Settings::with_budget(config.pattern_budget),
            out.clone(),
            config.quiet,
        ),
        expand,
        havoc,
        cmplog,
        StallSwitchStage::new(config.cmp_progress, config.long_runs, out, config.quiet),
        ReportStage::new(reporter.clone(), config.limits.clone(), REPORT_EVERY)
    );
    fuzz_to_a_limit(&mut stages, &config.limits, &mut run)?;
    // A reproducer the run hands back is shrunk, unless the user asked it to end now.
    if config.mode == Mode::Fuzz && !crate::interrupt::requested() {
        finish_crash_shrinks(considerer_for(config, &crash_handle), &mut run)?;
    }
    reporter.finish(run.state)
}

/// Fuzzes one scheduled label after another until the run is stopped or past a limit.
fn fuzz_to_a_limit<ST, E, EM, Z>(
    stages: &mut ST,
    limits: &crate::config::Limits,
    run: &mut Run<'_, E, EM, State, Z>,
) -> Result<(), LabelfuzzError>
where
    Z: Fuzzer<E, EM, BytesInput, State, ST>,
{
    loop {
        // A target that crashes often restarts this process often: check the deadline at every
        // scheduling point, not only every few hundred executions.
        if run.state.stop_requested()
            || limits.past_deadline(run.state)
            || crate::interrupt::requested()
        {
            return Ok(());
        }
        match run
            .fuzzer
            .fuzz_one(stages, run.executor, run.state, run.manager)
        {
            Ok(_) => {}
            Err(Error::ShuttingDown) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
}

/// A considerer for one of the process's stages (each keeps its own scratch input).
fn considerer_for(
    config: &Config,
    crash: &libafl_bolts::tuples::Handle<CrashObserver>,
) -> Considerer {
    Considerer::new(crash.clone(), config.limits.clone())
        .with_grammar(config.grammar.clone())
        // Grammar inputs are choice sequences, not text: the grammar decides the bytes.
        .with_only_ascii(config.only_ascii && config.grammar.is_none())
        .with_shrink_budget(config.shrink_budget)
}

/// What reports this process's progress and writes the output directory's records.
fn reporter_for(config: &Config, out: &OutputDir, client: Client) -> Reporter {
    Reporter::new(out.clone(), config.quiet, client)
        .with_progress(config.progress)
        .keeping(Records {
            // A merge replays into the first corpus directory; other replays touch no corpus.
            corpus: !config.mode.only_runs_inputs() || config.corpus_mirror.is_some(),
            series: !config.mode.only_runs_inputs(),
        })
}

/// The fuzzing process's state: the restored one after a restart, a new one otherwise.
fn fuzzing_state(
    config: &Config,
    start: &StartInputs,
    restored: Option<State>,
    feedback: &mut LabelFeedback,
    objective: &mut CrashLabelFeedback,
) -> Result<State, LabelfuzzError> {
    let mut state: State = match restored {
        Some(mut state) => {
            // A candidate ended the last process (a crash or a timeout) in the middle of a
            // scheduled input's stages. LibAFL would resume that input; pick anew instead, or
            // an input whose expansions keep timing out holds the run for good (libpng: one
            // slow PNG kept a ten-minute run at 65 executions a second). Crash shrinks and
            // patterns keep their own progress in the state and resume at their stage.
            state.on_restart()?;
            state.clear_stage_id()?;
            state.clear_corpus_id()?;
            state
        }
        None => {
            let after_kill = start.after_kill.unwrap_or_default();
            let mut state = StdState::new(
                StdRand::with_seed(config.seed.wrapping_add(after_kill.kills)),
                InMemoryCorpus::new(),
                InMemoryCorpus::new(),
                feedback,
                objective,
            )?;
            *libafl::state::HasStartTime::start_time_mut(&mut state) =
                libafl_bolts::current_time().saturating_sub(after_kill.elapsed);
            *libafl::state::HasExecutions::executions_mut(&mut state) = after_kill.executions;
            state
        }
    };
    state.set_max_size(config.max_len);
    // Set once per run (a restarted process keeps the restored one).
    state.metadata_or_insert_with(|| start.series);
    Ok(state)
}

/// What the fuzzing process sets up around the target before its first execution: the memory
/// watcher, comparison labels, long runs, and closing the target's output.
fn prepare_fuzzing_process(config: &Config, out: &OutputDir) {
    crate::guards::install_in_fuzzing_process(config.rss_limit_mb, config.timeout);
    if config.value_profile {
        crate::value_profile::enable();
    }
    // After a stall, before the start inputs: a restarted process or a resumed run replays a
    // corpus that holds inputs kept for comparison progress alone.
    let stalled = out.edges_stalled();
    switch_on(
        config.cmp_progress.on_at_start(stalled),
        config.long_runs.on_at_start(stalled),
    );
    if let Err(e) = crate::console::close_target_output(config.close_fd_mask) {
        crate::say!("labelfuzz: warning: -close_fd_mask: the target's output stays open ({e})");
    }
    crate::console::keep_own_stderr();
    // Last: the descriptors and limits as the fuzzer wants them are what the target must keep.
    crate::interference::note_surroundings();
}

/// The `reduce` mode's work: only the crash shrinker, until every reproducer is at its fixpoint
/// (across restarts: the crash table says which are done).
fn shrink_every_crash<E, EM, Z>(
    considerer: Considerer,
    run: &mut Run<'_, E, EM, State, Z>,
) -> Result<(), LabelfuzzError>
where
    CrashShrinkStage: Stage<E, EM, State, Z>,
{
    CrashShrinkStage::new(considerer).perform(run.fuzzer, run.executor, run.state, run.manager)?;
    Ok(())
}

/// Expansion needs a label to start from. None means that every input so far failed before
/// reaching an edge, or was rejected by the harness. A failing empty input leaves nothing to do
/// (its crash is saved); a rejected one is expanded until some input shows a label. With no
/// label at all, the run stops.
fn reach_a_first_label<E, EM, Z>(
    expand: &mut ExpandStage,
    limits: &crate::config::Limits,
    run: &mut Run<'_, E, EM, State, Z>,
) -> Result<(), LabelfuzzError>
where
    E: ObservedExecutor,
    Z: RunFuzzer<E, EM, State>,
{
    let no_labels = |state: &State| {
        state
            .metadata::<CorpusTable>()
            .map_or(true, |t| t.label_count() == 0)
    };
    let empty_fails = run
        .state
        .metadata::<crate::crashes::CrashTable>()
        .is_ok_and(|crashes| crashes.records().any(|record| record.len == 0));
    let mut first_pass = true;
    while !empty_fails
        && no_labels(run.state)
        && !run.state.stop_requested()
        && !limits.past_deadline(run.state)
        && !crate::interrupt::requested()
    {
        expand.expand_empty(run, first_pass)?;
        first_pass = false;
    }
    if no_labels(run.state) {
        run.state.request_stop();
    }
    Ok(())
}
