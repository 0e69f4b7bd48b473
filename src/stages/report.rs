//! The report stage: writes the output directory every few seconds and ends the run at its limits.

use std::time::Duration;

use libafl::corpus::Corpus;
use libafl::inputs::BytesInput;
use libafl::stages::Stage;
use libafl::state::{HasExecutions, HasImported, HasSolutions, HasStartTime, Stoppable};
use libafl::{Error, HasMetadata};
use libafl_bolts::current_time;

use crate::config::Limits;
use crate::crashes::CrashTable;
use crate::report::Reporter;

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
            // A reproducer deleted or replaced while the run lasts is written again.
            if let Ok(table) = state.metadata_mut::<CrashTable>() {
                let written = table
                    .put_back_reproducers(self.reporter.output())
                    .map_err(|e| Error::illegal_state(e.to_string()))?;
                for file in written {
                    crate::say!(
                        "labelfuzz: {file} was deleted or replaced during the run; its \
                         reproducer is written again"
                    );
                }
            }
            crate::memory::return_free_pages();
            self.reporter
                .report(state)
                .map_err(|e| Error::illegal_state(e.to_string()))?;
        }
        Ok(())
    }
}
