//! The expand stage: the seed's expansions of the scheduled input (random bytes appended, then
//! each single byte value), each considered, until one improves a label.

use std::time::{Duration, Instant};

use libafl::stages::Stage;
use libafl::{Error, HasMetadata};

use super::{load_current_into, ByteExpansionsTried};
use crate::consider::{Considerer, FuzzState, ObservedExecutor, Run, RunFuzzer};
use crate::mutators::Expansions;

/// Tries the expansions of the scheduled input until one improves a label.
#[derive(Debug)]
pub struct ExpandStage {
    considerer: Considerer,
    max_len: usize,
    /// The dictionary's tokens, shortest first (appended after the single bytes).
    tokens: std::sync::Arc<[Vec<u8>]>,
    base: Vec<u8>,
    candidate: Vec<u8>,
    /// Also appends repeated-byte runs and the input doubled (`--regular-runs 1`).
    regular_runs: bool,
    /// The last expansion pass ran out of [`PICK_TIME`] before trying them all.
    cut_short: bool,
    /// Watches the scheduled entry's gates while trying its expansions.
    repair: bool,
}

/// The longest one scheduled input's expansions may take. A fast target tries all of them in a
/// few milliseconds; an input that runs for most of a second would take over 20 minutes, and a
/// label whose best input is slow is picked as often as any other.
pub const PICK_TIME: Duration = Duration::from_secs(1);

impl ExpandStage {
    /// A stage expanding inputs up to `max_len` bytes, considering candidates with `considerer`.
    #[must_use]
    pub fn new(considerer: Considerer, max_len: usize) -> Self {
        ExpandStage {
            considerer,
            max_len,
            tokens: std::sync::Arc::new([]),
            base: Vec::new(),
            candidate: Vec::new(),
            regular_runs: false,
            cut_short: false,
            repair: false,
        }
    }
}

impl ExpandStage {
    /// Also appends a repeated-byte run and the input doubled after the random run.
    #[must_use]
    pub fn with_regular_runs(mut self, on: bool) -> Self {
        self.regular_runs = on;
        self
    }

    /// Repairs the expansions of an entry that passes gates, and their shrink candidates, as
    /// havoc repairs its mutants ([`crate::gates`]): shrinking an improvement found by
    /// expansion removes bytes a checksum covers.
    #[must_use]
    pub fn with_repair(mut self, repair: bool) -> Self {
        self.repair = repair;
        self
    }

    /// Also appends each token of `dictionary` after the single bytes (shortest first).
    #[must_use]
    pub fn with_dictionary(mut self, dictionary: &[Vec<u8>]) -> Self {
        let mut tokens: Vec<Vec<u8>> = dictionary
            .iter()
            .filter(|t| !t.is_empty())
            .cloned()
            .collect();
        tokens.sort_by(|a, b| (a.len(), a).cmp(&(b.len(), b)));
        tokens.dedup();
        self.tokens = tokens.into();
        self
    }

    /// Tries the expansions of `self.base` until one improves a label (all single-byte ones
    /// too unless `bytes_tried`), for at most [`PICK_TIME`] when `timed`; true if one did.
    fn expand_base<E, EM, S, Z>(
        &mut self,
        run: &mut Run<'_, E, EM, S, Z>,
        bytes_tried: bool,
        timed: bool,
    ) -> Result<bool, Error>
    where
        E: ObservedExecutor,
        S: FuzzState,
        Z: RunFuzzer<E, EM, S>,
    {
        let mut expansions = if bytes_tried {
            Expansions::random_only(self.max_len)
        } else {
            Expansions::new(self.max_len).with_tokens(self.tokens.clone())
        }
        .with_regular_runs(self.regular_runs);
        let started = Instant::now();
        while expansions.next_into(&self.base, run.state.rand_mut(), &mut self.candidate) {
            let improved =
                self.considerer
                    .consider(run, &self.candidate, expansions.last_was_random())?;
            if improved {
                return Ok(true);
            }
            if run.state.stop_requested() {
                break;
            }
            // The run limits' last clock reading, not a reading per candidate: this loop is
            // the hottest there is.
            let out_of_time = || {
                self.considerer
                    .last_clock_reading()
                    .is_some_and(|t| t.saturating_duration_since(started) > PICK_TIME)
            };
            if timed && out_of_time() {
                self.cut_short = true;
                break;
            }
        }
        Ok(false)
    }

    /// Expands the empty input, which is in no label's corpus entry when the harness rejects
    /// it (libFuzzer's -1, `Corpus::Reject`): until some input shows a label, the run grows
    /// from there. One pass: true if a label appeared.
    ///
    /// # Errors
    /// When an execution fails in LibAFL.
    pub fn expand_empty<E, EM, S, Z>(
        &mut self,
        run: &mut Run<'_, E, EM, S, Z>,
        first_pass: bool,
    ) -> Result<bool, Error>
    where
        E: ObservedExecutor,
        S: FuzzState,
        Z: RunFuzzer<E, EM, S>,
    {
        self.base.clear();
        // Untimed: until some input shows a label there is nothing else to run.
        self.expand_base(run, !first_pass, false)
    }
}

impl<E, EM, S, Z> Stage<E, EM, S, Z> for ExpandStage
where
    E: ObservedExecutor,
    S: FuzzState,
    Z: RunFuzzer<E, EM, S>,
{
    fn perform(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut S,
        manager: &mut EM,
    ) -> Result<(), Error> {
        let bytes_tried = load_current_into(state, &mut self.base)?;
        self.cut_short = false;
        self.considerer.watch_scheduled_gates(state, self.repair)?;
        let mut run = Run {
            fuzzer,
            executor,
            state,
            manager,
        };
        let expanded = self.expand_base(&mut run, bytes_tried, true);
        self.considerer.watch_gates(state, &[]);
        let improved = expanded?;
        if !improved && !bytes_tried && !self.cut_short && !state.stop_requested() {
            if let Ok(mut testcase) = state.current_testcase_mut() {
                testcase.add_metadata(ByteExpansionsTried);
            }
        }
        Ok(())
    }
}
