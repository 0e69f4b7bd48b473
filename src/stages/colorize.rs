//! Colorization (after AFL++'s RedQueen): before the CmpLog stage traces a corpus entry, the
//! entry's bytes whose values do not change its path are replaced by random ones.
//!
//! Input-to-state replacement writes a logged operand over the first place, from a random
//! offset on, where the input holds the other one. labelfuzz's entries are shortlex-minimal,
//! mostly zero bytes, so the bytes a comparison read occur at many places and the mutant
//! mostly writes at a wrong one. In a colorized input they occur about once: where the target
//! read them.

use libafl::executors::{ExitKind, HasObservers};
use libafl::inputs::BytesInput;
use libafl::state::HasRand;
use libafl::{Error, ExecutesInput};
use libafl_bolts::rands::Rand;
use libafl_bolts::tuples::{Handle, MatchName, MatchNameRef};
use libafl_bolts::ToSlice;

use crate::feedback::EdgesObserver;
use crate::labels::{collect_edge_labels, Label};

/// The most executions colorizing one input may cost, besides the one that records its path.
/// An entry is colorized once, when the CmpLog stage first traces it.
pub const MAX_COLORIZE_EXECUTIONS: usize = 256;

/// Colorizes inputs, comparing paths by the labels of the edges observer (edges with their
/// hit-count buckets).
#[derive(Debug)]
pub struct Colorizer {
    edges: Handle<EdgesObserver>,
    reference: Vec<Label>,
    labels: Vec<Label>,
    candidate: BytesInput,
}

impl Colorizer {
    /// A colorizer reading paths from the observer `edges`.
    #[must_use]
    pub fn new(edges: Handle<EdgesObserver>) -> Self {
        Colorizer {
            edges,
            reference: Vec::new(),
            labels: Vec::new(),
            candidate: BytesInput::new(Vec::new()),
        }
    }

    /// `input` with every byte that can be changed without changing its path changed to a
    /// random value: ranges are tried whole, and halved when their change shows another path
    /// (or a failure), within [`MAX_COLORIZE_EXECUTIONS`] and twice the input's length.
    /// `input` as it is when its own run fails.
    ///
    /// # Errors
    /// LibAFL's, from running the target.
    pub fn colorize<E, EM, S, Z>(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut S,
        manager: &mut EM,
        input: &[u8],
    ) -> Result<Vec<u8>, Error>
    where
        E: HasObservers<Observers: MatchName>,
        S: HasRand,
        Z: ExecutesInput<E, EM, BytesInput, S>,
    {
        let mut colored = input.to_vec();
        if input.is_empty() {
            return Ok(colored);
        }
        self.candidate.as_mut().clone_from(&colored);
        if !self.run_path(fuzzer, executor, state, manager)? {
            return Ok(colored);
        }
        std::mem::swap(&mut self.reference, &mut self.labels);
        // The ranges still to try, the next one last.
        let mut ranges: Vec<std::ops::Range<usize>> = Vec::with_capacity(64);
        ranges.push(0..input.len());
        for _ in 0..MAX_COLORIZE_EXECUTIONS.min(2 * input.len()) {
            let Some(range) = ranges.pop() else {
                break;
            };
            let candidate: &mut Vec<u8> = self.candidate.as_mut();
            candidate.clone_from(&colored);
            for i in range.clone() {
                candidate[i] = other_byte(state.rand_mut().next(), input[i]);
            }
            if self.run_path(fuzzer, executor, state, manager)? && self.labels == self.reference {
                colored.clone_from(self.candidate.as_ref());
            } else if range.len() > 1 {
                let middle = range.start + range.len() / 2;
                ranges.push(middle..range.end);
                ranges.push(range.start..middle);
            }
        }
        Ok(colored)
    }

    /// Runs the candidate and reads its path into `labels`; false when the run failed.
    fn run_path<E, EM, S, Z>(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut S,
        manager: &mut EM,
    ) -> Result<bool, Error>
    where
        E: HasObservers<Observers: MatchName>,
        Z: ExecutesInput<E, EM, BytesInput, S>,
    {
        let exit_kind = fuzzer.execute_input(state, executor, manager, &self.candidate)?;
        if exit_kind != ExitKind::Ok {
            return Ok(false);
        }
        let observers = executor.observers();
        let edges = observers
            .get(&self.edges)
            .ok_or_else(|| Error::key_not_found("the edges observer is missing"))?;
        self.labels.clear();
        collect_edge_labels(edges.to_slice(), &mut self.labels);
        Ok(true)
    }
}

/// A byte from `random` that differs from `original`.
fn other_byte(random: u64, original: u8) -> u8 {
    let byte = random.to_le_bytes()[0];
    if byte == original {
        !byte
    } else {
        byte
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_random_byte_never_equals_the_original() {
        for random in 0..=u64::from(u8::MAX) {
            for original in [0u8, 7, 255] {
                assert_ne!(other_byte(random, original), original);
            }
        }
        assert_eq!(other_byte(0x41, 0), 0x41);
    }
}
