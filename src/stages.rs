//! Stages: consider, expand, report.
//!
//! [`Considerer::consider`] is the heart of the algorithm: run an input; if it improves any label,
//! shrink it at once, keeping every smaller input that still improves a label. A coverage
//! improvement gets the cheap deletion plan; a crash gets every pass to a fixpoint, and a crash
//! shrink only accepts candidates with the *same* crash label, so a reproducer never drifts from
//! one bug to another. [`ExpandStage`] feeds it the expansions of the scheduled input, and
//! [`ReportStage`] writes the output directory and enforces the run limits.

use std::cell::Cell;
use std::sync::Arc;
use std::time::Duration;

use libafl::corpus::{Corpus, CorpusId, HasCurrentCorpusId};
use libafl::executors::ExitKind;
use libafl::executors::HasObservers;
use libafl::inputs::BytesInput;
use libafl::mutators::{MutationResult, Mutator};
use libafl::observers::{CmpValuesMetadata, Observer};
use libafl::stages::{Restartable, Stage};
use libafl::state::{
    HasCurrentTestcase, HasExecutions, HasImported, HasRand, HasSolutions, HasStartTime, Stoppable,
};
use libafl::{Error, Evaluator, ExecuteInputResult, ExecutesInput, HasMetadata};
use libafl_bolts::current_time;
use libafl_bolts::tuples::{Handle, MatchName, MatchNameRef};

use crate::crash::CrashObserver;
use crate::crashes::CrashTable;
use crate::grammar::GrammarInputs;
use crate::labels::Label;
use crate::mutators::Expansions;
use crate::report::Reporter;
use crate::seen::{input_hash, KilledInputs};
use crate::shrink::{shrink, Plan, Verdict};

/// When a run ends: after so many executions, at a deadline, or at the first crash.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// Stop after this many executions.
    pub max_execs: Option<u64>,
    /// Stop after this much time since the start of the run.
    pub max_time: Option<Duration>,
    /// Stop once a crash has been found (and shrunk).
    pub stop_on_crash: bool,
    /// Checks since the clock was last read.
    checks: Cell<u32>,
}

impl Limits {
    /// Limits from their parts.
    #[must_use]
    pub fn new(max_execs: Option<u64>, max_time: Option<Duration>, stop_on_crash: bool) -> Self {
        Limits {
            max_execs,
            max_time,
            stop_on_crash,
            checks: Cell::new(0),
        }
    }

    /// True when the run's time is up.
    pub fn past_deadline<S: HasStartTime>(&self, state: &S) -> bool {
        self.max_time
            .is_some_and(|t| current_time().saturating_sub(*state.start_time()) >= t)
    }

    /// True when the run must end; also asks the state to stop.
    pub fn exhausted<S: HasExecutions + HasStartTime + Stoppable>(&self, state: &mut S) -> bool {
        if state.stop_requested() {
            return true;
        }
        if crate::interrupt::requested() {
            state.request_stop();
            return true;
        }
        let over_execs = self.max_execs.is_some_and(|n| *state.executions() >= n);
        // Reading the clock costs little next to an execution, but not nothing: read it on every
        // 256th check (checks, not executions: skipped candidates must not hide the deadline).
        let checks = self.checks.get().wrapping_add(1);
        self.checks.set(checks);
        let over_time = checks % 256 == 1 && self.past_deadline(state);
        if over_execs || over_time {
            state.request_stop();
        }
        over_execs || over_time
    }
}

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
fn killed_before<S: HasMetadata>(state: &S, bytes: &[u8]) -> bool {
    state
        .metadata::<KilledInputs>()
        .is_ok_and(|killed| killed.contains(input_hash(bytes)))
}

/// Finishes the shrinking of crash reproducers that a restart interrupted.
#[derive(Debug)]
pub struct CrashShrinkStage {
    considerer: Considerer,
}

impl CrashShrinkStage {
    /// A stage shrinking unfinished crash reproducers with `considerer`.
    #[must_use]
    pub fn new(considerer: Considerer) -> Self {
        CrashShrinkStage { considerer }
    }
}

impl<E, EM, S, Z> Stage<E, EM, S, Z> for CrashShrinkStage
where
    E: ObservedExecutor,
    S: RunState,
    Z: Evaluator<E, EM, BytesInput, S>,
{
    fn perform(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut S,
        manager: &mut EM,
    ) -> Result<(), Error> {
        while let Some((label, input)) = state.metadata::<CrashTable>()?.unshrunk() {
            if state.stop_requested() {
                break;
            }
            self.considerer.shrink_crashes(
                fuzzer,
                executor,
                state,
                manager,
                vec![(input, label)],
            )?;
        }
        Ok(())
    }
}

/// Marks a testcase whose 256 single-byte expansions have all run.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct ByteExpansionsTried;

libafl_bolts::impl_serdeany!(ByteExpansionsTried);

/// Tries the expansions of the scheduled input until one improves a label.
#[derive(Debug)]
pub struct ExpandStage {
    considerer: Considerer,
    max_len: usize,
    base: Vec<u8>,
    candidate: Vec<u8>,
}

impl ExpandStage {
    /// A stage expanding inputs up to `max_len` bytes, considering candidates with `considerer`.
    #[must_use]
    pub fn new(considerer: Considerer, max_len: usize) -> Self {
        ExpandStage {
            considerer,
            max_len,
            base: Vec::new(),
            candidate: Vec::new(),
        }
    }
}

impl<E, EM, S, Z> Stage<E, EM, S, Z> for ExpandStage
where
    E: ObservedExecutor,
    S: FuzzState,
    Z: Evaluator<E, EM, BytesInput, S>,
{
    fn perform(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut S,
        manager: &mut EM,
    ) -> Result<(), Error> {
        let bytes_tried = load_current_into(state, &mut self.base)?;
        let mut expansions = if bytes_tried {
            Expansions::random_only(self.max_len)
        } else {
            Expansions::new(self.max_len)
        };
        let mut improved = false;
        while expansions.next_into(&self.base, state.rand_mut(), &mut self.candidate) {
            improved = self.considerer.consider(
                fuzzer,
                executor,
                state,
                manager,
                &self.candidate,
                expansions.last_was_random(),
            )?;
            if improved || state.stop_requested() {
                break;
            }
        }
        if !improved && !bytes_tried && !state.stop_requested() {
            // The testcase may have been evicted by a shrink meanwhile: then there is no one
            // left to remember it for.
            if let Ok(mut testcase) = state.current_testcase_mut() {
                testcase.add_metadata(ByteExpansionsTried);
            }
        }
        Ok(())
    }
}

/// Tries LibAFL havoc mutants of the scheduled input, each through [`Considerer::consider`], so
/// an improving mutant is shrunk at once like any other.
#[derive(Debug)]
pub struct HavocStage<M> {
    considerer: Considerer,
    mutator: M,
    iterations: usize,
    max_len: usize,
    base: Vec<u8>,
    mutant: BytesInput,
}

impl<M> HavocStage<M> {
    /// A stage trying up to `iterations` mutants (stopping at the first improvement); 0 turns it
    /// off.
    #[must_use]
    pub fn new(considerer: Considerer, mutator: M, iterations: usize, max_len: usize) -> Self {
        HavocStage {
            considerer,
            mutator,
            iterations,
            max_len,
            base: Vec::new(),
            mutant: BytesInput::new(Vec::new()),
        }
    }
}

impl<E, EM, M, S, Z> Stage<E, EM, S, Z> for HavocStage<M>
where
    E: ObservedExecutor,
    M: Mutator<BytesInput, S>,
    S: FuzzState,
    Z: Evaluator<E, EM, BytesInput, S>,
{
    fn perform(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut S,
        manager: &mut EM,
    ) -> Result<(), Error> {
        if self.iterations == 0 || state.stop_requested() {
            return Ok(());
        }
        load_current_into(state, &mut self.base)?;
        for _ in 0..self.iterations {
            let bytes: &mut Vec<u8> = self.mutant.as_mut();
            bytes.clear();
            bytes.extend_from_slice(&self.base);
            if self.mutator.mutate(state, &mut self.mutant)? == MutationResult::Skipped {
                continue;
            }
            let bytes: &mut Vec<u8> = self.mutant.as_mut();
            bytes.truncate(self.max_len);
            let improved = self.considerer.consider(
                fuzzer,
                executor,
                state,
                manager,
                self.mutant.as_ref(),
                false,
            )?;
            self.mutator.post_exec(state, None)?;
            if improved || state.stop_requested() {
                break;
            }
        }
        Ok(())
    }
}

/// The most comparison operands kept per corpus entry. A parser such as SQLite's logs tens of
/// thousands of comparisons per run, mostly the same ones again; kept whole they cost over a
/// megabyte per entry, gigabytes for a corpus.
pub const MAX_TRACED_OPERANDS: usize = 256;

/// The distinct entries of `logged`, without comparisons whose two sides are equal already
/// (replacing one by the other changes nothing); when more than `cap` remain, `cap` of them spread
/// evenly over the run, so that the comparisons of late parsing stages are kept too.
#[must_use]
pub fn distinct_operands(
    logged: Vec<libafl::observers::CmpValues>,
    cap: usize,
) -> Vec<libafl::observers::CmpValues> {
    use libafl::observers::CmpValues;
    use libafl_bolts::ToSlice;
    let mut seen = std::collections::HashSet::new();
    let mut kept = Vec::new();
    for value in logged {
        // (width, sides, is_const, bytes), and whether the two sides are equal already.
        let (key, same_sides): ((u8, u64, u64, bool, Vec<u8>), bool) = match &value {
            CmpValues::U8((a, b, c)) => ((1, (*a).into(), (*b).into(), *c, Vec::new()), a == b),
            CmpValues::U16((a, b, c)) => ((2, (*a).into(), (*b).into(), *c, Vec::new()), a == b),
            CmpValues::U32((a, b, c)) => ((4, (*a).into(), (*b).into(), *c, Vec::new()), a == b),
            CmpValues::U64((a, b, c)) => ((8, *a, *b, *c, Vec::new()), a == b),
            CmpValues::Bytes((a, b)) => {
                let (a, b) = (a.to_slice(), b.to_slice());
                let both = [a, b].concat();
                ((0, a.len() as u64, b.len() as u64, false, both), *a == *b)
            }
        };
        if !same_sides && seen.insert(key) {
            kept.push(value);
        }
    }
    if kept.len() <= cap {
        return kept;
    }
    let step = kept.len() as f64 / cap as f64;
    (0..cap)
        .map(|i| kept[(i as f64 * step) as usize].clone())
        .collect()
}

/// How many corpus entries keep their traced operands between schedulings (the most recently
/// traced ones): memory stays bounded however large the corpus grows.
pub const TRACED_ENTRIES: usize = 2048;

/// The traced comparison operands of the most recently scheduled corpus entries, newest last.
/// A linear search over a few thousand ids per scheduled input costs nothing next to the
/// executions the stage runs.
#[derive(Debug, Default)]
struct TracedCache(std::collections::VecDeque<(CorpusId, Vec<libafl::observers::CmpValues>)>);

impl TracedCache {
    fn take(&mut self, id: CorpusId) -> Option<Vec<libafl::observers::CmpValues>> {
        let position = self.0.iter().position(|(entry, _)| *entry == id)?;
        self.0.remove(position).map(|(_, list)| list)
    }

    fn put(&mut self, id: CorpusId, list: Vec<libafl::observers::CmpValues>) {
        self.0.push_back((id, list));
        if self.0.len() > TRACED_ENTRIES {
            self.0.pop_front();
        }
    }
}

/// Input-to-state replacement (LibAFL's CmpLog): runs the scheduled input once with comparison
/// logging on, then tries mutants that write the logged operands of its comparisons into the
/// input ([`libafl::mutators::I2SRandReplace`]), stopping at the first improvement. This is how
/// magic numbers, multi-byte keywords and the wide compares LLVM merges byte checks into are
/// passed: expansions add one byte at a time and see no edge until the whole value matches.
pub struct CmpLogStage<M> {
    observer: libafl_targets::CmpLogObserver,
    mutants: HavocStage<M>,
    traced: BytesInput,
    cache: TracedCache,
}

impl<M> std::fmt::Debug for CmpLogStage<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CmpLogStage")
            .field("iterations", &self.mutants.iterations)
            .finish_non_exhaustive()
    }
}

impl<M> CmpLogStage<M> {
    /// Traces each scheduled input, then tries up to `mutants.iterations` replacement mutants
    /// (0 turns the stage off, tracing included).
    #[must_use]
    pub fn new(mutants: HavocStage<M>) -> Self {
        CmpLogStage {
            // The operands are read by `traced_operands`, not by LibAFL's full-map scan.
            observer: libafl_targets::CmpLogObserver::new("cmplog", false),
            mutants,
            traced: BytesInput::new(Vec::new()),
            cache: TracedCache::default(),
        }
    }
}

impl<E, EM, M, S, Z> Stage<E, EM, S, Z> for CmpLogStage<M>
where
    E: ObservedExecutor,
    M: Mutator<BytesInput, S>,
    S: FuzzState + HasCurrentCorpusId,
    Z: Evaluator<E, EM, BytesInput, S> + ExecutesInput<E, EM, BytesInput, S>,
{
    fn perform(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut S,
        manager: &mut EM,
    ) -> Result<(), Error> {
        if self.mutants.iterations == 0 || state.stop_requested() {
            return Ok(());
        }
        // Tracing resets a 34 MB comparison map: do it once per corpus entry and keep the
        // operands of recent entries. They move (not copy) into the state for the mutants, and
        // back.
        let id = state
            .current_corpus_id()?
            .ok_or_else(|| Error::empty("no corpus entry is scheduled"))?;
        let known = self.cache.take(id);
        let list = match known {
            Some(list) => list,
            None => {
                load_current_into(state, self.traced.as_mut())?;
                self.observer.pre_exec(state, &self.traced)?;
                let exit_kind = fuzzer.execute_input(state, executor, manager, &self.traced)?;
                self.observer.post_exec(state, &self.traced, &exit_kind)?;
                if exit_kind == ExitKind::Ok {
                    distinct_operands(traced_operands(), MAX_TRACED_OPERANDS)
                } else {
                    Vec::new()
                }
            }
        };
        let list = if list.is_empty() {
            list
        } else {
            state.metadata_or_insert_with(CmpValuesMetadata::new).list = list;
            self.mutants.perform(fuzzer, executor, state, manager)?;
            std::mem::take(&mut state.metadata_mut::<CmpValuesMetadata>()?.list)
        };
        self.cache.put(id, list);
        Ok(())
    }
}

/// The comparison sites a traced run hit, over LibAFL's CmpLog map: LibAFL reads the operands
/// through this view, which lists only the sites with hits, found by scanning the map's headers
/// a word at a time. LibAFL's own reader visits all 65 536 sites through the map's accessors,
/// which costs more than a fast target's execution; after each restart a process traces again.
struct HitSites<'a> {
    map: &'a libafl_targets::CmpLogMap,
    hit: Vec<usize>,
}

impl<'a> HitSites<'a> {
    fn of(map: &'a libafl_targets::CmpLogMap) -> Self {
        // The map is `repr(C)` and starts with one 4-byte header a site (`hits: u16`, then
        // shape and kind): two headers a word, zero when the site was not hit since the reset.
        const HEADERS: usize = libafl_targets::CMPLOG_MAP_W;
        // SAFETY: the headers are the map's first HEADERS * 4 bytes, plain integers.
        let words = unsafe {
            std::slice::from_raw_parts(std::ptr::from_ref(map).cast::<u64>(), HEADERS / 2)
        };
        let mut hit = Vec::new();
        for (i, &word) in words.iter().enumerate() {
            if word & 0xffff != 0 {
                hit.push(2 * i);
            }
            if (word >> 32) & 0xffff != 0 {
                hit.push(2 * i + 1);
            }
        }
        HitSites { map, hit }
    }
}

impl std::fmt::Debug for HitSites<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HitSites").field("hit", &self.hit).finish()
    }
}

impl libafl::observers::CmpMap for HitSites<'_> {
    fn len(&self) -> usize {
        self.hit.len()
    }

    fn executions_for(&self, idx: usize) -> usize {
        self.map.executions_for(self.hit[idx])
    }

    fn usable_executions_for(&self, idx: usize) -> usize {
        self.map.usable_executions_for(self.hit[idx])
    }

    fn values_of(&self, idx: usize, execution: usize) -> Option<libafl::observers::CmpValues> {
        self.map.values_of(self.hit[idx], execution)
    }

    fn reset(&mut self) -> Result<(), Error> {
        Ok(())
    }
}

/// The operands of the comparisons the last traced run logged (LibAFL's filtering of loop
/// counters included).
fn traced_operands() -> Vec<libafl::observers::CmpValues> {
    // SAFETY: read after the traced run, while nothing writes the map.
    let map = unsafe { &*std::ptr::addr_of!(libafl_targets::CMPLOG_MAP) };
    let mut sites = HitSites::of(map);
    let mut metadata = CmpValuesMetadata::new();
    metadata.add_from(sites.hit.len(), &mut sites);
    metadata.list
}

/// Copies the scheduled input into `buffer` (reused: no allocation per scheduled input) and says
/// whether its single-byte expansions were all tried already.
fn load_current_into<S: HasCurrentTestcase<BytesInput>>(
    state: &S,
    buffer: &mut Vec<u8>,
) -> Result<bool, Error> {
    let testcase = state.current_testcase()?;
    let input = testcase
        .input()
        .as_ref()
        .ok_or_else(|| Error::empty("the scheduled testcase has no input"))?;
    buffer.clear();
    buffer.extend_from_slice(input.as_ref());
    Ok(testcase.has_metadata::<ByteExpansionsTried>())
}

/// Writes the output directory every few seconds and ends the run at its limits.
#[derive(Debug)]
pub struct ReportStage {
    reporter: Reporter,
    limits: Limits,
    every: Duration,
}

/// When the output directory was last written (state metadata, so that a process restarted
/// after a crash does not rewrite it at once: a target that crashes often restarts the
/// process many times a second).
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
struct LastReport(Duration);

libafl_bolts::impl_serdeany!(LastReport);

impl ReportStage {
    /// Reports through `reporter` at most once per `every`, and checks `limits`.
    #[must_use]
    pub fn new(reporter: Reporter, limits: Limits, every: Duration) -> Self {
        ReportStage {
            reporter,
            limits,
            every,
        }
    }
}

impl<E, EM, S, Z> Stage<E, EM, S, Z> for ReportStage
where
    S: HasMetadata
        + HasExecutions
        + HasStartTime
        + HasImported
        + Stoppable
        + HasSolutions<BytesInput>,
{
    fn perform(
        &mut self,
        _fuzzer: &mut Z,
        _executor: &mut E,
        state: &mut S,
        _manager: &mut EM,
    ) -> Result<(), Error> {
        if self.limits.stop_on_crash && state.metadata::<CrashTable>().is_ok_and(|t| !t.is_empty())
        {
            state.request_stop();
        }
        // The deadline is checked by the engine before every scheduling point, and by
        // `Limits::exhausted` before every execution.
        self.limits.exhausted(state);
        let now = current_time();
        let stopping = state.stop_requested();
        let last = state.metadata_or_insert_with(LastReport::default);
        if now.saturating_sub(last.0) >= self.every || stopping {
            last.0 = now;
            // Reproducers are on disk already; the solutions corpus only grows memory.
            let ids: Vec<_> = state.solutions().ids().collect();
            for id in ids {
                state.solutions_mut().remove(id)?;
            }
            self.reporter
                .report(state)
                .map_err(|e| Error::os_error(std::io::Error::other(e.to_string()), "reporting"))?;
        }
        Ok(())
    }
}

/// Implements [`Restartable`] for stages that keep no progress worth saving: after a restart
/// they start over (expansion and havoc from a freshly scheduled input; crash shrinking keeps its
/// own progress in the crash table; reporting has none).
macro_rules! restart_from_scratch {
    ($($stage:ident $(<$param:ident>)?),+) => {$(
        impl<$($param,)? S> Restartable<S> for $stage $(<$param>)? {
            fn should_restart(&mut self, _state: &mut S) -> Result<bool, Error> {
                Ok(true)
            }

            fn clear_progress(&mut self, _state: &mut S) -> Result<(), Error> {
                Ok(())
            }
        }
    )+};
}

restart_from_scratch!(
    CrashShrinkStage,
    ExpandStage,
    HavocStage<M>,
    CmpLogStage<M>,
    ReportStage
);

/// What running and judging inputs needs of the state.
pub trait RunState: HasExecutions + HasStartTime + Stoppable + HasMetadata {}

impl<S: HasExecutions + HasStartTime + Stoppable + HasMetadata> RunState for S {}

/// What the mutating stages need of the state: also the scheduled input and randomness.
pub trait FuzzState: RunState + HasCurrentTestcase<BytesInput> + HasRand {}

impl<S: RunState + HasCurrentTestcase<BytesInput> + HasRand> FuzzState for S {}

/// An executor whose observers can be looked up by handle.
pub trait ObservedExecutor: HasObservers<Observers: MatchName> {}

impl<E: HasObservers<Observers: MatchName>> ObservedExecutor for E {}

#[cfg(test)]
mod tests {
    use libafl::observers::{CmpValues, CmplogBytes};

    use super::*;

    fn bytes(text: &[u8]) -> CmplogBytes {
        let mut buf = [0; 32];
        buf[..text.len()].copy_from_slice(text);
        CmplogBytes::from_buf_and_len(buf, u8::try_from(text.len()).unwrap())
    }

    #[test]
    fn traced_operands_are_distinct_useful_and_capped() {
        let logged = vec![
            CmpValues::U32((7, 9, false)),
            CmpValues::U32((7, 9, true)),
            CmpValues::U64((7, 9, false)),
            CmpValues::U8((5, 5, false)),
            CmpValues::Bytes((bytes(b"SELECT"), bytes(b"SELEC"))),
            CmpValues::Bytes((bytes(b"SELECT"), bytes(b"SELEC"))),
            CmpValues::Bytes((bytes(b"same"), bytes(b"same"))),
        ];
        let kept = distinct_operands(logged.clone(), 10);
        assert_eq!(
            kept,
            vec![
                CmpValues::U32((7, 9, false)),
                CmpValues::U32((7, 9, true)),
                CmpValues::U64((7, 9, false)),
                CmpValues::Bytes((bytes(b"SELECT"), bytes(b"SELEC"))),
            ],
            "the same comparison once; equal sides never"
        );
        assert_eq!(distinct_operands(logged, 2).len(), 2);
        let many: Vec<CmpValues> = (0..10_000u32)
            .map(|i| CmpValues::U32((i, i + 1, false)))
            .collect();
        let kept = distinct_operands(many, MAX_TRACED_OPERANDS);
        assert_eq!(kept.len(), MAX_TRACED_OPERANDS);
        // Spread over the whole run, not only its first comparisons.
        assert!(matches!(kept.last(), Some(CmpValues::U32((a, _, _))) if *a > 9_000));
    }

    #[test]
    fn traced_operands_come_from_the_sites_that_were_hit() {
        use libafl::observers::CmpMap;
        use libafl_targets::{CMPLOG_ENABLED, CMPLOG_MAP, CMPLOG_MAP_W};
        // SAFETY: this test alone uses the CmpLog map; the logging calls are LibAFL's own.
        unsafe {
            (*std::ptr::addr_of_mut!(CMPLOG_MAP)).reset().unwrap();
            CMPLOG_ENABLED = 1;
            libafl_targets::__libafl_targets_cmplog_instructions(5, 4, 7, 9);
            libafl_targets::__libafl_targets_cmplog_instructions(CMPLOG_MAP_W - 1, 8, 1 << 40, 3);
            libafl_targets::__libafl_targets_cmplog_instructions(CMPLOG_MAP_W - 1, 8, 1 << 41, 3);
            CMPLOG_ENABLED = 0;
        }
        assert_eq!(
            traced_operands(),
            vec![
                CmpValues::U32((7, 9, false)),
                CmpValues::U64((1 << 40, 3, false)),
                CmpValues::U64((1 << 41, 3, false)),
            ]
        );
    }

    #[test]
    fn the_traced_cache_keeps_the_most_recent_entries_only() {
        let mut cache = TracedCache::default();
        let list = || vec![CmpValues::U8((1, 2, false))];
        for i in 0..3 * TRACED_ENTRIES {
            cache.put(CorpusId(i), list());
            // The first entry is scheduled again and again: it stays.
            let first = cache.take(CorpusId(0)).expect("the first entry is kept");
            cache.put(CorpusId(0), first);
        }
        assert_eq!(cache.0.len(), TRACED_ENTRIES);
        assert!(cache.take(CorpusId(1)).is_none(), "old entries leave");
        assert!(cache.take(CorpusId(3 * TRACED_ENTRIES - 1)).is_some());
    }
}
