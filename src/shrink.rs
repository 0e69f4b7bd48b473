//! The shrinker: a named list of small passes, each proposing simpler candidates.
//!
//! Every candidate a pass proposes is strictly simpler (shortlex) than the current input, so any
//! accepted candidate is progress and the process terminates. The caller decides what "accepted"
//! means — for the fuzzer, "improves some label" — and may stop the shrink at any time (run or
//! time budget). Deletion alone cannot reach the shortlex minimum (in `B?\xff` the middle byte
//! survives whatever it is), so byte-lowering passes follow, as in Hypothesis' shrinker.

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

/// One shrink pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Delete blocks of decreasing power-of-two sizes, scanning from the end (where expansion
    /// appends). Large blocks move in steps of their size, small ones slide a byte at a time.
    DeleteBlocks,
    /// Set each non-zero byte to zero.
    ZeroBytes,
    /// Lower each byte to the smallest accepted value found by binary search.
    LowerBytes,
    /// Move value from an earlier byte to a later one (`a, b` → `a - d, b + d`), which lowers the
    /// input lexicographically while keeping sums: needed where a bug depends on `a + b`.
    Redistribute,
}

impl fmt::Display for Pass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Pass::DeleteBlocks => "delete-blocks",
            Pass::ZeroBytes => "zero-bytes",
            Pass::LowerBytes => "lower-bytes",
            Pass::Redistribute => "redistribute",
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

    /// The full plan for crash reproducers: every pass, to a fixpoint.
    pub const CRASH: Plan = Plan {
        passes: &[
            Pass::DeleteBlocks,
            Pass::ZeroBytes,
            Pass::LowerBytes,
            Pass::Redistribute,
        ],
        to_fixpoint: true,
    };
}

/// How far [`Redistribute`](Pass::Redistribute) looks ahead from each byte.
const REDISTRIBUTE_WINDOW: usize = 8;

/// The running state of one shrink: the current input and the caller's verdict function.
struct Shrink<'a> {
    current: Vec<u8>,
    judge: &'a mut dyn FnMut(&[u8]) -> Verdict,
    stopped: bool,
    candidate: Vec<u8>,
}

impl Shrink<'_> {
    /// Offers `candidate` (already in `self.candidate`); on acceptance it becomes current.
    fn offer(&mut self) -> bool {
        if self.stopped {
            return false;
        }
        debug_assert!(crate::order::is_simpler(&self.candidate, &self.current));
        match (self.judge)(&self.candidate) {
            Verdict::Accepted => {
                std::mem::swap(&mut self.current, &mut self.candidate);
                true
            }
            Verdict::Rejected => false,
            Verdict::Stop => {
                self.stopped = true;
                false
            }
        }
    }

    fn try_delete(&mut self, at: usize, len: usize) -> bool {
        self.candidate.clear();
        self.candidate.extend_from_slice(&self.current[..at]);
        self.candidate.extend_from_slice(&self.current[at + len..]);
        self.offer()
    }

    fn try_set(&mut self, at: usize, value: u8) -> bool {
        self.candidate.clear();
        self.candidate.extend_from_slice(&self.current);
        self.candidate[at] = value;
        self.offer()
    }

    fn try_move(&mut self, from: usize, to: usize, amount: u8) -> bool {
        self.candidate.clear();
        self.candidate.extend_from_slice(&self.current);
        self.candidate[from] -= amount;
        self.candidate[to] += amount;
        self.offer()
    }

    /// Runs one pass; true when it accepted anything.
    fn run(&mut self, pass: Pass) -> bool {
        match pass {
            Pass::DeleteBlocks => self.delete_blocks(),
            Pass::ZeroBytes => self.zero_bytes(),
            Pass::LowerBytes => self.lower_bytes(),
            Pass::Redistribute => self.redistribute(),
        }
    }

    fn delete_blocks(&mut self) -> bool {
        let mut progress = false;
        let mut size = self.current.len().checked_next_power_of_two().unwrap_or(0) / 2;
        if self.current.len().is_power_of_two() {
            size = self.current.len();
        }
        while size >= 1 && !self.stopped {
            let step = if size > 8 { size } else { 1 };
            let mut end = self.current.len();
            while end >= size && !self.stopped {
                let at = end - size;
                if self.try_delete(at, size) {
                    progress = true;
                    // Stay here: the bytes now at `at` are new and may go too.
                    end = end.min(self.current.len());
                } else {
                    end -= step;
                }
            }
            size /= 2;
        }
        progress
    }

    fn zero_bytes(&mut self) -> bool {
        let mut progress = false;
        for at in 0..self.current.len() {
            if self.current[at] != 0 && self.try_set(at, 0) {
                progress = true;
            }
        }
        progress
    }

    fn lower_bytes(&mut self) -> bool {
        let mut progress = false;
        for at in 0..self.current.len() {
            // Invariant: `hi` is accepted (the current value), `lo` is rejected or unknown-low.
            let (mut lo, mut hi) = (0u8, self.current[at]);
            if hi == 0 || self.try_set(at, 0) {
                progress |= hi != 0;
                continue;
            }
            while hi - lo > 1 && !self.stopped {
                let mid = lo + (hi - lo) / 2;
                if self.try_set(at, mid) {
                    hi = mid;
                    progress = true;
                } else {
                    lo = mid;
                }
            }
        }
        progress
    }

    fn redistribute(&mut self) -> bool {
        let mut progress = false;
        for from in 0..self.current.len() {
            for to in from + 1..self.current.len().min(from + 1 + REDISTRIBUTE_WINDOW) {
                let most = self.current[from].min(255 - self.current[to]);
                if most == 0 {
                    continue;
                }
                // Move as much as possible; if that fails, binary-search the largest move.
                if self.try_move(from, to, most) {
                    progress = true;
                    continue;
                }
                let (mut ok, mut bad) = (0u8, most);
                while bad - ok > 1 && !self.stopped {
                    let mid = ok + (bad - ok) / 2;
                    if self.try_move(from, to, mid) {
                        progress = true;
                        // The bytes changed: measure the remaining headroom from the new values.
                        bad -= mid;
                        ok = 0;
                    } else {
                        bad = mid;
                    }
                }
            }
        }
        progress
    }
}

/// Shrinks `input` under `plan`, asking `judge` about each candidate, and returns the simplest
/// accepted input (or `input` itself when nothing was accepted).
pub fn shrink(input: Vec<u8>, plan: Plan, judge: &mut dyn FnMut(&[u8]) -> Verdict) -> Vec<u8> {
    let mut shrink = Shrink {
        current: input,
        judge,
        stopped: false,
        candidate: Vec::new(),
    };
    loop {
        let mut progress = false;
        for &pass in plan.passes {
            if shrink.stopped {
                break;
            }
            progress |= shrink.run(pass);
        }
        if !plan.to_fixpoint || !progress || shrink.stopped {
            return shrink.current;
        }
    }
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
