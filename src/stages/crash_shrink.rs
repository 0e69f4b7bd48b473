//! The crash-shrink stage: finishes crash shrinks that a restart interrupted or that ran out of
//! the time slow crashes may take.

use libafl::stages::Stage;
use libafl::Error;

use crate::consider::{
    slow_shrink_allowed, Considerer, ObservedExecutor, Run, RunFuzzer, RunState,
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
        let mut run = Run {
            fuzzer,
            executor,
            state,
            manager,
        };
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
            let shrunk = self
                .considerer
                .shrink_crashes(&mut run, vec![(input, label)]);
            self.considerer.watch_gates(run.state, &[]);
            shrunk?;
        }
        Ok(())
    }
}
