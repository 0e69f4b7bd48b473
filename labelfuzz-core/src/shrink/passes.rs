//! The passes: each proposes candidates derived from the current sequence, strictly simpler,
//! through [`Shrinker::offer_buffer`].

use super::{Element, Shrinker, REDISTRIBUTE_WINDOW};

impl<T: Element> Shrinker<'_, T> {
    fn try_delete(&mut self, at: usize, len: usize) -> bool {
        self.candidate.clear();
        self.candidate.extend_from_slice(&self.current[..at]);
        self.candidate.extend_from_slice(&self.current[at + len..]);
        self.offer_buffer()
    }

    fn try_fill(&mut self, at: usize, len: usize, value: T) -> bool {
        self.candidate.clear();
        self.candidate.extend_from_slice(&self.current);
        self.candidate[at..at + len].fill(value);
        self.offer_buffer()
    }

    fn try_move(&mut self, from: usize, to: usize, amount: u64) -> bool {
        self.candidate.clear();
        self.candidate.extend_from_slice(&self.current);
        self.candidate[from] = T::from_u64(self.current[from].to_u64() - amount);
        self.candidate[to] = T::from_u64(self.current[to].to_u64() + amount);
        self.offer_buffer()
    }

    pub(super) fn delete_blocks(&mut self) -> bool {
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
                    // Stay here: the elements now at `at` are new and may go too.
                    end = end.min(self.current.len());
                } else {
                    end -= step;
                }
            }
            size /= 2;
        }
        progress
    }

    pub(super) fn zero_blocks(&mut self) -> bool {
        let mut progress = false;
        let mut size = self.current.len().next_power_of_two();
        while size >= 1 && !self.stopped {
            let mut at = 0;
            while at < self.current.len() && !self.stopped {
                let len = size.min(self.current.len() - at);
                let zero = T::default();
                if self.current[at..at + len].iter().any(|&e| e != zero)
                    && self.try_fill(at, len, zero)
                {
                    progress = true;
                }
                at += size;
            }
            size /= 2;
        }
        progress
    }

    pub(super) fn lower_elements(&mut self) -> bool {
        let mut progress = false;
        let mut at = 0;
        while at < self.current.len() && !self.stopped {
            // Invariant: `hi` is accepted (the current value), `lo` is rejected or unknown-low.
            let (mut lo, mut hi) = (0u64, self.current[at].to_u64());
            if hi == 0 || self.try_fill(at, 1, T::default()) {
                progress |= hi != 0;
                at += 1;
                continue;
            }
            while hi - lo > 1 && !self.stopped {
                let mid = lo + (hi - lo) / 2;
                if self.try_fill(at, 1, T::from_u64(mid)) {
                    progress = true;
                    // A rewriting judge may have changed the sequence's shape: move on.
                    if self.current.get(at).map(|e| e.to_u64()) != Some(mid) {
                        break;
                    }
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            at += 1;
        }
        progress
    }

    pub(super) fn redistribute(&mut self) -> bool {
        let mut progress = false;
        let mut from = 0;
        while from < self.current.len() && !self.stopped {
            let mut to = from + 1;
            while to < self.current.len().min(from + 1 + REDISTRIBUTE_WINDOW) && !self.stopped {
                let most = self.current[from]
                    .to_u64()
                    .min(T::MAX - self.current[to].to_u64());
                // Move as much as possible; if that fails, binary-search the largest move.
                if most > 0 && self.try_move(from, to, most) {
                    progress = true;
                } else if most > 0 {
                    let (mut ok, mut bad) = (0u64, most);
                    while bad - ok > 1 && !self.stopped && to < self.current.len() {
                        let mid = ok + (bad - ok) / 2;
                        if self.try_move(from, to, mid) {
                            progress = true;
                            // The elements changed: measure the remaining headroom anew.
                            bad -= mid;
                            ok = 0;
                        } else {
                            bad = mid;
                        }
                    }
                }
                to += 1;
            }
            from += 1;
        }
        progress
    }

    pub(super) fn delete_and_lower_previous(&mut self) -> bool {
        let mut progress = false;
        for size in 1..=4 {
            let mut at = 1;
            while at + size <= self.current.len() && !self.stopped {
                let previous = self.current[at - 1].to_u64();
                if previous > 0 {
                    self.candidate.clear();
                    self.candidate.extend_from_slice(&self.current[..at]);
                    self.candidate.extend_from_slice(&self.current[at + size..]);
                    self.candidate[at - 1] = T::from_u64(previous - 1);
                    if self.offer_buffer() {
                        progress = true;
                        continue;
                    }
                }
                at += 1;
            }
        }
        progress
    }
}
