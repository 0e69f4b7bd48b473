//! Consider: the heart of the algorithm. [`Considerer::consider`] runs an input; if it improves
//! any label, it shrinks it at once, keeping every smaller input that still improves a label. A
//! coverage improvement gets the cheap deletion plan; a crash gets every pass to a fixpoint, and
//! a crash shrink only accepts candidates with the *same* crash label, so a reproducer never
//! drifts from one bug to another.

use std::sync::Arc;

use libafl::executors::HasObservers;
use libafl::inputs::BytesInput;
use libafl::state::{HasCurrentTestcase, HasExecutions, HasRand, HasStartTime, Stoppable};
use libafl::{Error, Evaluator, ExecuteInputResult, HasMetadata};
use libafl_bolts::tuples::{Handle, MatchName, MatchNameRef};

use crate::config::Limits;
use crate::crash::CrashObserver;
use crate::crashes::{CrashTable, SlowShrinkBudget};
use crate::grammar::GrammarInputs;
use crate::labels::Label;
use crate::seen::{input_hash, KilledInputs};
use crate::shrink::{shrink, Plan, Verdict};

/// What one evaluation showed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// Nothing new (or skipped: already run).
    Nothing,
    /// Improved an edge label.
    Corpus,
    /// Improved a crash label (the label, when the crash observer named it).
    Crash(Option<Label>),
    /// The run is over.
    Stop,
}

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
    /// Set when a slow crash's shrink stopped for want of [`SlowShrinkBudget`]: it is left
    /// unfinished, to resume later.
    out_of_budget: bool,
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
            out_of_budget: false,
        }
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

    fn evaluate<E, EM, S, Z>(
        &mut self,
        run: &mut Run<'_, E, EM, S, Z>,
        bytes: &[u8],
        filtered: bool,
    ) -> Result<Outcome, Error>
    where
        E: ObservedExecutor,
        S: RunState,
        Z: RunFuzzer<E, EM, S>,
    {
        if self.limits.exhausted(run.state) {
            return Ok(Outcome::Stop);
        }
        let buffer: &mut Vec<u8> = self.scratch.as_mut();
        buffer.clear();
        buffer.extend_from_slice(bytes);
        let (result, _) = if filtered {
            run.fuzzer
                .evaluate_filtered(run.state, run.executor, run.manager, &self.scratch)?
        } else {
            run.fuzzer
                .evaluate_input(run.state, run.executor, run.manager, &self.scratch)?
        };
        Ok(match result {
            ExecuteInputResult::None => Outcome::Nothing,
            ExecuteInputResult::Corpus => Outcome::Corpus,
            ExecuteInputResult::Solution => {
                let observers = run.executor.observers();
                let label = observers
                    .get(&self.crash)
                    .and_then(|o| o.last().map(crate::crash::CrashInfo::label));
                Outcome::Crash(label)
            }
        })
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
        Ok(self.evaluate(run, bytes, false)? != Outcome::Stop)
    }

    /// Runs `bytes`; if it improves any label, shrinks it at once. True when it improved one.
    /// Inputs already run are skipped, unless `fresh` says `bytes` cannot have run before.
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
        match self.evaluate(run, bytes, !fresh)? {
            Outcome::Nothing | Outcome::Stop => Ok(false),
            Outcome::Corpus => {
                self.shrink_to(run, Goal::Coverage, bytes.to_vec())?;
                Ok(true)
            }
            Outcome::Crash(label) => {
                if let Some(label) = label {
                    self.shrink_crashes(run, vec![(bytes.to_vec(), label)])?;
                }
                Ok(true)
            }
        }
    }

    /// The one judge of shrink candidates: whether `candidate` still reaches `goal`. Crashes
    /// with other labels met on the way go to `met`, to be shrunk after; an error stops the
    /// shrink and is kept in `failure`.
    ///
    /// A coverage candidate already run is skipped (it showed nothing new then). A crash
    /// candidate that ended a process before is skipped; others run even when the filter of
    /// inputs already run has seen them: whether a timeout or an out-of-memory shows can depend
    /// on timing, and a candidate that once ended another way must get its own run.
    fn judge<E, EM, S, Z>(
        &mut self,
        run: &mut Run<'_, E, EM, S, Z>,
        goal: Goal,
        candidate: &[u8],
        met: &mut Vec<(Vec<u8>, Label)>,
        failure: &mut Option<Error>,
    ) -> Verdict
    where
        E: ObservedExecutor,
        S: RunState,
        Z: RunFuzzer<E, EM, S>,
    {
        let outcome = match goal {
            Goal::Coverage => self.evaluate(run, candidate, true),
            Goal::Crash(_) if killed_before(run.state, candidate) => Ok(Outcome::Nothing),
            Goal::Crash(label)
                if run
                    .state
                    .metadata::<CrashTable>()
                    .is_ok_and(|t| t.is_slow(label)) =>
            {
                let started = with_slow_budget(run.state, |budget, now, elapsed| {
                    let allowed = budget.available(now, elapsed);
                    if allowed {
                        budget.start(now);
                    }
                    allowed
                });
                if !started {
                    self.out_of_budget = true;
                    return Verdict::Stop;
                }
                let outcome = self.evaluate(run, candidate, false);
                with_slow_budget(run.state, |budget, now, _| budget.finish(now));
                outcome
            }
            Goal::Crash(_) => self.evaluate(run, candidate, false),
        };
        match outcome {
            Ok(Outcome::Corpus) if goal == Goal::Coverage => Verdict::Accepted,
            Ok(Outcome::Crash(Some(label))) if goal == Goal::Crash(label) => Verdict::Accepted,
            Ok(Outcome::Crash(Some(label))) => {
                met.push((candidate.to_vec(), label));
                Verdict::Rejected
            }
            Ok(Outcome::Corpus | Outcome::Nothing | Outcome::Crash(None)) => Verdict::Rejected,
            Ok(Outcome::Stop) => Verdict::Stop,
            Err(e) => {
                *failure = Some(e);
                Verdict::Stop
            }
        }
    }

    /// Shrinks `input` towards `goal`; returns the crashes with other labels met on the way.
    /// Coverage improvements get the cheap plan, crashes every pass to a fixpoint (in grammar
    /// mode, the grammar's reducer).
    fn shrink_to<E, EM, S, Z>(
        &mut self,
        run: &mut Run<'_, E, EM, S, Z>,
        goal: Goal,
        input: Vec<u8>,
    ) -> Result<Vec<(Vec<u8>, Label)>, Error>
    where
        E: ObservedExecutor,
        S: RunState,
        Z: RunFuzzer<E, EM, S>,
    {
        let mut met = Vec::new();
        let mut failure = None;
        let grammar = self.grammar.clone();
        let mut judge = |candidate: &[u8]| self.judge(run, goal, candidate, &mut met, &mut failure);
        match (goal, grammar.as_deref()) {
            (Goal::Coverage, _) => {
                shrink(input, Plan::COVERAGE, &mut judge);
            }
            (Goal::Crash(_), Some(grammar)) => {
                grammar.reduce_bytes(&input, &mut judge);
            }
            (Goal::Crash(_), None) => {
                shrink(input, Plan::CRASH, &mut judge);
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
        if goal == Goal::Coverage {
            self.shrink_crashes(run, met)?;
            return Ok(Vec::new());
        }
        Ok(met)
    }

    /// Shrinks each crash reproducer to a fixpoint of every pass, keeping its crash label.
    ///
    /// A candidate may end the process (a signal or a timeout). The reproducer is saved first and
    /// the input joins the killed inputs, which crash shrinking skips, so after the restart
    /// [`crate::stages::CrashShrinkStage`] resumes from the best reproducer so far without
    /// running that candidate again.
    pub fn shrink_crashes<E, EM, S, Z>(
        &mut self,
        run: &mut Run<'_, E, EM, S, Z>,
        mut work: Vec<(Vec<u8>, Label)>,
    ) -> Result<(), Error>
    where
        E: ObservedExecutor,
        S: RunState,
        Z: RunFuzzer<E, EM, S>,
    {
        while let Some((input, target)) = work.pop() {
            let others = self.shrink_to(run, Goal::Crash(target), input)?;
            if run.state.stop_requested() {
                return Ok(());
            }
            // Out of budget: left unshrunk, so that the crash-shrink stage resumes it later.
            if !std::mem::take(&mut self.out_of_budget) {
                run.state.metadata_mut::<CrashTable>()?.mark_shrunk(target);
            }
            work.extend(others);
        }
        Ok(())
    }
}

/// What a shrink keeps: inputs that still improve coverage labels, or that still show one
/// crash label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Goal {
    Coverage,
    Crash(Label),
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
