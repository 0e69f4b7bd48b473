//! Consider: the heart of the algorithm. [`consider`] runs an input; if it improves any label,
//! it is shrunk at once, keeping every simpler input that still improves a label. A coverage
//! improvement gets the cheap deletion plan; a crash gets every pass to a fixpoint, and a crash
//! shrink only accepts candidates with the *same* crash label, so a reproducer never drifts
//! from one bug to another. Crashes with other labels met on the way are shrunk after.
//!
//! An oracle that can repair inputs (rewrite a checksum or a length the program recomputes from
//! the rest, see [`Oracle::repaired`]) gets every considered input and every rejected shrink
//! candidate run again repaired, so that what lies behind such a check is reached, and shrunk
//! as far as an input without one.
//!
//! What running an input means is the [`Oracle`]'s business: the engine's runs the target under
//! LibAFL (its feedbacks decide what improved, its corpus keeps the inputs); [`TableOracle`]
//! runs a plain function and keeps the best inputs in a [`LabelTable`], which is the whole
//! algorithm in a few lines and what the unit tests below exercise.

use std::sync::Arc;

use crate::labels::Label;
use crate::seen::SeenFilter;
use crate::shrink::{Plan, Shrinker, Verdict};
use crate::table::LabelTable;

/// What one run of an input showed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing new (or skipped: already run).
    Nothing,
    /// Improved a coverage label.
    Coverage,
    /// Improved a crash label (the label, when the run could name it).
    Crash(Option<Label>),
    /// Not run now (a slow crash out of its time budget, or a coverage shrink that has run
    /// long): the shrink stops where it got; a crash's is left unfinished, to resume later.
    Deferred,
    /// The run is over.
    Stop,
}

/// What a shrink keeps: inputs that still improve coverage labels, or that still show one
/// crash label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Goal {
    /// Any coverage improvement.
    Coverage,
    /// This crash label.
    Crash(Label),
}

/// Shrinks a crash reproducer with a judge (the byte shrinker's crash plan by default; the
/// grammar reducer in grammar mode, where inputs are choice sequences).
pub trait CrashShrinker {
    /// Shrinks `input`, asking `judge` about every candidate.
    fn shrink_crash(&self, input: Vec<u8>, judge: &mut dyn FnMut(&[u8]) -> Verdict);
}

/// Runs inputs for [`consider`] and says what they improved.
pub trait Oracle {
    /// What running an input can fail with.
    type Error;

    /// Runs `input`; with `skip_seen`, an input already run is skipped ([`Outcome::Nothing`]).
    ///
    /// # Errors
    /// The oracle's, from running the target.
    fn run(&mut self, input: &[u8], skip_seen: bool) -> Result<Outcome, Self::Error>;

    /// Runs a candidate of the shrink of crash `label`. Such candidates run even when seen
    /// before: whether a timeout or an out-of-memory shows can depend on timing. An oracle may
    /// skip ones that ended a process before, or defer slow ones.
    ///
    /// # Errors
    /// The oracle's, from running the target.
    fn run_crash_candidate(&mut self, input: &[u8], label: Label) -> Result<Outcome, Self::Error> {
        let _ = label;
        self.run(input, false)
    }

    /// Called when the shrink of a coverage improvement begins.
    fn coverage_shrink_began(&mut self) {}

    /// Runs a candidate of the shrink of a coverage improvement (never one run before). An
    /// oracle may end the shrink where it got with [`Outcome::Deferred`]: on a slow target,
    /// one input's shrink can otherwise take the run's minutes.
    ///
    /// # Errors
    /// The oracle's, from running the target.
    fn run_coverage_candidate(&mut self, input: &[u8]) -> Result<Outcome, Self::Error> {
        self.run(input, true)
    }

    /// How crash reproducers are shrunk (`None`: the byte shrinker's crash plan).
    fn crash_shrinker(&self) -> Option<Arc<dyn CrashShrinker>> {
        None
    }

    /// Called when the reproducer of crash `label` reached its fixpoint.
    ///
    /// # Errors
    /// The oracle's, from recording it.
    fn crash_shrunk(&mut self, label: Label) -> Result<(), Self::Error> {
        let _ = label;
        Ok(())
    }

    /// `input`, which was the last to run, with the fields the program recomputes from the
    /// rest (a checksum, a length) rewritten to what that run computed, when it failed such a
    /// check; `None` otherwise. Read right after the run, before another input runs.
    fn repaired(&mut self, input: &[u8]) -> Option<Vec<u8>> {
        let _ = input;
        None
    }

    /// True once the run is over.
    fn stopped(&self) -> bool;
}

/// How many repairs in a row one considered input gets: a repaired input may pass one check
/// only to fail the next (a format with a checksum per chunk).
const MAX_REPAIRS: usize = 4;

/// Runs `bytes`; if it improves any label, shrinks it at once. True when it improved one.
/// Inputs already run are skipped, unless `fresh` says `bytes` cannot have run before. When
/// the run failed a check the oracle can repair, the repaired input is considered too.
///
/// # Errors
/// The oracle's; the shrink stops at the first.
pub fn consider<O: Oracle>(oracle: &mut O, bytes: &[u8], fresh: bool) -> Result<bool, O::Error> {
    let mut improved = false;
    let mut repaired: Option<Vec<u8>> = None;
    let mut skip_seen = !fresh;
    for _ in 0..=MAX_REPAIRS {
        let input = repaired.take();
        let input = input.as_deref().unwrap_or(bytes);
        let outcome = oracle.run(input, skip_seen)?;
        // Read now: the shrink below runs other inputs.
        repaired = oracle.repaired(input);
        improved |= follow_up(oracle, outcome, input)?;
        if repaired.is_none() || oracle.stopped() {
            break;
        }
        skip_seen = true;
    }
    Ok(improved)
}

/// Shrinks `input` after its run showed `outcome`; true when it improved a label.
fn follow_up<O: Oracle>(oracle: &mut O, outcome: Outcome, input: &[u8]) -> Result<bool, O::Error> {
    match outcome {
        Outcome::Nothing | Outcome::Deferred | Outcome::Stop => Ok(false),
        Outcome::Coverage => {
            let others = shrink_to(oracle, Goal::Coverage, input.to_vec(), &mut false)?;
            shrink_crashes(oracle, others)?;
            Ok(true)
        }
        Outcome::Crash(label) => {
            if let Some(label) = label {
                shrink_crashes(oracle, vec![(input.to_vec(), label)])?;
            }
            Ok(true)
        }
    }
}

/// Shrinks each crash reproducer to a fixpoint of every pass, keeping its crash label, and
/// then the crashes with other labels its shrink met.
///
/// # Errors
/// The oracle's; the shrink stops at the first.
pub fn shrink_crashes<O: Oracle>(
    oracle: &mut O,
    mut work: Vec<(Vec<u8>, Label)>,
) -> Result<(), O::Error> {
    while let Some((input, label)) = work.pop() {
        let mut deferred = false;
        let others = shrink_to(oracle, Goal::Crash(label), input, &mut deferred)?;
        if oracle.stopped() {
            return Ok(());
        }
        // Deferred: left unshrunk, so that a later pass resumes it.
        if !deferred {
            oracle.crash_shrunk(label)?;
        }
        work.extend(others);
    }
    Ok(())
}

/// Shrinks `input` towards `goal`; returns the crashes with other labels met on the way, and
/// notes in `deferred` whether a candidate was deferred. A rejected candidate the oracle can
/// repair runs again repaired, and the repair is kept if it is accepted (and still simpler).
fn shrink_to<O: Oracle>(
    oracle: &mut O,
    goal: Goal,
    input: Vec<u8>,
    deferred: &mut bool,
) -> Result<Vec<(Vec<u8>, Label)>, O::Error> {
    let mut judge = Judge {
        oracle,
        goal,
        met: Vec::new(),
        deferred: false,
        failure: None,
    };
    // Asked first: the judge borrows the oracle for the whole shrink.
    let crash_shrinker = match goal {
        Goal::Coverage => {
            judge.oracle.coverage_shrink_began();
            None
        }
        Goal::Crash(_) => judge.oracle.crash_shrinker(),
    };
    if let Some(shrinker) = crash_shrinker {
        // Its own inputs (grammar choices): nothing in them to repair.
        shrinker.shrink_crash(input, &mut |candidate| judge.verdict(candidate));
    } else {
        let plan = match goal {
            Goal::Coverage => Plan::COVERAGE,
            Goal::Crash(_) => Plan::CRASH,
        };
        let mut repairing = |candidate: &mut Vec<u8>, _: &[u8]| judge.verdict_repairing(candidate);
        Shrinker::normalizing(input, &mut repairing).run_plan(plan);
    }
    *deferred |= judge.deferred;
    judge.failure.map_or(Ok(judge.met), Err)
}

/// Judges the candidates of one shrink by running them with the oracle.
struct Judge<'o, O: Oracle> {
    oracle: &'o mut O,
    goal: Goal,
    /// Crashes with other labels than the goal's, met on the way.
    met: Vec<(Vec<u8>, Label)>,
    /// Whether a candidate was deferred.
    deferred: bool,
    /// The oracle's first error; it stops the shrink.
    failure: Option<O::Error>,
}

impl<O: Oracle> Judge<'_, O> {
    /// Runs `candidate` and says whether it keeps the goal.
    fn verdict(&mut self, candidate: &[u8]) -> Verdict {
        let outcome = match self.goal {
            Goal::Coverage => self.oracle.run_coverage_candidate(candidate),
            Goal::Crash(label) => self.oracle.run_crash_candidate(candidate, label),
        };
        match outcome {
            Ok(Outcome::Coverage) if self.goal == Goal::Coverage => Verdict::Accepted,
            Ok(Outcome::Crash(Some(label))) if self.goal == Goal::Crash(label) => Verdict::Accepted,
            Ok(Outcome::Crash(Some(label))) => {
                self.met.push((candidate.to_vec(), label));
                Verdict::Rejected
            }
            Ok(Outcome::Coverage | Outcome::Nothing | Outcome::Crash(None)) => Verdict::Rejected,
            Ok(Outcome::Deferred) => {
                self.deferred = true;
                Verdict::Stop
            }
            Ok(Outcome::Stop) => Verdict::Stop,
            Err(e) => {
                self.failure = Some(e);
                Verdict::Stop
            }
        }
    }

    /// As [`Judge::verdict`]; a rejected candidate that failed a check the oracle repairs
    /// runs again repaired, and becomes the repaired input if that is accepted.
    fn verdict_repairing(&mut self, candidate: &mut Vec<u8>) -> Verdict {
        let verdict = self.verdict(candidate);
        if verdict != Verdict::Rejected {
            return verdict;
        }
        let Some(repaired) = self.oracle.repaired(candidate) else {
            return verdict;
        };
        let verdict = self.verdict(&repaired);
        if verdict == Verdict::Accepted {
            *candidate = repaired;
        }
        verdict
    }
}

/// The algorithm over a plain function: `target` returns the labels an input shows (coverage
/// labels and crash labels, see [`Label::crash`]), and the best input of every label is kept
/// in a [`LabelTable`]. What the engine does with LibAFL, without it.
pub struct TableOracle<F> {
    target: F,
    /// The best-per-label table; ids index [`TableOracle::inputs`].
    pub table: LabelTable<usize>,
    /// Every input the table has held (an evicted one stays, unreferenced).
    pub inputs: Vec<Vec<u8>>,
    seen: SeenFilter,
    /// Executions so far.
    pub executions: u64,
    /// Executions after which the run is over.
    pub max_executions: u64,
}

impl<F: FnMut(&[u8]) -> Vec<Label>> TableOracle<F> {
    /// An oracle over `target` that stops after `max_executions`.
    pub fn new(target: F, max_executions: u64) -> Self {
        TableOracle {
            target,
            table: LabelTable::new(),
            inputs: Vec::new(),
            seen: SeenFilter::with_memory(1 << 16),
            executions: 0,
            max_executions,
        }
    }

    /// The best input of `label`, if any input showed it.
    #[must_use]
    pub fn best(&self, label: Label) -> Option<&[u8]> {
        let entry = self.table.best(label)?;
        Some(&self.inputs[entry.corpus_id])
    }
}

impl<F: FnMut(&[u8]) -> Vec<Label>> Oracle for TableOracle<F> {
    type Error = std::convert::Infallible;

    fn run(&mut self, input: &[u8], skip_seen: bool) -> Result<Outcome, Self::Error> {
        if self.stopped() {
            return Ok(Outcome::Stop);
        }
        if self.seen.check_and_insert(input) && skip_seen {
            return Ok(Outcome::Nothing);
        }
        self.executions += 1;
        let labels = (self.target)(input);
        let recorded = self.table.record(input, self.inputs.len(), &labels);
        if recorded.improved.is_empty() {
            return Ok(Outcome::Nothing);
        }
        self.inputs.push(input.to_vec());
        Ok(match recorded.improved.iter().find(|l| l.is_crash()) {
            Some(&crash) => Outcome::Crash(Some(crash)),
            None => Outcome::Coverage,
        })
    }

    fn stopped(&self) -> bool {
        self.executions >= self.max_executions
    }
}

#[cfg(test)]
mod tests;
