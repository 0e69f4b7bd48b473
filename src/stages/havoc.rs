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
    /// With a colorized `base`: the scheduled input it is a copy of, which each mutant's
    /// changes are carried onto (empty otherwise).
    original: Vec<u8>,
    mutant: BytesInput,
    /// Whether mutants of an entry that passes gates are repaired ([`crate::gates`]).
    repair: bool,
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
            original: Vec::new(),
            mutant: BytesInput::new(Vec::new()),
            repair: false,
        }
    }

    /// Repairs the mutants of an entry that passes gates: each is run with the gates'
    /// comparisons watched, and what the program computed at a gate is written over the field
    /// of a mutant that failed it, which is then run too, and so are its shrink candidates
    /// ([`crate::gates`]).
    #[must_use]
    pub fn with_repair(mut self, repair: bool) -> Self {
        self.repair = repair;
        self
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
        self.original.clear();
        self.considerer.watch_scheduled_gates(state, self.repair)?;
        let tried = self.try_mutants(fuzzer, executor, state, manager);
        self.considerer.watch_gates(state, &[]);
        tried
    }
}

impl<M> HavocStage<M> {
    /// Tries the mutants of `colored`, the CmpLog stage's colorized copy of the scheduled
    /// input, with each mutant's changes carried onto the scheduled input itself: what is run,
    /// and shrunk when it improves a label, holds none of the copy's random bytes (shrinking
    /// them away cost libpng most of its executions).
    ///
    /// # Errors
    /// LibAFL's, from running the target.
    pub(super) fn perform_colored<E, EM, S, Z>(
        &mut self,
        colored: &[u8],
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
        load_current_into(state, &mut self.original)?;
        self.base.clear();
        self.base.extend_from_slice(colored);
        self.considerer.watch_gates(state, &[]);
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
            if !self.original.is_empty() {
                carry_onto_original(&self.base, &self.original, bytes);
            }
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

/// Turns `mutant`, a mutant of `colored`, into the same mutant of `original` (of which `colored`
/// is a copy with some bytes changed): where the mutant left `colored`'s byte, `original`'s
/// goes back. A mutant of another length (a replacement that was not in place) stays as it is.
fn carry_onto_original(colored: &[u8], original: &[u8], mutant: &mut [u8]) {
    if mutant.len() != colored.len() || original.len() != colored.len() {
        return;
    }
    for ((byte, &colored), &original) in mutant.iter_mut().zip(colored).zip(original) {
        if *byte == colored {
            *byte = original;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mutant_of_the_colorized_copy_keeps_only_its_own_changes() {
        let original = [0, 0, 0, 0, 0, 0];
        let colored = [0x3c, 0x91, 0x07, 0xe2, 0x55, 0x18];
        // Input-to-state wrote 0x7f7f where the target read 0x07e2.
        let mut mutant = [0x3c, 0x91, 0x7f, 0x7f, 0x55, 0x18];
        carry_onto_original(&colored, &original, &mut mutant);
        assert_eq!(mutant, [0, 0, 0x7f, 0x7f, 0, 0]);
        let mut longer = vec![0x3c, 0x91, 0x07, 0xe2, 0x55, 0x18, 1];
        carry_onto_original(&colored, &original, &mut longer);
        assert_eq!(
            longer,
            [0x3c, 0x91, 0x07, 0xe2, 0x55, 0x18, 1],
            "left as it is"
        );
    }
}
