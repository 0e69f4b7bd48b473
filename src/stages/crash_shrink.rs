//! The crash-shrink stage: finishes crash shrinks a restart interrupted.

use libafl::inputs::BytesInput;
use libafl::stages::Stage;
use libafl::{Error, Evaluator};

use crate::crashes::CrashTable;

use crate::consider::{Considerer, ObservedExecutor, RunState};

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
