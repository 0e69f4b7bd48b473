//! The "already run" filter: a blocked bloom filter over the inputs executed recently.
//!
//! The loop revisits the same best inputs and proposes the same expansions and shrink candidates
//! over and over; skipping those that already ran is what keeps it fast. A classic bloom filter
//! sized for millions of inputs touches a dozen random cache lines per query, which costs more
//! than running a fast target, so this one puts all of an input's bits in one 64-byte block:
//! one hash (xxh3), one cache line.
//!
//! A bloom filter that is never emptied fills up: a fast target proposes about a million inputs
//! a second, and after a few minutes nearly every fresh candidate would be wrongly taken as run.
//! So the filter has two *generations* that share each block: the first half of every 64-byte
//! block belongs to one, the second half to the other. New inputs go into the current
//! generation; a query looks at both halves (still one cache line). When the current generation
//! holds its design load, the older one is cleared and becomes current. The filter thus always
//! remembers at least the last design-load inputs, and its false-positive rate stays below 1%
//! however long the run, at fixed memory. An input found only in the older generation is copied
//! into the current one, so what the loop keeps proposing is never forgotten.

use xxhash_rust::xxh3::xxh3_64;

/// Bits set per input inside its half block.
const PROBES: u32 = 8;
/// 64-byte blocks: eight `u64` words, four per generation.
const WORDS_PER_BLOCK: usize = 8;
/// Words of one generation's half of a block (256 bits).
const WORDS_PER_HALF: usize = WORDS_PER_BLOCK / 2;
/// Bits of the filter per input a generation holds at its design load: with 8 probes in a
/// 256-bit half block, a full generation answers about 0.25% of fresh inputs wrongly, so both
/// together stay under 0.5%.
const BITS_PER_INPUT: usize = 14;

/// A blocked bloom filter of executed inputs, in two generations.
#[derive(Debug)]
pub struct SeenFilter {
    /// A header block (the generation counters), then the filter's blocks.
    memory: Memory,
    block_mask: usize,
    /// Inputs a generation takes before the older one is cleared.
    design_load: u64,
    /// Hashes that must never be forgotten (inputs that killed the process).
    pinned: Vec<u64>,
}

/// Where the filter's words live.
#[derive(Debug)]
enum Memory {
    /// This process's own.
    Owned(Box<[u64]>),
    /// Shared with other processes (the engine shares it with every fuzzing process a
    /// supervisor restarts).
    Shared(&'static mut [u64]),
}

// The header block's words.
/// Which half of each block the current generation uses (0 or 1).
const CURRENT: usize = 0;
/// Inputs in the current generation.
const CURRENT_LOAD: usize = 1;
/// Generations cleared so far.
const ROTATIONS: usize = 2;
/// Distinct inputs inserted over the whole run.
const INSERTED: usize = 3;

impl Clone for SeenFilter {
    /// A copy in this process's own memory.
    fn clone(&self) -> Self {
        SeenFilter {
            memory: Memory::Owned(self.words().into()),
            block_mask: self.block_mask,
            design_load: self.design_load,
            pinned: self.pinned.clone(),
        }
    }
}

/// The number of 64-byte blocks in about `bytes` (a power of two, at least one).
fn blocks_in(bytes: usize) -> usize {
    let blocks = (bytes / 64).max(1);
    if blocks.is_power_of_two() {
        blocks
    } else {
        blocks.next_power_of_two() / 2
    }
}

impl SeenFilter {
    /// A filter using about `bytes` of memory (rounded down to a power of two, at least 64).
    #[must_use]
    pub fn with_memory(bytes: usize) -> Self {
        Self::in_memory(Memory::Owned(vec![0; words_for(bytes)].into_boxed_slice()))
    }

    fn in_memory(memory: Memory) -> Self {
        let mut filter = SeenFilter {
            memory,
            block_mask: 0,
            design_load: 1,
            pinned: Vec::new(),
        };
        let blocks = filter.words().len() / WORDS_PER_BLOCK - 1;
        let bits_per_generation = blocks * WORDS_PER_HALF * 64;
        filter.block_mask = blocks - 1;
        filter.design_load = (bits_per_generation / BITS_PER_INPUT).max(1) as u64;
        filter
    }

    /// A filter in `words`, memory shared with other processes (of [`words_for`] words, zeroed
    /// when first used): what one process inserted, the others see.
    #[must_use]
    pub fn in_shared_words(words: &'static mut [u64]) -> Self {
        Self::in_memory(Memory::Shared(words))
    }

    /// Whether the filter is in shared memory.
    #[must_use]
    pub fn is_shared(&self) -> bool {
        matches!(self.memory, Memory::Shared(_))
    }

    fn words(&self) -> &[u64] {
        match &self.memory {
            Memory::Owned(words) => words,
            Memory::Shared(words) => words,
        }
    }

    fn words_mut(&mut self) -> &mut [u64] {
        match &mut self.memory {
            Memory::Owned(words) => words,
            Memory::Shared(words) => words,
        }
    }

    /// Marks `bytes` as seen; true when it (probably) was already.
    pub fn check_and_insert(&mut self, bytes: &[u8]) -> bool {
        self.check_and_insert_hash(input_hash(bytes))
    }

    /// [`SeenFilter::check_and_insert`] for an input known by its [`input_hash`].
    pub fn check_and_insert_hash(&mut self, hash: u64) -> bool {
        let block = (((hash >> 32) as usize & self.block_mask) + 1) * WORDS_PER_BLOCK;
        let design_load = self.design_load;
        let all = self.words_mut();
        let current_half = all[CURRENT] as usize;
        let words = &mut all[block..block + WORDS_PER_BLOCK];
        let (low, high) = words.split_at_mut(WORDS_PER_HALF);
        let (current, older) = if current_half == 0 {
            (low, &*high)
        } else {
            (high, &*low)
        };
        // The probes' bit positions come from a remix of the hash, eight bits each, so they do
        // not depend on the bits that chose the block.
        let probes = mix(hash);
        let (mut in_current, mut in_older) = (true, true);
        for i in 0..PROBES {
            let bit = (probes >> (8 * i)) as u32 & 255;
            let (word, mask) = ((bit >> 6) as usize, 1u64 << (bit & 63));
            in_current &= current[word] & mask != 0;
            in_older &= older[word] & mask != 0;
            current[word] |= mask;
        }
        if !in_current {
            all[CURRENT_LOAD] += 1;
            if !in_older {
                all[INSERTED] += 1;
            }
            if all[CURRENT_LOAD] >= design_load {
                self.rotate();
            }
        }
        in_current || in_older
    }

    /// Clears the older generation and makes it the current one; pinned inputs go into it.
    fn rotate(&mut self) {
        let all = self.words_mut();
        all[CURRENT] ^= 1;
        let offset = all[CURRENT] as usize * WORDS_PER_HALF;
        for block in all[WORDS_PER_BLOCK..].chunks_exact_mut(WORDS_PER_BLOCK) {
            block[offset..offset + WORDS_PER_HALF].fill(0);
        }
        all[CURRENT_LOAD] = 0;
        all[ROTATIONS] += 1;
        for hash in std::mem::take(&mut self.pinned) {
            self.pin(hash);
        }
    }

    /// Marks an input as seen for the whole run: it survives every generation change.
    pub fn pin(&mut self, hash: u64) {
        self.check_and_insert_hash(hash);
        self.pinned.push(hash);
    }

    /// The number of distinct inputs inserted (approximately: false positives are not counted,
    /// and an input forgotten by a generation change and run again counts twice).
    #[must_use]
    pub fn inserted(&self) -> u64 {
        self.words()[INSERTED]
    }

    /// How many inputs a generation holds before the older one is cleared: the filter
    /// remembers at least this many of the most recent inputs.
    #[must_use]
    pub fn design_load(&self) -> u64 {
        self.design_load
    }

    /// How many times a generation was cleared.
    #[must_use]
    pub fn rotations(&self) -> u64 {
        self.words()[ROTATIONS]
    }

    /// Inputs in the current generation.
    #[cfg(test)]
    fn current_load(&self) -> u64 {
        self.words()[CURRENT_LOAD]
    }

    /// The memory used by the filter's blocks, in bytes.
    #[must_use]
    pub fn memory(&self) -> usize {
        (self.words().len() - WORDS_PER_BLOCK) * 8
    }
}

/// The default filter size.
pub const DEFAULT_MEMORY: usize = 16 << 20;

/// The `u64` words a filter of about `bytes` occupies (its header block included): what
/// [`SeenFilter::in_shared_words`] needs.
#[must_use]
pub fn words_for(bytes: usize) -> usize {
    (blocks_in(bytes) + 1) * WORDS_PER_BLOCK
}

/// A 64-bit finalizer (splitmix64's): every output bit depends on every input bit.
fn mix(hash: u64) -> u64 {
    let mut z = hash ^ 0x9e37_79b9_7f4a_7c15;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The hash the filter uses for an input's bytes (xxh3, as LibAFL's `hash_std`).
#[must_use]
pub fn input_hash(bytes: &[u8]) -> u64 {
    xxh3_64(bytes)
}

impl Default for SeenFilter {
    /// 16 MiB: each generation holds about 4.8 million inputs.
    fn default() -> Self {
        SeenFilter::with_memory(DEFAULT_MEMORY)
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

    /// The share of `count` fresh inputs (never inserted) that `seen` takes as run.
    fn false_positive_rate(seen: &mut SeenFilter, fresh_from: u64, count: u64) -> f64 {
        let wrong = (fresh_from..fresh_from + count)
            .filter(|i| seen.clone().check_and_insert(&i.to_le_bytes()))
            .count();
        wrong as f64 / count as f64
    }

    #[test]
    fn false_positives_stay_rare_at_design_load() {
        let mut seen = SeenFilter::with_memory(1 << 16);
        for i in 0..seen.design_load() - 1 {
            seen.check_and_insert(&i.to_le_bytes());
        }
        assert_eq!(seen.rotations(), 0);
        let rate = false_positive_rate(&mut seen, 1 << 40, 20_000);
        assert!(rate < 0.005, "{rate}");
    }

    #[test]
    fn false_positives_stay_rare_at_fifty_times_the_design_load() {
        // A small filter fed 50 times what a generation holds, as a long run does to the real
        // one; the rate is measured at its worst moment, just before a generation is cleared.
        let mut seen = SeenFilter::with_memory(1 << 16);
        let load = seen.design_load();
        let mut next = 0u64;
        while seen.rotations() < 49 || next < 50 * load {
            seen.check_and_insert(&next.to_le_bytes());
            next += 1;
        }
        while seen.rotations() < 51 {
            let before = seen.rotations();
            seen.check_and_insert(&next.to_le_bytes());
            next += 1;
            if seen.rotations() == before && seen.current_load() == load - 1 {
                let rate = false_positive_rate(&mut seen, 1 << 40, 20_000);
                assert!(rate < 0.01, "{rate} after {next} inputs");
            }
        }
        assert!(next >= 50 * load);
    }

    #[test]
    fn the_most_recent_inputs_are_always_remembered() {
        let mut seen = SeenFilter::with_memory(1 << 12);
        let load = seen.design_load();
        for i in 0..10 * load {
            seen.check_and_insert(&i.to_le_bytes());
            if i >= load {
                // Any of the last `load` inputs, checked without inserting.
                let back = i - (i * 7919) % load;
                assert!(
                    seen.clone().check_and_insert(&back.to_le_bytes()),
                    "{back} at {i}"
                );
            }
        }
    }

    #[test]
    fn pinned_inputs_survive_every_generation() {
        let mut seen = SeenFilter::with_memory(1 << 12);
        seen.pin(input_hash(b"kills the process"));
        for i in 0..20 * seen.design_load() {
            seen.check_and_insert(&i.to_le_bytes());
        }
        assert!(seen.rotations() >= 19);
        assert!(seen.check_and_insert(b"kills the process"));
    }

    #[test]
    fn memory_is_fixed() {
        let seen = SeenFilter::with_memory(1000);
        assert_eq!(seen.memory(), 512);
        assert_eq!(SeenFilter::default().memory(), 16 << 20);
        let mut seen = SeenFilter::with_memory(1 << 12);
        for i in 0..100 * seen.design_load() {
            seen.check_and_insert(&i.to_le_bytes());
        }
        assert_eq!(seen.memory(), 1 << 12, "generations reuse the same memory");
    }
}
