//! The scheduler: pick a label (uniformly at random, or weighted by rarity and payoff with
//! `--schedule rare`: see `labelfuzz-core`'s `schedule`) and fuzz its best input.
//!
//! It also keeps LibAFL's corpus equal to the label table: a new testcase is recorded in the
//! table as it is added, and testcases that no longer hold any label leave the corpus at the
//! next scheduling point (never while a stage may still be using them).

use std::num::NonZeroUsize;

use libafl::corpus::{Corpus, CorpusId};
use libafl::schedulers::{RemovableScheduler, Scheduler};
use libafl::state::{HasCorpus, HasRand};
use libafl::{Error, HasMetadata};
use libafl_bolts::rands::Rand;

use labelfuzz_core::schedule::{LabelStats, Schedule};

use crate::feedback::InputLabels;
use crate::order::Simplicity;
use crate::table::CorpusTable;

/// The counts behind the rare-label schedule, kept in the state so that they survive restarts.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ScheduleStats(pub LabelStats);

libafl_bolts::impl_serdeany!(ScheduleStats);

/// Chooses a label and returns the corpus id of its best input.
#[derive(Debug, Default, Clone)]
pub struct LabelScheduler {
    schedule: Schedule,
}

impl LabelScheduler {
    /// A scheduler that picks labels by `schedule`.
    #[must_use]
    pub fn new(schedule: Schedule) -> Self {
        LabelScheduler { schedule }
    }
}

impl<I, S> RemovableScheduler<I, S> for LabelScheduler {}

impl<I, S> Scheduler<I, S> for LabelScheduler
where
    I: Simplicity,
    S: HasCorpus<I> + HasMetadata + HasRand,
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
        for id in state
            .metadata_mut::<CorpusTable>()?
            .take_pending_evictions()
        {
            // Already gone is fine: the same id may have been evicted twice over restarts.
            let _ = state.corpus_mut().remove(id);
        }
        let table = state.metadata::<CorpusTable>()?;
        let count = NonZeroUsize::new(table.label_count())
            .ok_or_else(|| Error::empty("no label has been seen yet"))?;
        let label = match self.schedule {
            Schedule::Uniform => {
                let pick = state.rand_mut().below(count);
                state.metadata::<CorpusTable>()?.labels()[pick]
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
                let stats = &mut state.metadata_mut::<ScheduleStats>()?.0;
                let label = stats
                    .pick_rare(unit)
                    .ok_or_else(|| Error::illegal_state("labels without counts"))?;
                stats.picked(label);
                label
            }
        };
        let table = state.metadata::<CorpusTable>()?;
        let id = table
            .best(label)
            .map(|entry| entry.corpus_id)
            .ok_or_else(|| Error::illegal_state("a present label has no best input"))?;
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
