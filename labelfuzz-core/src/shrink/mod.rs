//! The shrinker: a named list of small passes, each proposing simpler candidates.
//!
//! Every candidate a pass proposes is strictly simpler (shortlex) than the current input, so any
//! accepted candidate is progress and the process terminates. The caller decides what "accepted"
//! means — for the fuzzer, "improves some label" — and may stop the shrink at any time (run or
//! time budget). Deletion alone cannot reach the shortlex minimum (in `B?\xff` the middle byte
//! survives whatever it is), so lowering passes follow, as in Hypothesis' shrinker.
//!
//! The shrinker is generic over the sequence's elements: bytes of an input, or the choices of a
//! grammar input, whose reducer (`labelfuzz::grammar::reduce`) runs the same passes with a judge
//! that normalizes each candidate to the choices the generator actually used.

mod passes;

use std::fmt;

/// What the caller says of one candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The candidate is kept: shrinking continues from it.
    Accepted,
    /// The candidate is dropped.
    Rejected,
    /// Stop shrinking now (budget exhausted or stop requested); keep what we have.
    Stop,
}

impl From<bool> for Verdict {
    /// Accepted when true, rejected when false.
    fn from(accepted: bool) -> Self {
        if accepted {
            Verdict::Accepted
        } else {
            Verdict::Rejected
        }
    }
}

/// An element of a shrunk sequence: a byte of an input, or a grammar choice.
pub trait Element: Copy + Ord + Default + fmt::Debug {
    /// The largest value.
    const MAX: u64;
    /// The value as a number.
    fn to_u64(self) -> u64;
    /// The element of value `v` (at most [`Element::MAX`]).
    fn from_u64(v: u64) -> Self;
}

impl Element for u8 {
    const MAX: u64 = u8::MAX as u64;
    fn to_u64(self) -> u64 {
        u64::from(self)
    }
    fn from_u64(v: u64) -> Self {
        u8::try_from(v).unwrap_or(u8::MAX)
    }
}

impl Element for u32 {
    const MAX: u64 = u32::MAX as u64;
    fn to_u64(self) -> u64 {
        u64::from(self)
    }
    fn from_u64(v: u64) -> Self {
        u32::try_from(v).unwrap_or(u32::MAX)
    }
}

/// One shrink pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Delete blocks of decreasing power-of-two sizes, scanning from the end (where expansion
    /// appends). Large blocks move in steps of their size, small ones slide one element at a
    /// time.
    DeleteBlocks,
    /// Set aligned blocks of decreasing power-of-two sizes to zero, down to single elements.
    ZeroBlocks,
    /// Lower each element to the smallest accepted value found by binary search.
    LowerElements,
    /// Move value from an earlier element to a later one (`a, b` → `a - d, b + d`), which lowers
    /// the input lexicographically while keeping sums: needed where a bug depends on `a + b`.
    Redistribute,
    /// Delete 1 to 4 elements and lower the one before them: undoes one step of a recursion or
    /// one item of a counted list (one item fewer, the count one lower), where deleting alone
    /// would shift the elements after it onto other decisions.
    DeleteAndLowerPrevious,
}

impl fmt::Display for Pass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Pass::DeleteBlocks => "delete-blocks",
            Pass::ZeroBlocks => "zero-blocks",
            Pass::LowerElements => "lower-elements",
            Pass::Redistribute => "redistribute",
            Pass::DeleteAndLowerPrevious => "delete-and-lower-previous",
        })
    }
}

/// Which passes to run and whether to repeat them until none makes progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The passes, in order.
    pub passes: &'static [Pass],
    /// Repeat the whole list until a round accepts nothing.
    pub to_fixpoint: bool,
}

impl Plan {
    /// The cheap plan for inputs that improved coverage labels: one round of deletions, as in the
    /// original algorithm (later expansions keep minimising as a by-product).
    pub const COVERAGE: Plan = Plan {
        passes: &[Pass::DeleteBlocks],
        to_fixpoint: false,
    };

    /// The full plan for crash reproducers: every byte pass, to a fixpoint.
    pub const CRASH: Plan = Plan {
        passes: &[
            Pass::DeleteBlocks,
            Pass::ZeroBlocks,
            Pass::LowerElements,
            Pass::Redistribute,
        ],
        to_fixpoint: true,
    };

    /// The plan for grammar choice sequences: the byte passes that make sense for choices (a
    /// choice's value is an alternative's index, so sums mean nothing), and undoing recursion.
    pub const CHOICES: Plan = Plan {
        passes: &[
            Pass::DeleteBlocks,
            Pass::ZeroBlocks,
            Pass::LowerElements,
            Pass::DeleteAndLowerPrevious,
        ],
        to_fixpoint: true,
    };
}

/// How far [`Redistribute`](Pass::Redistribute) looks ahead from each element.
const REDISTRIBUTE_WINDOW: usize = 8;

/// A judge that may replace an accepted candidate by an equivalent one no less simple (a
/// grammar's normalized choices); it also sees the current sequence, so that it can reject a
/// candidate whose rewrite is no simpler before paying for a test. See
/// [`Shrinker::normalizing`].
pub type NormalizingJudge<'a, T> = dyn FnMut(&mut Vec<T>, &[T]) -> Verdict + 'a;

/// One shrink in progress: the current sequence, and the judge of candidates. Every candidate
/// offered is strictly simpler (shortlex) than the current sequence.
pub struct Shrinker<'a, T> {
    current: Vec<T>,
    judge: &'a mut NormalizingJudge<'a, T>,
    stopped: bool,
    /// Reused candidate buffer: no allocation per candidate.
    candidate: Vec<T>,
}

impl<'a, T: Element> Shrinker<'a, T> {
    /// A shrink of `input` whose judge may rewrite an accepted candidate in place; the rewrite
    /// is kept only if it is still simpler than the current sequence.
    pub fn normalizing(input: Vec<T>, judge: &'a mut NormalizingJudge<'a, T>) -> Self {
        Shrinker {
            current: input,
            judge,
            stopped: false,
            candidate: Vec::new(),
        }
    }

    /// The simplest accepted sequence.
    #[must_use]
    pub fn into_current(self) -> Vec<T> {
        self.current
    }

    /// Offers the candidate in `self.candidate` (reused: no allocation per candidate).
    pub(super) fn offer_buffer(&mut self) -> bool {
        if self.stopped || !crate::order::is_simpler(&self.candidate, &self.current) {
            return false;
        }
        match (self.judge)(&mut self.candidate, &self.current) {
            Verdict::Accepted if crate::order::is_simpler(&self.candidate, &self.current) => {
                std::mem::swap(&mut self.current, &mut self.candidate);
                true
            }
            Verdict::Accepted | Verdict::Rejected => false,
            Verdict::Stop => {
                self.stopped = true;
                false
            }
        }
    }

    /// Runs one pass; true when it accepted anything.
    pub fn run(&mut self, pass: Pass) -> bool {
        match pass {
            Pass::DeleteBlocks => self.delete_blocks(),
            Pass::ZeroBlocks => self.zero_blocks(),
            Pass::LowerElements => self.lower_elements(),
            Pass::Redistribute => self.redistribute(),
            Pass::DeleteAndLowerPrevious => self.delete_and_lower_previous(),
        }
    }

    /// Runs `plan`'s passes (to a fixpoint if it says so) until done or stopped.
    pub fn run_plan(&mut self, plan: Plan) {
        loop {
            let mut progress = false;
            for &pass in plan.passes {
                if self.stopped {
                    break;
                }
                progress |= self.run(pass);
            }
            if !plan.to_fixpoint || !progress || self.stopped {
                return;
            }
        }
    }
}

/// Shrinks `input` under `plan`, asking `judge` about each candidate, and returns the simplest
/// accepted input (or `input` itself when nothing was accepted).
pub fn shrink<T: Element>(
    input: Vec<T>,
    plan: Plan,
    judge: &mut dyn FnMut(&[T]) -> Verdict,
) -> Vec<T> {
    let mut plain = |candidate: &mut Vec<T>, _: &[T]| judge(candidate);
    let mut shrinker = Shrinker::normalizing(input, &mut plain);
    shrinker.run_plan(plan);
    shrinker.into_current()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shrinks with a plain predicate, counting calls.
    fn shrink_with(input: &[u8], plan: Plan, pred: impl Fn(&[u8]) -> bool) -> (Vec<u8>, usize) {
        let mut calls = 0;
        let mut judge = |c: &[u8]| {
            calls += 1;
            if pred(c) {
                Verdict::Accepted
            } else {
                Verdict::Rejected
            }
        };
        let out = shrink(input.to_vec(), plan, &mut judge);
        (out, calls)
    }

    fn noisy(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }

    #[test]
    fn deletions_find_a_single_needed_byte() {
        let mut input = noisy(1000, 7);
        input[613] = b'X';
        input.retain(|&b| b != b'X');
        input.insert(613, b'X');
        let (out, calls) = shrink_with(&input, Plan::COVERAGE, |c| c.contains(&b'X'));
        assert_eq!(out, b"X");
        assert!(
            calls < 200,
            "block deletion is logarithmic-ish, took {calls}"
        );
    }

    #[test]
    fn deletions_alone_keep_an_arbitrary_middle_byte() {
        let pred = |c: &[u8]| c.windows(3).any(|w| w[0] == b'B' && w[2] == 0xff);
        let (out, _) = shrink_with(b"zzB\x7a\xffzz", Plan::COVERAGE, pred);
        assert_eq!(out, b"B\x7a\xff");
        let (out, _) = shrink_with(b"zzB\x7a\xffzz", Plan::CRASH, pred);
        assert_eq!(out, b"B\x00\xff");
    }

    #[test]
    fn lowering_binary_searches_a_threshold() {
        let (out, calls) = shrink_with(&[200, 9, 9], Plan::CRASH, |c| !c.is_empty() && c[0] >= 77);
        assert_eq!(out, [77]);
        assert!(calls < 40, "took {calls}");
    }

    #[test]
    fn redistribution_reaches_the_minimum_of_a_sum_bug() {
        // Overflow of a + b: the shortlex minimum is [1, 255].
        let (out, _) = shrink_with(&[200, 100, 3], Plan::CRASH, |c| {
            c.len() >= 2 && u16::from(c[0]) + u16::from(c[1]) > 255
        });
        assert_eq!(out, [1, 255]);
    }

    #[test]
    fn every_candidate_is_simpler_than_the_current_input() {
        let mut current = noisy(64, 3);
        let mut judge = |c: &[u8]| {
            assert!(crate::order::is_simpler(c, &current));
            if c.iter().map(|&b| u32::from(b)).sum::<u32>() > 300 {
                current = c.to_vec();
                Verdict::Accepted
            } else {
                Verdict::Rejected
            }
        };
        let out = shrink(noisy(64, 3), Plan::CRASH, &mut judge);
        assert!(out.iter().map(|&b| u32::from(b)).sum::<u32>() > 300);
        assert_eq!(out.len(), 2, "two bytes reach a sum over 300: {out:?}");
    }

    #[test]
    fn stop_ends_the_shrink_at_once_keeping_progress() {
        let mut calls = 0;
        let mut judge = |_: &[u8]| {
            calls += 1;
            if calls == 1 {
                Verdict::Accepted
            } else {
                Verdict::Stop
            }
        };
        let out = shrink(noisy(100, 5), Plan::CRASH, &mut judge);
        assert_eq!(calls, 2);
        assert!(out.len() < 100);
    }

    #[test]
    fn empty_input_is_already_minimal() {
        let (out, calls) = shrink_with(b"", Plan::CRASH, |_| true);
        assert!(out.is_empty());
        assert_eq!(calls, 0);
    }
}
