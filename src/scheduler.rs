//! The scheduler: pick a label (uniformly at random, or weighted by rarity and payoff with
//! `--schedule rare`: see `labelfuzz-core`'s `schedule`) and fuzz its best input. With
//! `--charge-exec-time 1` a drawn label whose best input is slower per execution than the run's
//! average is kept only in proportion (`labelfuzz-core`'s `pick_cost`), and drawn again
//! otherwise.
//!
//! It also keeps LibAFL's corpus equal to the label table: a new testcase is recorded in the
//! table as it is added, and testcases that no longer hold any label leave the corpus at the
//! next scheduling point (never while a stage may still be using them).

use std::num::NonZeroUsize;
use std::time::Instant;

use libafl::corpus::{Corpus, CorpusId};
use libafl::schedulers::{RemovableScheduler, Scheduler};
use libafl::state::{HasCorpus, HasExecutions, HasRand};
use libafl::{Error, HasMetadata};
use libafl_bolts::rands::Rand;

use labelfuzz_core::pick_cost::PickCosts;
use labelfuzz_core::schedule::{LabelStats, Schedule};
use labelfuzz_core::Label;

use crate::feedback::InputLabels;
use crate::order::Simplicity;
use crate::table::CorpusTable;

/// The counts behind the rare-label schedule, kept in the state so that they survive restarts.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ScheduleStats(pub LabelStats);

libafl_bolts::impl_serdeany!(ScheduleStats);

/// How many draws a pick makes at most before it keeps the last one, however slow.
const MOST_DRAWS: usize = 8;

/// Chooses a label and returns the corpus id of its best input.
#[derive(Debug, Default, Clone)]
pub struct LabelScheduler {
    schedule: Schedule,
    /// Whether slow entries are kept less often when drawn (`--charge-exec-time`).
    charge_exec_time: bool,
    costs: PickCosts,
    /// The entry picked last, when, and the run's executions then: its pick ends at the next.
    last_pick: Option<(CorpusId, Instant, u64)>,
}

impl LabelScheduler {
    /// A scheduler that picks labels by `schedule`.
    #[must_use]
    pub fn new(schedule: Schedule) -> Self {
        LabelScheduler {
            schedule,
            ..LabelScheduler::default()
        }
    }

    /// Keeps a drawn entry slower than the run's average only in proportion to its speed.
    #[must_use]
    pub fn charging_exec_time(mut self, on: bool) -> Self {
        self.charge_exec_time = on;
        self
    }

    /// Draws a label by the schedule (not yet counted as picked).
    fn draw<S>(&self, state: &mut S, count: NonZeroUsize) -> Result<Label, Error>
    where
        S: HasMetadata + HasRand,
    {
        match self.schedule {
            Schedule::Uniform => {
                let pick = state.rand_mut().below(count);
                Ok(state.metadata::<CorpusTable>()?.labels()[pick])
            }
            Schedule::Rare => {
                let unit = state.rand_mut().next_float();
                state.metadata_or_insert_with(ScheduleStats::default);
                // Every label of the table can be picked, also those of inputs added before
                // the counts began (a run resumed from a uniform one).
                if state.metadata::<ScheduleStats>()?.0.len() < count.get() {
                    let labels = state.metadata::<CorpusTable>()?.labels().to_vec();
                    state.metadata_mut::<ScheduleStats>()?.0.know(&labels);
                }
                state
                    .metadata::<ScheduleStats>()?
                    .0
                    .pick_rare(unit)
                    .ok_or_else(|| Error::illegal_state("labels without counts"))
            }
        }
    }
}

impl<I, S> RemovableScheduler<I, S> for LabelScheduler {}

impl<I, S> Scheduler<I, S> for LabelScheduler
where
    I: Simplicity,
    S: HasCorpus<I> + HasMetadata + HasRand + HasExecutions,
{
    fn on_add(&mut self, state: &mut S, id: CorpusId) -> Result<(), Error> {
        let (key, labels) = {
            let mut testcase = state.corpus().get(id)?.borrow_mut();
            // Taken, not copied: the table is the only place labels are needed from now on, and
            // an input of a large target can show thousands.
            let labels = testcase
                .metadata_map_mut()
                .remove::<InputLabels>()
                .map(|l| l.0)
                .unwrap_or_default();
            let input = testcase
                .input()
                .as_ref()
                .ok_or_else(|| Error::empty("a testcase was added without its input"))?;
            (input.simplicity_key().into_owned(), labels)
        };
        if self.schedule == Schedule::Rare {
            state
                .metadata_or_insert_with(ScheduleStats::default)
                .0
                .added(&labels);
        }
        let table = state.metadata_mut::<CorpusTable>()?;
        let recorded = table.record(&key, id, &labels);
        if recorded.improved.is_empty() {
            // Possible when two identical inputs race in (e.g. from another client): drop it.
            table.take_pending_evictions();
            state.corpus_mut().remove(id)?;
        }
        Ok(())
    }

    fn next(&mut self, state: &mut S) -> Result<CorpusId, Error> {
        let now = Instant::now();
        let executions = *state.executions();
        if let Some((id, at, before)) = self.last_pick.take() {
            self.costs.record(
                id.into(),
                now.saturating_duration_since(at),
                executions.saturating_sub(before),
            );
        }
        for id in state
            .metadata_mut::<CorpusTable>()?
            .take_pending_evictions()
        {
            self.costs.forget(id.into());
            // Already gone is fine: the same id may have been evicted twice over restarts.
            let _ = state.corpus_mut().remove(id);
        }
        let count = NonZeroUsize::new(state.metadata::<CorpusTable>()?.label_count())
            .ok_or_else(|| Error::empty("no label has been seen yet"))?;
        let mut draws = 0;
        let (label, id) = loop {
            let label = self.draw(state, count)?;
            let id = state
                .metadata::<CorpusTable>()?
                .best(label)
                .map(|entry| entry.corpus_id)
                .ok_or_else(|| Error::illegal_state("a present label has no best input"))?;
            draws += 1;
            if !self.charge_exec_time
                || draws == MOST_DRAWS
                || state.rand_mut().next_float() < self.costs.acceptance(id.into())
            {
                break (label, id);
            }
        };
        if self.schedule == Schedule::Rare {
            state.metadata_mut::<ScheduleStats>()?.0.picked(label);
        }
        self.last_pick = Some((id, now, executions));
        self.set_current_scheduled(state, Some(id))?;
        Ok(id)
    }

    fn set_current_scheduled(
        &mut self,
        state: &mut S,
        next_id: Option<CorpusId>,
    ) -> Result<(), Error> {
        *state.corpus_mut().current_mut() = next_id;
        Ok(())
    }
}
