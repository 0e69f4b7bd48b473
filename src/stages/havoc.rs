//! The havoc stage: LibAFL havoc mutants of the scheduled input, each considered.

use libafl::inputs::BytesInput;
use libafl::mutators::{MutationResult, Mutator};
use libafl::stages::Stage;
use libafl::Error;

use super::load_current_into;
use crate::consider::{Considerer, FuzzState, ObservedExecutor, Run, RunFuzzer};

/// Tries LibAFL havoc mutants of the scheduled input, each through [`Considerer::consider`], so
/// an improving mutant is shrunk at once like any other.
#[derive(Debug)]
pub struct HavocStage<M> {
    considerer: Considerer,
    mutator: M,
    pub(super) iterations: usize,
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
    Z: RunFuzzer<E, EM, S>,
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
        self.try_mutants(fuzzer, executor, state, manager)
    }
}

impl<M> HavocStage<M> {
    /// Tries the mutants of `base` instead of the scheduled input's (the CmpLog stage's
    /// colorized copy of it).
    ///
    /// # Errors
    /// LibAFL's, from running the target.
    pub(super) fn perform_from<E, EM, S, Z>(
        &mut self,
        base: &[u8],
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut S,
        manager: &mut EM,
    ) -> Result<(), Error>
    where
        E: ObservedExecutor,
        M: Mutator<BytesInput, S>,
        S: FuzzState,
        Z: RunFuzzer<E, EM, S>,
    {
        if self.iterations == 0 || state.stop_requested() {
            return Ok(());
        }
        self.base.clear();
        self.base.extend_from_slice(base);
        self.try_mutants(fuzzer, executor, state, manager)
    }

    /// Up to `iterations` mutants of `base`, each considered, until one improves a label.
    fn try_mutants<E, EM, S, Z>(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut S,
        manager: &mut EM,
    ) -> Result<(), Error>
    where
        E: ObservedExecutor,
        M: Mutator<BytesInput, S>,
        S: FuzzState,
        Z: RunFuzzer<E, EM, S>,
    {
        let mut run = Run {
            fuzzer,
            executor,
            state,
            manager,
        };
        for _ in 0..self.iterations {
            let bytes: &mut Vec<u8> = self.mutant.as_mut();
            bytes.clear();
            bytes.extend_from_slice(&self.base);
            if self.mutator.mutate(run.state, &mut self.mutant)? == MutationResult::Skipped {
                continue;
            }
            let bytes: &mut Vec<u8> = self.mutant.as_mut();
            bytes.truncate(self.max_len);
            let improved = self
                .considerer
                .consider(&mut run, self.mutant.as_ref(), false)?;
            self.mutator.post_exec(run.state, None)?;
            if improved || run.state.stop_requested() {
                break;
            }
        }
        Ok(())
    }
}
