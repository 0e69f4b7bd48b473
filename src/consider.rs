//! Consider, on LibAFL: [`Considerer`] runs the core's [`labelfuzz_core::consider`] (run an
//! input; if it improves any label, shrink it at once) with LibAFL's evaluation as the oracle.
//! LibAFL's feedbacks say what improved; the crash table names crash labels and records which
//! reproducers reached their fixpoint; candidates that ended a process before are skipped, and
//! slow crashes are shrunk within their time budget. While a stage has it watch gates (an
//! entry's checksums, [`crate::gates`]), every run reads their comparisons, and an input that
//! failed one is repaired: a mutant, and each shrink candidate, as the core's oracle allows.

use std::sync::Arc;

use labelfuzz_core::consider::{self as core, CrashShrinker, Oracle, Outcome};
use libafl::executors::HasObservers;
use libafl::inputs::BytesInput;
use libafl::state::{HasCurrentTestcase, HasExecutions, HasRand, HasStartTime, Stoppable};
use libafl::{Error, Evaluator, ExecuteInputResult, HasMetadata};
use libafl_bolts::tuples::{Handle, MatchName, MatchNameRef};

use crate::config::Limits;
use crate::crash::CrashObserver;
use crate::crashes::CrashTable;
use crate::gates::{Gate, Gates, WatchedGates};
use crate::grammar::GrammarInputs;
use crate::labels::Label;
use crate::seen::{input_hash, KilledInputs};
use crate::shrink_budget::CoverageShrinkClock;
use crate::shrink_budget::SlowShrinkBudget;
use labelfuzz_runtime::gate_watch::{self, WATCHED_SITES};

/// Runs inputs and shrinks every improvement (the `consider` of the original algorithm).
#[derive(Debug)]
pub struct Considerer {
    crash: Handle<CrashObserver>,
    limits: Limits,
    scratch: BytesInput,
    /// In grammar mode, crash reproducers are shrunk with the grammar's reducer.
    grammar: Option<Arc<GrammarInputs>>,
    /// Every considered input is first mapped to printable ASCII (`-only_ascii=1`).
    only_ascii: bool,
    /// The gates watched in every run (see [`Considerer::watch_gates`]).
    gates: Vec<Gate>,
    /// Their comparison sites, in the same order.
    gate_sites: Vec<usize>,
    /// What each gate's comparison compared in the last run (`None`: not reached).
    readings: [Option<(u64, u64)>; WATCHED_SITES],
    /// Whether coverage shrinks end at a deadline (`--shrink-budget 1`).
    shrink_budget: bool,
    /// The clock of the coverage shrink under way, under `shrink_budget`.
    coverage_shrink: Option<CoverageShrinkClock>,
}

/// Maps `bytes` to printable ASCII and whitespace as libFuzzer's `-only_ascii=1` does: the top
/// bit is dropped, and a control character other than whitespace becomes a space.
#[must_use]
pub fn to_ascii(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .map(|&b| {
            let b = b & 0x7f;
            if is_ascii_input_byte(b) {
                b
            } else {
                b' '
            }
        })
        .collect()
}

/// Whether `b` may appear in an `-only_ascii` input.
fn is_ascii_input_byte(b: u8) -> bool {
    b.is_ascii_graphic() || b == b' ' || (b'\t'..=b'\r').contains(&b)
}

impl Considerer {
    /// A considerer that names crashes with the observer `crash` and stops at `limits`.
    #[must_use]
    pub fn new(crash: Handle<CrashObserver>, limits: Limits) -> Self {
        Considerer {
            crash,
            limits,
            scratch: BytesInput::new(Vec::new()),
            grammar: None,
            only_ascii: false,
            gates: Vec::new(),
            gate_sites: Vec::new(),
            readings: [None; WATCHED_SITES],
            shrink_budget: false,
            coverage_shrink: None,
        }
    }

    /// Stops at `limits` instead of the ones it was made with.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Ends each coverage shrink of slow executions at its time, keeping what it reached
    /// (`--shrink-budget 1`, [`crate::shrink_budget`]): on a target with slow inputs, one
    /// input's shrink can otherwise hold the run for minutes.
    #[must_use]
    pub fn with_shrink_budget(mut self, shrink_budget: bool) -> Self {
        self.shrink_budget = shrink_budget;
        self
    }

    /// Watches `gates` (the scheduled entry's checksums and lengths) in every run from now on,
    /// and repairs each input that failed one (empty: none). Not in grammar mode, whose
    /// inputs are choices, not the bytes the program checks. The gates are noted in the state,
    /// for a crash found meanwhile to keep ([`WatchedGates`]).
    pub fn watch_gates<S: HasMetadata>(&mut self, state: &mut S, gates: &[Gate]) {
        self.gates.clear();
        if self.grammar.is_none() {
            self.gates
                .extend_from_slice(&gates[..gates.len().min(WATCHED_SITES)]);
        }
        self.note_watched_gates(state);
    }

    /// Watches the gates of the scheduled entry (those its traced run found, [`Gates`]) when
    /// `repair`, else none: what a stage trying the entry's mutants or expansions calls first.
    ///
    /// # Errors
    /// When the state has no scheduled entry.
    pub fn watch_scheduled_gates<S>(&mut self, state: &mut S, repair: bool) -> Result<(), Error>
    where
        S: HasCurrentTestcase<BytesInput> + HasMetadata,
    {
        self.gates.clear();
        if repair && self.grammar.is_none() {
            if let Ok(gates) = state.current_testcase()?.metadata::<Gates>() {
                let gates = &gates.0;
                self.gates
                    .extend_from_slice(&gates[..gates.len().min(WATCHED_SITES)]);
            }
        }
        self.note_watched_gates(state);
        Ok(())
    }

    /// After `self.gates` changed: the sites to watch, no readings yet, the state's note.
    fn note_watched_gates<S: HasMetadata>(&mut self, state: &mut S) {
        self.gate_sites.clear();
        self.gate_sites.extend(self.gates.iter().map(|g| g.site));
        self.readings = [None; WATCHED_SITES];
        let watched = state.metadata_or_insert_with(WatchedGates::default);
        watched.0.clone_from(&self.gates);
    }

    /// When this considerer's run limits last read the clock (about every 10 ms while it
    /// runs inputs): a stage can time itself without reading the clock per candidate.
    #[must_use]
    pub fn last_clock_reading(&self) -> Option<std::time::Instant> {
        self.limits.last_clock_reading()
    }

    /// Maps every input to printable ASCII before it runs (`-only_ascii=1`).
    #[must_use]
    pub fn with_only_ascii(mut self, only_ascii: bool) -> Self {
        self.only_ascii = only_ascii;
        self
    }

    /// Shrinks crash reproducers as choice sequences of `grammar` (grammar mode).
    #[must_use]
    pub fn with_grammar(mut self, grammar: Option<Arc<GrammarInputs>>) -> Self {
        self.grammar = grammar;
        self
    }

    /// The core's oracle over `run`.
    fn oracle<'c, 'r, 'a, E, EM, S, Z>(
        &'c mut self,
        run: &'r mut Run<'a, E, EM, S, Z>,
    ) -> LibaflOracle<'c, 'r, 'a, E, EM, S, Z> {
        LibaflOracle {
            considerer: self,
            run,
        }
    }

    /// Runs `bytes` once, unfiltered, as it is (a variant of a crash reproducer: what it
    /// shows is read from [`crate::crashes::LastCrash`]). False when the run is over.
    ///
    /// # Errors
    /// LibAFL's, from running the target.
    pub fn probe<E, EM, S, Z>(
        &mut self,
        run: &mut Run<'_, E, EM, S, Z>,
        bytes: &[u8],
    ) -> Result<bool, Error>
    where
        E: ObservedExecutor,
        S: RunState,
        Z: RunFuzzer<E, EM, S>,
    {
        Ok(self.oracle(run).run(bytes, false)? != Outcome::Stop)
    }

    /// Runs `bytes`; if it improves any label, shrinks it at once. True when it improved one.
    /// Inputs already run are skipped, unless `fresh` says `bytes` cannot have run before.
    ///
    /// # Errors
    /// LibAFL's, from running the target.
    pub fn consider<E, EM, S, Z>(
        &mut self,
        run: &mut Run<'_, E, EM, S, Z>,
        bytes: &[u8],
        fresh: bool,
    ) -> Result<bool, Error>
    where
        E: ObservedExecutor,
        S: RunState,
        Z: RunFuzzer<E, EM, S>,
    {
        let mapped;
        let bytes = if self.only_ascii && !bytes.iter().all(|&b| is_ascii_input_byte(b)) {
            mapped = to_ascii(bytes);
            &mapped[..]
        } else {
            bytes
        };
        core::consider(&mut self.oracle(run), bytes, fresh)
    }

    /// Shrinks each crash reproducer to a fixpoint of every pass, keeping its crash label.
    ///
    /// A candidate may end the process (a signal or a timeout). The reproducer is saved first and
    /// the input joins the killed inputs, which crash shrinking skips, so after the restart
    /// [`crate::stages::CrashShrinkStage`] resumes from the best reproducer so far without
    /// running that candidate again.
    ///
    /// # Errors
    /// LibAFL's, from running the target.
    pub fn shrink_crashes<E, EM, S, Z>(
        &mut self,
        run: &mut Run<'_, E, EM, S, Z>,
        work: Vec<(Vec<u8>, Label)>,
    ) -> Result<(), Error>
    where
        E: ObservedExecutor,
        S: RunState,
        Z: RunFuzzer<E, EM, S>,
    {
        core::shrink_crashes(&mut self.oracle(run), work)
    }
}

/// The core's [`Oracle`] over LibAFL's evaluation of one run.
struct LibaflOracle<'c, 'r, 'a, E, EM, S, Z> {
    considerer: &'c mut Considerer,
    run: &'r mut Run<'a, E, EM, S, Z>,
}

impl<E, EM, S, Z> Oracle for LibaflOracle<'_, '_, '_, E, EM, S, Z>
where
    E: ObservedExecutor,
    S: RunState,
    Z: RunFuzzer<E, EM, S>,
{
    type Error = Error;

    /// Evaluates `input` with LibAFL (filtered by the inputs already run when `skip_seen`):
    /// an objective is a crash, named by the crash observer; an interesting input improved
    /// coverage.
    fn run(&mut self, input: &[u8], skip_seen: bool) -> Result<Outcome, Error> {
        let (considerer, run) = (&mut *self.considerer, &mut *self.run);
        // Readings belong to this run only: an input not run has none to repair from.
        considerer.readings = [None; WATCHED_SITES];
        if considerer.limits.exhausted(run.state) {
            return Ok(Outcome::Stop);
        }
        let buffer: &mut Vec<u8> = considerer.scratch.as_mut();
        buffer.clear();
        buffer.extend_from_slice(input);
        let scratch = &considerer.scratch;
        let mut evaluate = || {
            if skip_seen {
                run.fuzzer
                    .evaluate_filtered(run.state, run.executor, run.manager, scratch)
            } else {
                run.fuzzer
                    .evaluate_input(run.state, run.executor, run.manager, scratch)
            }
        };
        let (evaluated, readings) = if considerer.gate_sites.is_empty() {
            (evaluate(), [None; WATCHED_SITES])
        } else {
            gate_watch::watching(&considerer.gate_sites, evaluate)
        };
        considerer.readings = readings;
        let (result, _) = evaluated?;
        Ok(match result {
            ExecuteInputResult::None => Outcome::Nothing,
            ExecuteInputResult::Corpus => Outcome::Coverage,
            ExecuteInputResult::Solution => {
                let observers = run.executor.observers();
                let label = observers
                    .get(&considerer.crash)
                    .and_then(|o| o.last().map(crate::crash::CrashInfo::label));
                Outcome::Crash(label)
            }
        })
    }

    /// A candidate that ended a process before is skipped; one of a slow crash runs only
    /// within the [`SlowShrinkBudget`], and is deferred when it is spent.
    fn run_crash_candidate(&mut self, input: &[u8], label: Label) -> Result<Outcome, Error> {
        self.considerer.readings = [None; WATCHED_SITES];
        if killed_before(self.run.state, input) {
            return Ok(Outcome::Nothing);
        }
        let slow = self
            .run
            .state
            .metadata::<CrashTable>()
            .is_ok_and(|t| t.is_slow(label));
        if !slow {
            return self.run(input, false);
        }
        let started = with_slow_budget(self.run.state, |budget, now, elapsed| {
            let allowed = budget.available(now, elapsed);
            if allowed {
                budget.start(now);
            }
            allowed
        });
        if !started {
            return Ok(Outcome::Deferred);
        }
        let outcome = self.run(input, false);
        with_slow_budget(self.run.state, |budget, now, _| budget.finish(now));
        outcome
    }

    /// The input with each watched gate it failed written as the program computed it.
    fn repaired(&mut self, input: &[u8]) -> Option<Vec<u8>> {
        let considerer = &*self.considerer;
        let mut repaired: Option<Vec<u8>> = None;
        for (gate, reading) in considerer.gates.iter().zip(considerer.readings) {
            let Some(sides) = reading else {
                continue;
            };
            let bytes = repaired.as_deref().unwrap_or(input);
            if let Some((offset, computed)) = gate.failed_field(bytes, sides) {
                let bytes = repaired.get_or_insert_with(|| input.to_vec());
                gate.write(bytes, offset, computed);
            }
        }
        repaired
    }

    fn coverage_shrink_began(&mut self) {
        let considerer = &mut *self.considerer;
        if !considerer.shrink_budget {
            return;
        }
        let run_time = libafl_bolts::current_time().saturating_sub(*self.run.state.start_time());
        considerer.coverage_shrink = Some(CoverageShrinkClock::begin(
            run_time,
            *self.run.state.executions(),
        ));
    }

    /// Past the shrink's deadline (read from the run limits' last clock reading, not a clock
    /// per candidate), a shrink of slow executions ends: [`Outcome::Deferred`].
    fn run_coverage_candidate(&mut self, input: &[u8]) -> Result<Outcome, Error> {
        let considerer = &*self.considerer;
        let executions = *self.run.state.executions();
        let spent = considerer
            .coverage_shrink
            .zip(considerer.last_clock_reading())
            .is_some_and(|(clock, now)| clock.spent(now, executions));
        if spent {
            return Ok(Outcome::Deferred);
        }
        self.run(input, true)
    }

    fn crash_shrinker(&self) -> Option<Arc<dyn CrashShrinker>> {
        let grammar = self.considerer.grammar.clone()?;
        Some(grammar)
    }

    fn crash_shrunk(&mut self, label: Label) -> Result<(), Error> {
        self.run
            .state
            .metadata_mut::<CrashTable>()?
            .mark_shrunk(label);
        Ok(())
    }

    fn stopped(&self) -> bool {
        self.run.state.stop_requested()
    }
}

/// The four parts every run of an input needs, borrowed together from a stage's arguments.
pub struct Run<'a, E, EM, S, Z> {
    /// LibAFL's fuzzer (evaluation, feedbacks, scheduler).
    pub fuzzer: &'a mut Z,
    /// The executor running the target.
    pub executor: &'a mut E,
    /// The fuzzing state.
    pub state: &'a mut S,
    /// The event manager.
    pub manager: &'a mut EM,
}

/// Calls `f` with the run's [`SlowShrinkBudget`], the time (seconds since the Unix epoch) and
/// the seconds since the run started.
fn with_slow_budget<S: HasMetadata + HasStartTime, R>(
    state: &mut S,
    f: impl FnOnce(&mut SlowShrinkBudget, f64, f64) -> R,
) -> R {
    let now = libafl_bolts::current_time().as_secs_f64();
    let elapsed = now - state.start_time().as_secs_f64();
    f(
        state.metadata_or_insert_with(SlowShrinkBudget::default),
        now,
        elapsed,
    )
}

/// The run reached its limits: unfinished crash shrinks get the end's allowance (see
/// [`SlowShrinkBudget::end`]). Returns when it ends (seconds since the Unix epoch).
pub(crate) fn end_slow_shrinks<S: HasMetadata + HasStartTime>(state: &mut S) -> f64 {
    with_slow_budget(state, |budget, now, _| budget.end(now))
}

/// True when the run has time left for shrinking slow crashes (see [`SlowShrinkBudget`]).
pub(crate) fn slow_shrink_allowed<S: HasMetadata + HasStartTime>(state: &mut S) -> bool {
    with_slow_budget(state, |budget, now, elapsed| budget.available(now, elapsed))
}

/// True when `bytes` ended a process before (a signal or a timeout): running it again would
/// only end this one too.
pub(crate) fn killed_before<S: HasMetadata>(state: &S, bytes: &[u8]) -> bool {
    state
        .metadata::<KilledInputs>()
        .is_ok_and(|killed| killed.contains(input_hash(bytes)))
}

/// What running and judging inputs needs of the state.
pub trait RunState: HasExecutions + HasStartTime + Stoppable + HasMetadata {}

impl<S: HasExecutions + HasStartTime + Stoppable + HasMetadata> RunState for S {}

/// What the mutating stages need of the state: also the scheduled input and randomness.
pub trait FuzzState: RunState + HasCurrentTestcase<BytesInput> + HasRand {}

impl<S: RunState + HasCurrentTestcase<BytesInput> + HasRand> FuzzState for S {}

/// A fuzzer that evaluates byte inputs (LibAFL's `Evaluator`).
pub trait RunFuzzer<E, EM, S>: Evaluator<E, EM, BytesInput, S> {}

impl<E, EM, S, Z: Evaluator<E, EM, BytesInput, S>> RunFuzzer<E, EM, S> for Z {}

/// An executor whose observers can be looked up by handle.
pub trait ObservedExecutor: HasObservers<Observers: MatchName> {}

impl<E: HasObservers<Observers: MatchName>> ObservedExecutor for E {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ascii_maps_every_byte_into_printable_text_and_whitespace() {
        let all: Vec<u8> = (0..=255).collect();
        let mapped = to_ascii(&all);
        assert!(mapped.iter().all(|&b| is_ascii_input_byte(b)));
        assert_eq!(to_ascii(b"Hello,\tworld\n"), b"Hello,\tworld\n");
        assert_eq!(to_ascii(&[0x00, 0xc1, 0x7f]), b" A ");
    }
}
