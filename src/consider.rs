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
use crate::crashes::CrashTable;
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
        }
    }

    /// Shrinks crash reproducers as choice sequences of `grammar` (grammar mode).
    #[must_use]
    pub fn with_grammar(mut self, grammar: Option<Arc<GrammarInputs>>) -> Self {
        self.grammar = grammar;
        self
    }

    fn evaluate<E, EM, S, Z>(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut S,
        manager: &mut EM,
        bytes: &[u8],
        filtered: bool,
    ) -> Result<Outcome, Error>
    where
        E: ObservedExecutor,
        S: RunState,
        Z: Evaluator<E, EM, BytesInput, S>,
    {
        if self.limits.exhausted(state) {
            return Ok(Outcome::Stop);
        }
        let buffer: &mut Vec<u8> = self.scratch.as_mut();
        buffer.clear();
        buffer.extend_from_slice(bytes);
        let (result, _) = if filtered {
            fuzzer.evaluate_filtered(state, executor, manager, &self.scratch)?
        } else {
            fuzzer.evaluate_input(state, executor, manager, &self.scratch)?
        };
        Ok(match result {
            ExecuteInputResult::None => Outcome::Nothing,
            ExecuteInputResult::Corpus => Outcome::Corpus,
            ExecuteInputResult::Solution => {
                let observers = executor.observers();
                let label = observers
                    .get(&self.crash)
                    .and_then(|o| o.last().map(crate::crash::CrashInfo::label));
                Outcome::Crash(label)
            }
        })
    }

    /// Runs `bytes`; if it improves any label, shrinks it at once. True when it improved one.
    /// Inputs already run are skipped, unless `fresh` says `bytes` cannot have run before.
    pub fn consider<E, EM, S, Z>(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut S,
        manager: &mut EM,
        bytes: &[u8],
        fresh: bool,
    ) -> Result<bool, Error>
    where
        E: ObservedExecutor,
        S: RunState,
        Z: Evaluator<E, EM, BytesInput, S>,
    {
        match self.evaluate(fuzzer, executor, state, manager, bytes, !fresh)? {
            Outcome::Nothing | Outcome::Stop => Ok(false),
            Outcome::Corpus => {
                self.shrink_coverage(fuzzer, executor, state, manager, bytes.to_vec())?;
                Ok(true)
            }
            Outcome::Crash(label) => {
                if let Some(label) = label {
                    self.shrink_crashes(
                        fuzzer,
                        executor,
                        state,
                        manager,
                        vec![(bytes.to_vec(), label)],
                    )?;
                }
                Ok(true)
            }
        }
    }

    /// Shrinks an input that improved edge labels; crashes met on the way are shrunk after.
    fn shrink_coverage<E, EM, S, Z>(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut S,
        manager: &mut EM,
        input: Vec<u8>,
    ) -> Result<(), Error>
    where
        E: ObservedExecutor,
        S: RunState,
        Z: Evaluator<E, EM, BytesInput, S>,
    {
        let mut crashes = Vec::new();
        let mut failure = None;
        let mut judge = |candidate: &[u8]| match self
            .evaluate(fuzzer, executor, state, manager, candidate, true)
        {
            Ok(Outcome::Corpus) => Verdict::Accepted,
            Ok(Outcome::Crash(Some(label))) => {
                crashes.push((candidate.to_vec(), label));
                Verdict::Rejected
            }
            Ok(Outcome::Nothing | Outcome::Crash(None)) => Verdict::Rejected,
            Ok(Outcome::Stop) => Verdict::Stop,
            Err(e) => {
                failure = Some(e);
                Verdict::Stop
            }
        };
        shrink(input, Plan::COVERAGE, &mut judge);
        if let Some(e) = failure {
            return Err(e);
        }
        self.shrink_crashes(fuzzer, executor, state, manager, crashes)
    }

    /// Shrinks each crash reproducer to a fixpoint of every pass, keeping its crash label.
    ///
    /// A candidate may end the process (a signal or a timeout). The reproducer is saved first and
    /// the input joins the killed inputs, which crash shrinking skips, so after the restart
    /// [`CrashShrinkStage`] resumes from the best reproducer so far without running that
    /// candidate again. Other candidates run even when the filter of inputs already run has
    /// seen them: whether a timeout or an out-of-memory shows can depend on timing, and a
    /// candidate that once ended another way must get its own run.
    pub fn shrink_crashes<E, EM, S, Z>(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut S,
        manager: &mut EM,
        mut work: Vec<(Vec<u8>, Label)>,
    ) -> Result<(), Error>
    where
        E: ObservedExecutor,
        S: RunState,
        Z: Evaluator<E, EM, BytesInput, S>,
    {
        let grammar = self.grammar.clone();
        while let Some((input, target)) = work.pop() {
            let mut failure = None;
            let mut others = Vec::new();
            let mut judge = |candidate: &[u8]| {
                let outcome = if killed_before(state, candidate) {
                    Ok(Outcome::Nothing)
                } else {
                    self.evaluate(fuzzer, executor, state, manager, candidate, false)
                };
                match outcome {
                    Ok(Outcome::Crash(Some(label))) if label == target => Verdict::Accepted,
                    Ok(Outcome::Crash(Some(label))) => {
                        others.push((candidate.to_vec(), label));
                        Verdict::Rejected
                    }
                    Ok(Outcome::Corpus | Outcome::Nothing | Outcome::Crash(None)) => {
                        Verdict::Rejected
                    }
                    Ok(Outcome::Stop) => Verdict::Stop,
                    Err(e) => {
                        failure = Some(e);
                        Verdict::Stop
                    }
                }
            };
            match grammar.as_deref() {
                Some(grammar) => {
                    grammar.reduce_bytes(&input, &mut judge);
                }
                None => {
                    shrink(input, Plan::CRASH, &mut judge);
                }
            }
            if let Some(e) = failure {
                return Err(e);
            }
            if state.stop_requested() {
                return Ok(());
            }
            state.metadata_mut::<CrashTable>()?.mark_shrunk(target);
            work.extend(others);
        }
        Ok(())
    }
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

/// An executor whose observers can be looked up by handle.
pub trait ObservedExecutor: HasObservers<Observers: MatchName> {}

impl<E: HasObservers<Observers: MatchName>> ObservedExecutor for E {}
