//! Expansion: the candidates tried from a label's best input, in order.
//!
//! First the input with a run of random bytes appended (1 to 1024 of them), then the input with
//! each single byte value appended, 0 first. With regular runs on (`--regular-runs 1`), the
//! random run is followed by a run of one repeated byte (zero, 0xff or a random value) and by
//! the input twice over: the long, regular data random bytes never are, which a compressor's
//! match finder or a table of a declared size needs before its code runs. The single-byte expansions make the search climb one
//! comparison at a time (`F`, `FU`, `FUZ`, ...), and trying them in increasing order means the
//! first one that helps is already the shortlex-smallest. Last, with a dictionary, the input with
//! each of its tokens appended, shortest first: a keyword the target compares whole is one step.

use std::num::NonZeroUsize;
use std::sync::Arc;

use libafl_bolts::rands::Rand;

/// The longest random run appended by the first expansion.
pub const MAX_RANDOM_APPEND: usize = 1024;

/// Where an [`Expansions`] sequence is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    RandomRun,
    RepeatedRun,
    Doubled,
    Byte(u16),
    Token(usize),
    Done,
}

/// The expansions of one input, produced one at a time into a reused buffer.
#[derive(Clone, Debug)]
pub struct Expansions {
    step: Step,
    max_len: usize,
    bytes: bool,
    regular_runs: bool,
    last_random: bool,
    tokens: Arc<[Vec<u8>]>,
}

impl Expansions {
    /// The expansions of an input, none of them longer than `max_len`.
    #[must_use]
    pub fn new(max_len: usize) -> Self {
        Expansions {
            step: Step::RandomRun,
            max_len,
            bytes: true,
            regular_runs: false,
            last_random: false,
            tokens: Arc::new([]),
        }
    }

    /// Also appends each of `tokens` (a dictionary, shortest first) after the single bytes.
    #[must_use]
    pub fn with_tokens(mut self, tokens: Arc<[Vec<u8>]>) -> Self {
        self.tokens = tokens;
        self
    }

    /// Also appends a run of one repeated byte and the input itself after the random run.
    #[must_use]
    pub fn with_regular_runs(mut self, on: bool) -> Self {
        self.regular_runs = on;
        self
    }

    /// The expansions of an input whose single-byte expansions were all tried before: only the
    /// random run is left (the others would be skipped as already run anyway).
    #[must_use]
    pub fn random_only(max_len: usize) -> Self {
        Expansions {
            step: Step::RandomRun,
            max_len,
            bytes: false,
            regular_runs: false,
            last_random: false,
            tokens: Arc::new([]),
        }
    }

    /// True when the last expansion written was the random run: practically never a repeat, so
    /// not worth a lookup in the filter of inputs already run.
    #[must_use]
    pub fn last_was_random(&self) -> bool {
        self.last_random
    }

    /// The step after the appended runs: the single bytes, unless they were tried before.
    fn after_runs(&self) -> Step {
        if self.bytes {
            Step::Byte(0)
        } else {
            Step::Done
        }
    }

    /// Writes the next expansion of `base` into `out`; false when there are no more.
    pub fn next_into<R: Rand>(&mut self, base: &[u8], rand: &mut R, out: &mut Vec<u8>) -> bool {
        let room = self.max_len.saturating_sub(base.len());
        if room == 0 {
            self.step = Step::Done;
        }
        out.clear();
        self.last_random = self.step == Step::RandomRun;
        match self.step {
            Step::RandomRun => {
                let len = run_len(rand, room);
                out.extend_from_slice(base);
                fill_random(rand, out, len);
                self.step = if self.regular_runs {
                    Step::RepeatedRun
                } else {
                    self.after_runs()
                };
                true
            }
            Step::RepeatedRun => {
                let value = match rand.below(NonZeroUsize::new(3).expect("3 is non-zero")) {
                    0 => 0,
                    1 => 0xff,
                    _ => rand.next() as u8,
                };
                let len = run_len(rand, room);
                out.extend_from_slice(base);
                out.resize(base.len() + len, value);
                self.step = Step::Doubled;
                true
            }
            Step::Doubled => {
                self.step = self.after_runs();
                if base.is_empty() {
                    return self.next_into(base, rand, out);
                }
                out.extend_from_slice(base);
                out.extend_from_slice(&base[..base.len().min(room)]);
                true
            }
            Step::Byte(b) => {
                out.extend_from_slice(base);
                out.push(b as u8);
                self.step = if b == 255 {
                    Step::Token(0)
                } else {
                    Step::Byte(b + 1)
                };
                true
            }
            Step::Token(i) => {
                // Tokens come shortest first: the first one that does not fit ends the list.
                match self.tokens.get(i).filter(|t| t.len() <= room) {
                    Some(token) => {
                        out.extend_from_slice(base);
                        out.extend_from_slice(token);
                        self.step = Step::Token(i + 1);
                        true
                    }
                    None => {
                        self.step = Step::Done;
                        false
                    }
                }
            }
            Step::Done => false,
        }
    }
}

/// The length of an appended run: 1 to [`MAX_RANDOM_APPEND`] bytes, at most `room` (> 0).
fn run_len<R: Rand>(rand: &mut R, room: usize) -> usize {
    let most = room.min(MAX_RANDOM_APPEND);
    1 + rand.below(NonZeroUsize::new(most).expect("room is non-zero"))
}

/// Appends `len` random bytes to `out`, eight at a time.
pub fn fill_random<R: Rand>(rand: &mut R, out: &mut Vec<u8>, len: usize) {
    let target = out.len() + len;
    while out.len() + 8 <= target {
        out.extend_from_slice(&rand.next().to_le_bytes());
    }
    let tail = target - out.len();
    out.extend_from_slice(&rand.next().to_le_bytes()[..tail]);
}

/// A mutator chosen at run time (the havoc mutations, with token mutations when a dictionary
/// is given), behind one type for the havoc stage.
pub struct DynMutator<I, S>(pub Box<dyn libafl::mutators::Mutator<I, S>>);

impl<I, S> std::fmt::Debug for DynMutator<I, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("DynMutator").field(self.0.name()).finish()
    }
}

impl<I, S> libafl_bolts::Named for DynMutator<I, S> {
    fn name(&self) -> &std::borrow::Cow<'static, str> {
        self.0.name()
    }
}

impl<I, S> libafl::mutators::Mutator<I, S> for DynMutator<I, S> {
    fn mutate(
        &mut self,
        state: &mut S,
        input: &mut I,
    ) -> Result<libafl::mutators::MutationResult, libafl::Error> {
        self.0.mutate(state, input)
    }

    fn post_exec(
        &mut self,
        state: &mut S,
        new_corpus_id: Option<libafl::corpus::CorpusId>,
    ) -> Result<(), libafl::Error> {
        self.0.post_exec(state, new_corpus_id)
    }
}

#[cfg(test)]
mod tests {
    use libafl_bolts::rands::StdRand;

    use super::*;

    fn all(base: &[u8], max_len: usize, seed: u64) -> Vec<Vec<u8>> {
        every(Expansions::new(max_len), base, seed)
    }

    /// Every candidate `exp` gives for `base`, drawing from a generator seeded with `seed`.
    fn every(mut exp: Expansions, base: &[u8], seed: u64) -> Vec<Vec<u8>> {
        let mut rand = StdRand::with_seed(seed);
        let mut out = Vec::new();
        let mut seen = Vec::new();
        while exp.next_into(base, &mut rand, &mut out) {
            seen.push(out.clone());
        }
        seen
    }

    #[test]
    fn random_run_first_then_every_byte_in_order() {
        let cands = all(b"ab", 4096, 1);
        assert_eq!(cands.len(), 257);
        let run = &cands[0];
        assert!(run.starts_with(b"ab"));
        assert!((3..=2 + MAX_RANDOM_APPEND).contains(&run.len()));
        for (b, cand) in cands[1..].iter().enumerate() {
            assert_eq!(cand, &[b'a', b'b', b as u8]);
        }
    }

    #[test]
    fn regular_runs_follow_the_random_run_when_asked_for() {
        let cands = every(Expansions::new(4096).with_regular_runs(true), b"ab", 3);
        assert_eq!(cands.len(), 3 + 256);
        let repeated = &cands[1][2..];
        assert!(!repeated.is_empty() && repeated.iter().all(|&b| b == repeated[0]));
        assert_eq!(cands[2], b"abab");
        assert_eq!(cands[3], b"ab\x00");
        // Off, the same random numbers give the same candidates as before the option existed.
        assert_eq!(
            all(b"ab", 4096, 3),
            every(Expansions::new(4096).with_regular_runs(false), b"ab", 3)
        );
    }

    #[test]
    fn dictionary_tokens_follow_the_bytes_and_stop_at_the_length_limit() {
        let tokens: Arc<[Vec<u8>]> = vec![b"AND".to_vec(), b"SELECT".to_vec()].into();
        let mut rand = StdRand::with_seed(2);
        let mut exp = Expansions::new(8).with_tokens(tokens);
        let mut out = Vec::new();
        let mut seen = Vec::new();
        while exp.next_into(b"ab", &mut rand, &mut out) {
            seen.push(out.clone());
        }
        assert_eq!(seen.len(), 1 + 256 + 2);
        assert_eq!(seen[257], b"abAND");
        assert_eq!(seen[258], b"abSELECT");
        let mut exp =
            Expansions::new(6).with_tokens(vec![b"AND".to_vec(), b"SELECT".to_vec()].into());
        let mut count = 0;
        while exp.next_into(b"ab", &mut rand, &mut out) {
            count += 1;
        }
        assert_eq!(count, 1 + 256 + 1, "SELECT does not fit in 6 bytes");
    }

    #[test]
    fn random_only_skips_the_byte_appends() {
        let mut rand = StdRand::with_seed(4);
        let mut exp = Expansions::random_only(100);
        let mut out = Vec::new();
        assert!(exp.next_into(b"x", &mut rand, &mut out));
        assert!(out.len() > 1);
        assert!(!exp.next_into(b"x", &mut rand, &mut out));
    }

    #[test]
    fn never_longer_than_max_len() {
        let cands = all(b"abc", 5, 9);
        assert!(cands.iter().all(|c| c.len() <= 5));
        assert!(cands[0].len() > 3);
        assert!(all(b"abcde", 5, 9).is_empty(), "no room, no expansion");
    }

    #[test]
    fn random_runs_vary_in_length_and_content() {
        let lens: std::collections::BTreeSet<usize> =
            (0..50).map(|seed| all(b"", 4096, seed)[0].len()).collect();
        assert!(lens.len() > 20, "lengths: {lens:?}");
        let a = &all(b"", 4096, 1)[0];
        let b = &all(b"", 4096, 2)[0];
        assert_ne!(a, b);
    }

    #[test]
    fn fill_random_writes_exact_lengths() {
        let mut rand = StdRand::with_seed(3);
        for len in [0, 1, 7, 8, 9, 1023] {
            let mut out = vec![1, 2];
            fill_random(&mut rand, &mut out, len);
            assert_eq!(out.len(), 2 + len);
        }
    }
}
