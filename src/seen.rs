//! The "already run" filter: a blocked bloom filter over the inputs executed so far.
//!
//! The loop revisits the same best inputs and proposes the same expansions and shrink candidates
//! over and over; skipping those that already ran is what keeps it fast. A classic bloom filter
//! sized for millions of inputs touches a dozen random cache lines per query, which costs more
//! than running a fast target, so this one puts all of an input's bits in one 64-byte block:
//! one hash (xxh3), one cache line. Its memory is fixed at construction, so it never grows; as
//! it fills, false positives (inputs wrongly taken as run) rise slowly and only cost missed
//! candidates, never a wrong result.

use libafl::fuzzer::InputFilter;
use libafl::inputs::HasTargetBytes;
use libafl::Error;
use std::collections::BTreeSet;

use libafl_bolts::{hash_std, impl_serdeany};
use serde::{Deserialize, Serialize};

/// Bits set per input inside its block.
const PROBES: u32 = 7;
/// 64-byte blocks: eight `u64` words.
const WORDS_PER_BLOCK: usize = 8;

/// A blocked bloom filter of executed inputs.
#[derive(Debug, Clone)]
pub struct SeenFilter {
    words: Vec<u64>,
    block_mask: usize,
    inserted: u64,
}

impl SeenFilter {
    /// A filter using about `bytes` of memory (rounded down to a power of two, at least 64).
    #[must_use]
    pub fn with_memory(bytes: usize) -> Self {
        let blocks = (bytes / 64).max(1);
        let blocks = if blocks.is_power_of_two() {
            blocks
        } else {
            blocks.next_power_of_two() / 2
        };
        SeenFilter {
            words: vec![0; blocks * WORDS_PER_BLOCK],
            block_mask: blocks - 1,
            inserted: 0,
        }
    }

    /// Marks `bytes` as seen; true when it (probably) was already.
    pub fn check_and_insert(&mut self, bytes: &[u8]) -> bool {
        self.check_and_insert_hash(hash_std(bytes))
    }

    /// [`SeenFilter::check_and_insert`] for an input known by its [`input_hash`].
    pub fn check_and_insert_hash(&mut self, hash: u64) -> bool {
        let block = ((hash >> 32) as usize & self.block_mask) * WORDS_PER_BLOCK;
        let words = &mut self.words[block..block + WORDS_PER_BLOCK];
        // Double hashing inside the block: probe i uses bit (h1 + i * h2) mod 512.
        let (h1, h2) = (hash as u32, ((hash >> 16) as u32) | 1);
        let mut seen = true;
        for i in 0..PROBES {
            let bit = h1.wrapping_add(i.wrapping_mul(h2)) & 511;
            let (word, mask) = ((bit >> 6) as usize, 1u64 << (bit & 63));
            seen &= words[word] & mask != 0;
            words[word] |= mask;
        }
        if !seen {
            self.inserted += 1;
        }
        seen
    }

    /// The number of distinct inputs inserted (approximately: false positives are not counted).
    #[must_use]
    pub fn inserted(&self) -> u64 {
        self.inserted
    }

    /// The memory used, in bytes.
    #[must_use]
    pub fn memory(&self) -> usize {
        self.words.len() * 8
    }
}

/// The hash the filter uses for an input's bytes.
#[must_use]
pub fn input_hash(bytes: &[u8]) -> u64 {
    hash_std(bytes)
}

/// Inputs that ended the process (a signal or a timeout), by [`input_hash`].
///
/// The filter itself is too large to carry across a restart, and without this an input that
/// kills the process would be proposed and run again after every restart, forever. This set is
/// state metadata (restored after a restart) and is loaded into the new process's filter.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct KilledInputs {
    hashes: BTreeSet<u64>,
}

impl_serdeany!(KilledInputs);

impl KilledInputs {
    /// Remembers an input that ended the process.
    pub fn insert(&mut self, hash: u64) {
        self.hashes.insert(hash);
    }

    /// The remembered hashes.
    pub fn hashes(&self) -> impl Iterator<Item = u64> + '_ {
        self.hashes.iter().copied()
    }
}

impl Default for SeenFilter {
    /// 16 MiB: about eight million inputs at under 1% false positives.
    fn default() -> Self {
        SeenFilter::with_memory(16 << 20)
    }
}

impl<EM, I: HasTargetBytes, S> InputFilter<EM, I, S> for SeenFilter {
    fn should_execute(
        &mut self,
        input: &I,
        _state: &mut S,
        _manager: &mut EM,
    ) -> Result<bool, Error> {
        Ok(!self.check_and_insert(&input.target_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_what_it_saw() {
        let mut seen = SeenFilter::with_memory(1 << 16);
        assert!(!seen.check_and_insert(b"abc"));
        assert!(seen.check_and_insert(b"abc"));
        assert!(!seen.check_and_insert(b"abd"));
        assert!(!seen.check_and_insert(b""));
        assert!(seen.check_and_insert(b""));
        assert_eq!(seen.inserted(), 3);
    }

    #[test]
    fn false_positives_stay_rare_at_design_load() {
        // 64 KiB at 16 bits per input: 32768 inputs.
        let mut seen = SeenFilter::with_memory(1 << 16);
        for i in 0u32..32768 {
            seen.check_and_insert(&i.to_le_bytes());
        }
        let false_positives = (1_000_000u32..1_010_000)
            .filter(|i| seen.check_and_insert(&i.to_le_bytes()))
            .count();
        assert!(false_positives < 300, "{false_positives} of 10000");
    }

    #[test]
    fn killed_inputs_preload_a_new_filter() {
        let mut killed = KilledInputs::default();
        killed.insert(input_hash(b"A!"));
        let mut seen = SeenFilter::with_memory(1 << 16);
        for hash in killed.hashes() {
            seen.check_and_insert_hash(hash);
        }
        assert!(
            seen.check_and_insert(b"A!"),
            "a killing input is never run again"
        );
        assert!(!seen.check_and_insert(b"A?"));
    }

    #[test]
    fn memory_is_fixed() {
        let seen = SeenFilter::with_memory(1000);
        assert_eq!(seen.memory(), 512);
        assert_eq!(SeenFilter::default().memory(), 16 << 20);
    }
}
