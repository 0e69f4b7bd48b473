//! Havoc's long runs: one byte repeated 17 to 4096 times, inserted or written over the input.
//!
//! LibAFL's byte mutations change at most 16 bytes at a time, so a field that must be long and
//! regular (a compressed block whose match length runs to 64 KiB, a table of a declared size)
//! is otherwise reached only by stacking many of them; AFL++'s havoc has such blocks.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use libafl_bolts::rands::Rand;

/// The shortest run [`LongRunMutator`] writes: LibAFL's own byte mutations write at most 16.
pub const MIN_LONG_RUN: usize = 17;

/// The longest run [`LongRunMutator`] writes.
pub const MAX_LONG_RUN: usize = 4096;

/// The most of a process's time, from its first long run on, that considering mutants holding
/// one may take: a long input can cost a thousand short ones (an xz stream of 3.5 KB decodes in
/// 13 ms, against 20 µs for the corpus's usual input). This bounds the long mutants' own cost
/// only; the inputs they lead to can be slow too (a short xz stream that decodes to a long
/// output), and those are charged by the scheduler (`--charge-exec-time`).
pub const LONG_RUN_TIME_SHARE: f64 = 0.1;

/// Whether this process writes long runs: havoc holds [`LongRunMutator`] from the start of a run
/// with `--long-runs 1` or 2, and with 2 it skips until the stall switch turns it on.
static ON: AtomicBool = AtomicBool::new(false);

/// Whether the mutant being considered now holds a long run: set when one is written, cleared
/// after the mutant's consideration (its run and shrink) by the mutator's `post_exec`.
static IN_MUTANT: AtomicBool = AtomicBool::new(false);

/// Turns long runs on in this process (from the start, or at the stall with `--long-runs 2`).
pub fn enable() {
    ON.store(true, Ordering::Relaxed);
}

/// True while a mutant holding a long run is considered: it counts as an improvement only by a
/// new edge or a simpler input for a known label (see the corpus feedback). Each longer run
/// counts loops and byte tests into new buckets; kept for those, long inputs filled xz's corpus
/// once long runs and comparison progress came on at a stall (an ablation run's labels went
/// from 3579 to 5381, its corpus from 87 to 226 KB).
#[must_use]
pub fn in_mutant() -> bool {
    IN_MUTANT.load(Ordering::Relaxed)
}

/// A havoc mutation that inserts a run of 17 to 4096 copies of one byte anywhere in the input,
/// or writes one over it (`--long-runs`): zeros, 0xff, the byte already there or a random one;
/// skipped until [`enable`] is called, and while its mutants have had their
/// [`LONG_RUN_TIME_SHARE`] of the time.
#[derive(Clone, Copy, Debug, Default)]
pub struct LongRunMutator {
    time: TimeShare,
}

/// The time spent on mutants holding a long run, against the time since the first one.
#[derive(Clone, Copy, Debug, Default)]
struct TimeShare {
    /// When the first such mutant was written.
    first: Option<Instant>,
    /// Time spent considering such mutants (run, and shrunk when they improved).
    spent: Duration,
    /// When the mutant considered now was written, if it holds a long run.
    current: Option<Instant>,
}

impl TimeShare {
    /// True when another mutant may hold a long run at `now`.
    fn allows(&self, now: Instant) -> bool {
        self.first.is_none_or(|first| {
            self.spent.as_secs_f64()
                <= LONG_RUN_TIME_SHARE * now.saturating_duration_since(first).as_secs_f64()
        })
    }

    /// A mutant holding a long run was written at `now`.
    fn written(&mut self, now: Instant) {
        self.first.get_or_insert(now);
        self.current.get_or_insert(now);
    }

    /// The mutant was considered; done at `now`.
    fn considered(&mut self, now: Instant) {
        if let Some(written) = self.current.take() {
            self.spent += now.saturating_duration_since(written);
        }
    }
}

impl<I, S> libafl::mutators::Mutator<I, S> for LongRunMutator
where
    S: libafl::state::HasRand + libafl::state::HasMaxSize,
    I: libafl::inputs::ResizableMutator<u8> + libafl::inputs::HasMutatorBytes,
{
    fn mutate(
        &mut self,
        state: &mut S,
        input: &mut I,
    ) -> Result<libafl::mutators::MutationResult, libafl::Error> {
        if !ON.load(Ordering::Relaxed) {
            return Ok(libafl::mutators::MutationResult::Skipped);
        }
        let now = Instant::now();
        if !self.time.allows(now) {
            return Ok(libafl::mutators::MutationResult::Skipped);
        }
        let size = input.mutator_bytes().len();
        let room = state.max_size().saturating_sub(size);
        let rand = state.rand_mut();
        // Writing over the input keeps its length (and the length fields that describe it);
        // inserting makes room for a run where there was none.
        let overwrite = size >= MIN_LONG_RUN && (room < MIN_LONG_RUN || rand.coinflip(0.5));
        let most = if overwrite { size } else { room }.min(MAX_LONG_RUN);
        if most < MIN_LONG_RUN {
            return Ok(libafl::mutators::MutationResult::Skipped);
        }
        let len = long_run_len(rand, most);
        let at = if overwrite {
            rand.between(0, size - len)
        } else {
            rand.between(0, size)
        };
        let value = match rand.below(NonZeroUsize::new(4).expect("4 is non-zero")) {
            0 => 0,
            1 => 0xff,
            2 if size > 0 => input.mutator_bytes()[at.min(size - 1)],
            _ => rand.next() as u8,
        };
        if overwrite {
            input.mutator_bytes_mut()[at..at + len].fill(value);
        } else {
            input.splice(at..at, std::iter::repeat_n(value, len));
        }
        self.time.written(now);
        IN_MUTANT.store(true, Ordering::Relaxed);
        Ok(libafl::mutators::MutationResult::Mutated)
    }

    fn post_exec(
        &mut self,
        _state: &mut S,
        _new_corpus_id: Option<libafl::corpus::CorpusId>,
    ) -> Result<(), libafl::Error> {
        // Called after every havoc mutant: a plain load, not a read-modify-write, when the
        // mutant held no long run (most do not).
        if IN_MUTANT.load(Ordering::Relaxed) {
            IN_MUTANT.store(false, Ordering::Relaxed);
            self.time.considered(Instant::now());
        }
        Ok(())
    }
}

impl libafl_bolts::Named for LongRunMutator {
    fn name(&self) -> &std::borrow::Cow<'static, str> {
        static NAME: std::borrow::Cow<'static, str> = std::borrow::Cow::Borrowed("LongRunMutator");
        &NAME
    }
}

/// A run length from [`MIN_LONG_RUN`] to `most` (at least that), as likely in each power of two
/// as in any other: a run of 300 is as likely as one of 3000.
fn long_run_len<R: Rand>(rand: &mut R, most: usize) -> usize {
    let bits = |n: usize| usize::BITS - n.leading_zeros();
    let width = rand.between(bits(MIN_LONG_RUN) as usize, bits(most) as usize);
    let low = (1usize << (width - 1)).max(MIN_LONG_RUN);
    let high = ((1usize << width) - 1).min(most);
    rand.between(low, high)
}

#[cfg(test)]
mod tests {
    use libafl_bolts::rands::StdRand;

    use super::*;

    #[test]
    fn long_run_lengths_cover_every_power_of_two_within_bounds() {
        let mut rand = StdRand::with_seed(5);
        let lens: Vec<usize> = (0..2000)
            .map(|_| long_run_len(&mut rand, MAX_LONG_RUN))
            .collect();
        assert!(lens
            .iter()
            .all(|l| (MIN_LONG_RUN..=MAX_LONG_RUN).contains(l)));
        for (low, high) in [(17, 31), (256, 511), (2048, 4095)] {
            assert!(
                lens.iter().any(|l| (low..=high).contains(l)),
                "none in {low}..={high}"
            );
        }
        assert!((0..100).all(|_| long_run_len(&mut rand, MIN_LONG_RUN) == MIN_LONG_RUN));
        assert!((0..100).all(|_| long_run_len(&mut rand, 40) <= 40));
    }

    #[test]
    fn long_runs_are_inserted_or_written_over_within_the_size_limit() {
        use libafl::inputs::BytesInput;
        use libafl::mutators::{MutationResult, Mutator};

        enable();
        let mut state = SizedState {
            rand: StdRand::with_seed(6),
            max_size: 600,
        };
        let base: Vec<u8> = (0..100u8).collect();
        let (mut inserted, mut written) = (0, 0);
        for _ in 0..500 {
            let mut input = BytesInput::new(base.clone());
            let result = LongRunMutator::default()
                .mutate(&mut state, &mut input)
                .unwrap();
            assert_eq!(result, MutationResult::Mutated);
            let bytes: &[u8] = input.as_ref();
            assert!(bytes.len() <= 600);
            let longest = longest_run(bytes);
            assert!(longest >= MIN_LONG_RUN, "{bytes:?}");
            if bytes.len() == base.len() {
                written += 1;
            } else {
                inserted += 1;
                // What was there is still there, around the run.
                let run = bytes.len() - base.len();
                let at = (0..=base.len())
                    .find(|&at| bytes[..at] == base[..at] && bytes[at + run..] == base[at..])
                    .expect("the input with a run inserted");
                assert!(bytes[at..at + run].iter().all(|&b| b == bytes[at]));
            }
        }
        assert!(
            inserted > 100 && written > 100,
            "{inserted} inserted, {written} written"
        );
        // No room and too short to write over: nothing to do.
        state.max_size = 20;
        let mut short = BytesInput::new(vec![1; 10]);
        let result = LongRunMutator::default()
            .mutate(&mut state, &mut short)
            .unwrap();
        assert_eq!(result, MutationResult::Skipped);
    }

    #[test]
    fn mutants_with_long_runs_get_their_share_of_the_time() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut time = TimeShare::default();
        assert!(time.allows(at(0)));
        time.written(at(0));
        time.considered(at(20));
        assert!(!time.allows(at(100)), "20 ms of 100");
        assert!(time.allows(at(200)), "20 ms of 200");
        // A mutant that holds no long run costs nothing.
        time.considered(at(5000));
        assert!(time.allows(at(200)));
        time.written(at(200));
        time.considered(at(230));
        assert!(!time.allows(at(300)) && time.allows(at(500)), "50 ms");
    }

    /// The least state a havoc mutation asks for: random numbers and a size limit.
    struct SizedState {
        rand: StdRand,
        max_size: usize,
    }

    impl libafl::state::HasRand for SizedState {
        type Rand = StdRand;
        fn rand(&self) -> &StdRand {
            &self.rand
        }
        fn rand_mut(&mut self) -> &mut StdRand {
            &mut self.rand
        }
    }

    impl libafl::state::HasMaxSize for SizedState {
        fn max_size(&self) -> usize {
            self.max_size
        }
        fn set_max_size(&mut self, max_size: usize) {
            self.max_size = max_size;
        }
    }

    /// The length of the longest run of one byte value in `bytes`.
    fn longest_run(bytes: &[u8]) -> usize {
        bytes
            .chunk_by(|a, b| a == b)
            .map(<[u8]>::len)
            .max()
            .unwrap_or(0)
    }
}
