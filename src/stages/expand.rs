//! The expand stage: the seed's expansions of the scheduled input (random bytes appended, then
//! each single byte value), each considered, until one improves a label.

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
        let mut expansions = if bytes_tried {
            Expansions::random_only(self.max_len)
        } else {
            Expansions::new(self.max_len)
        };
        let mut improved = false;
        let mut run = Run {
            fuzzer,
            executor,
            state,
            manager,
        };
        while expansions.next_into(&self.base, run.state.rand_mut(), &mut self.candidate) {
            improved = self.considerer.consider(
                &mut run,
                &self.candidate,
                expansions.last_was_random(),
            )?;
            if improved || run.state.stop_requested() {
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
