//! Consider: the heart of the algorithm. [`consider`] runs an input; if it improves any label,
//! it is shrunk at once, keeping every simpler input that still improves a label. A coverage
//! improvement gets the cheap deletion plan; a crash gets every pass to a fixpoint, and a crash
//! shrink only accepts candidates with the *same* crash label, so a reproducer never drifts
//! from one bug to another. Crashes with other labels met on the way are shrunk after.
//!
//! What running an input means is the [`Oracle`]'s business: the engine's runs the target under
//! LibAFL (its feedbacks decide what improved, its corpus keeps the inputs); [`TableOracle`]
//! runs a plain function and keeps the best inputs in a [`LabelTable`], which is the whole
//! algorithm in a few lines and what the unit tests below exercise.

use std::sync::Arc;

use crate::labels::Label;
use crate::seen::SeenFilter;
use crate::shrink::{shrink, Plan, Verdict};
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
    /// Not run now (a slow crash out of its time budget): the shrink stops and is left
    /// unfinished, to resume later.
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

    /// True once the run is over.
    fn stopped(&self) -> bool;
}

/// Runs `bytes`; if it improves any label, shrinks it at once. True when it improved one.
/// Inputs already run are skipped, unless `fresh` says `bytes` cannot have run before.
///
/// # Errors
/// The oracle's; the shrink stops at the first.
pub fn consider<O: Oracle>(oracle: &mut O, bytes: &[u8], fresh: bool) -> Result<bool, O::Error> {
    match oracle.run(bytes, !fresh)? {
        Outcome::Nothing | Outcome::Deferred | Outcome::Stop => Ok(false),
        Outcome::Coverage => {
            let others = shrink_to(oracle, Goal::Coverage, bytes.to_vec(), &mut false)?;
            shrink_crashes(oracle, others)?;
            Ok(true)
        }
        Outcome::Crash(label) => {
            if let Some(label) = label {
                shrink_crashes(oracle, vec![(bytes.to_vec(), label)])?;
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
/// notes in `deferred` whether a candidate was deferred.
fn shrink_to<O: Oracle>(
    oracle: &mut O,
    goal: Goal,
    input: Vec<u8>,
    deferred: &mut bool,
) -> Result<Vec<(Vec<u8>, Label)>, O::Error> {
    let mut met = Vec::new();
    let mut failure = None;
    // Asked first: the judge borrows the oracle for the whole shrink.
    let crash_shrinker = match goal {
        Goal::Coverage => None,
        Goal::Crash(_) => oracle.crash_shrinker(),
    };
    let mut judge = |candidate: &[u8]| {
        let outcome = match goal {
            Goal::Coverage => oracle.run(candidate, true),
            Goal::Crash(label) => oracle.run_crash_candidate(candidate, label),
        };
        match outcome {
            Ok(Outcome::Coverage) if goal == Goal::Coverage => Verdict::Accepted,
            Ok(Outcome::Crash(Some(label))) if goal == Goal::Crash(label) => Verdict::Accepted,
            Ok(Outcome::Crash(Some(label))) => {
                met.push((candidate.to_vec(), label));
                Verdict::Rejected
            }
            Ok(Outcome::Coverage | Outcome::Nothing | Outcome::Crash(None)) => Verdict::Rejected,
            Ok(Outcome::Deferred) => {
                *deferred = true;
                Verdict::Stop
            }
            Ok(Outcome::Stop) => Verdict::Stop,
            Err(e) => {
                failure = Some(e);
                Verdict::Stop
            }
        }
    };
    match (goal, crash_shrinker) {
        (Goal::Coverage, _) => {
            shrink(input, Plan::COVERAGE, &mut judge);
        }
        (Goal::Crash(_), Some(shrinker)) => shrinker.shrink_crash(input, &mut judge),
        (Goal::Crash(_), None) => {
            shrink(input, Plan::CRASH, &mut judge);
        }
    }
    failure.map_or(Ok(met), Err)
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
mod tests {
    use super::*;

    /// A parser-like target: one label per leading byte of `GOOD` matched, and a crash when the
    /// input holds `!!` after the full word.
    fn target(input: &[u8]) -> Vec<Label> {
        const GOOD: &[u8] = b"GOOD";
        let matched = input.iter().zip(GOOD).take_while(|(a, b)| a == b).count();
        let mut labels: Vec<Label> = (0..=matched).map(|i| Label::edge(i, 1)).collect();
        if matched == GOOD.len() && input[GOOD.len()..].windows(2).any(|w| w == b"!!") {
            labels.push(Label::crash("panic", "target.rs:1"));
        }
        labels
    }

    #[test]
    fn an_improving_input_is_shrunk_to_the_simplest_that_keeps_its_label() {
        let mut oracle = TableOracle::new(target, 10_000);
        assert!(consider(&mut oracle, b"xyzGOOD and more", true).unwrap());
        // Label 0 (no byte matched): the empty input.
        assert_eq!(oracle.best(Label::edge(0, 1)), Some(&b""[..]));
        // The shrink keeps every candidate that improves *some* label: `G` takes label 1
        // from `GOzzz`, which keeps label 2 until a simpler input shows it.
        assert!(consider(&mut oracle, b"GOzzz", true).unwrap());
        assert_eq!(oracle.best(Label::edge(1, 1)), Some(&b"G"[..]));
        assert_eq!(oracle.best(Label::edge(2, 1)), Some(&b"GOzzz"[..]));
        assert!(consider(&mut oracle, b"GOab", true).unwrap());
        assert_eq!(oracle.best(Label::edge(2, 1)), Some(&b"GO"[..]));
        // Shown again, nothing improves; `GOzzz` holds no label any more.
        assert!(!consider(&mut oracle, b"GOab", true).unwrap());
        assert!(oracle.table.entries().all(|e| e.key != b"GOzzz"));
    }

    #[test]
    fn a_crash_is_shrunk_to_its_minimum_and_keeps_its_label() {
        let mut oracle = TableOracle::new(target, 10_000);
        assert!(consider(&mut oracle, b"GOOD, then a bang !! and some tail", true).unwrap());
        let crash = Label::crash("panic", "target.rs:1");
        assert_eq!(oracle.best(crash), Some(&b"GOOD!!"[..]));
        // The coverage labels it showed on the way have their own minima.
        assert_eq!(oracle.best(Label::edge(4, 1)), Some(&b"GOOD"[..]));
    }

    #[test]
    fn the_run_stops_at_the_oracle_limit() {
        let mut oracle = TableOracle::new(target, 3);
        consider(&mut oracle, b"GOOD, then a bang !! and some tail", true).unwrap();
        assert_eq!(oracle.executions, 3);
        assert!(oracle.stopped());
    }
}
