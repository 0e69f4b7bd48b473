//! The crash-shrink stage: finishes crash shrinks that a restart interrupted or that ran out of
//! the time slow crashes may take; and, once the run reached its limits, those still unfinished
//! within the end's allowance.

use std::time::Duration;

use libafl::stages::Stage;
use libafl::Error;

use crate::config::Limits;
use crate::consider::{
    end_slow_shrinks, slow_shrink_allowed, Considerer, ObservedExecutor, Run, RunFuzzer, RunState,
};
use crate::crashes::CrashTable;

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
    Z: RunFuzzer<E, EM, S>,
{
    fn perform(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut S,
        manager: &mut EM,
    ) -> Result<(), Error> {
        self.shrink_unfinished(&mut Run {
            fuzzer,
            executor,
            state,
            manager,
        })
    }
}

impl CrashShrinkStage {
    /// Shrinks unfinished reproducers, slow ones while their budget lasts.
    fn shrink_unfinished<E, EM, S, Z>(
        &mut self,
        run: &mut Run<'_, E, EM, S, Z>,
    ) -> Result<(), Error>
    where
        E: ObservedExecutor,
        S: RunState,
        Z: RunFuzzer<E, EM, S>,
    {
        loop {
            // Timeouts and out-of-memory crashes only while the run has time for them; each
            // one left over is resumed at a later pass of this stage.
            let slow_too = slow_shrink_allowed(run.state);
            let Some((label, input)) = run.state.metadata::<CrashTable>()?.unshrunk(slow_too)
            else {
                break;
            };
            if run.state.stop_requested() {
                break;
            }
            let gates = run
                .state
                .metadata::<CrashTable>()?
                .get(label)
                .map(|r| r.gates.clone());
            self.considerer
                .watch_gates(run.state, gates.as_deref().unwrap_or_default());
            let shrunk = self.considerer.shrink_crashes(run, vec![(input, label)]);
            self.considerer.watch_gates(run.state, &[]);
            shrunk?;
        }
        Ok(())
    }
}

/// Once the run reached its limits: finishes the crash shrinks it left unfinished (a slow
/// crash's that ran out of budget, one the limits cut short), within
/// [`crate::shrink_budget::SlowShrinkBudget::END_ALLOWANCE_SECS`]; what is still unfinished
/// then stays so, and the summary says which. `considerer`'s own limits are replaced by the
/// allowance's.
pub fn finish_crash_shrinks<E, EM, S, Z>(
    considerer: Considerer,
    run: &mut Run<'_, E, EM, S, Z>,
) -> Result<(), Error>
where
    E: ObservedExecutor,
    S: RunState,
    Z: RunFuzzer<E, EM, S>,
{
    let unfinished = run
        .state
        .metadata::<CrashTable>()
        .is_ok_and(|t| t.unshrunk(true).is_some());
    if !unfinished {
        return Ok(());
    }
    let ends_by = end_slow_shrinks(run.state);
    let start = run.state.start_time().as_secs_f64();
    let allowance = Duration::from_secs_f64((ends_by - start).max(0.0));
    let mut stage =
        CrashShrinkStage::new(considerer.with_limits(Limits::new(None, Some(allowance), false)));
    run.state.discard_stop_request();
    let shrunk = stage.shrink_unfinished(run);
    run.state.request_stop();
    shrunk
}
