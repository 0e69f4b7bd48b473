//! Which label to fuzz next. The seed picks labels uniformly; [`Schedule::Rare`] learns instead,
//! in the spirit of libFuzzer's Entropic and AFL++'s rare-edge schedules: a label shown by few
//! of the inputs added so far is rarer (its neighbourhood is less explored), and a label whose
//! expansions keep finding improvements pays off; one that has been picked often for nothing
//! fades. The counts live in [`LabelStats`], beside the best-per-label table.

use serde::{Deserialize, Serialize};

use crate::labels::{Label, LabelMap};

/// How labels are picked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Schedule {
    /// Every label alike (the seed's rule).
    #[default]
    Uniform,
    /// Weighted by rarity and payoff (see [`LabelStats::weight`]).
    Rare,
}

/// What one label's schedule has shown so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelCounts {
    /// Inputs added to the corpus that showed this label.
    pub shown: u32,
    /// Times this label was picked.
    pub picks: u32,
    /// Inputs added while this label's best input was being fuzzed.
    pub finds: u32,
}

/// The counts behind [`Schedule::Rare`], by label, with the labels' weights in a Fenwick tree so
/// that a pick and an update cost a logarithm of the number of labels, not a pass over them
/// (a pass per pick cost a fast target more than half its executions).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LabelStats {
    /// Each label's slot in `labels`, `counts` and the tree.
    slots: LabelMap<usize>,
    labels: Vec<Label>,
    counts: Vec<LabelCounts>,
    /// Fenwick tree over the weights of the counts (`tree[i]` sums a range ending at slot `i`).
    tree: Vec<f64>,
    /// The label picked last: the one finds are credited to.
    current: Option<Label>,
}

impl LabelStats {
    /// Counts an input added to the corpus showing `labels`, and credits the label being
    /// fuzzed with a find.
    pub fn added(&mut self, labels: &[Label]) {
        for &label in labels {
            self.update(label, |c| c.shown += 1);
        }
        if let Some(current) = self.current {
            self.update(current, |c| c.finds += 1);
        }
    }

    /// How many labels have counts.
    #[must_use]
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// True before any label has counts.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Gives every one of `labels` counts (zeros for a label never counted), so that each can
    /// be picked.
    pub fn know(&mut self, labels: &[Label]) {
        for &label in labels {
            self.slot(label);
        }
    }

    /// Notes that `label` was picked.
    pub fn picked(&mut self, label: Label) {
        self.update(label, |c| c.picks += 1);
        self.current = Some(label);
    }

    /// The counts of `label` (zeros when never seen).
    #[must_use]
    pub fn counts(&self, label: Label) -> LabelCounts {
        self.slots
            .get(&label)
            .map(|&slot| self.counts[slot])
            .unwrap_or_default()
    }

    /// How much `label` deserves a pick: payoff (finds per pick, optimistic for labels seldom
    /// picked) divided by the square root of how many added inputs showed it (rarity).
    #[must_use]
    pub fn weight(&self, label: Label) -> f64 {
        weight_of(self.counts(label))
    }

    /// A label drawn with probability proportional to its weight; `unit` is a uniform random
    /// number in [0, 1). `None` before any input was added.
    #[must_use]
    pub fn pick_rare(&self, unit: f64) -> Option<Label> {
        if self.labels.is_empty() {
            return None;
        }
        let mut left = unit * self.prefix_sum(self.labels.len());
        // Descend the tree: the longest prefix whose sum stays at most `left`.
        let mut slot = 0;
        let mut step = self.tree.len().next_power_of_two();
        while step > 0 {
            let next = slot + step;
            if next <= self.tree.len() && self.tree[next - 1] <= left {
                slot = next;
                left -= self.tree[next - 1];
            }
            step /= 2;
        }
        Some(self.labels[slot.min(self.labels.len() - 1)])
    }

    /// The slot of `label`, made when new.
    fn slot(&mut self, label: Label) -> usize {
        if let Some(&slot) = self.slots.get(&label) {
            return slot;
        }
        let slot = self.labels.len();
        self.slots.insert(label, slot);
        self.labels.push(label);
        self.counts.push(LabelCounts::default());
        // The new node covers the slots (position - lowbit, position], its own included.
        let position = slot + 1;
        let low = position & position.wrapping_neg();
        let covered: f64 = self.counts[position - low..=slot]
            .iter()
            .map(|&c| weight_of(c))
            .sum();
        self.tree.push(covered);
        slot
    }

    /// Changes `label`'s counts and its weight in the tree.
    fn update(&mut self, label: Label, change: impl FnOnce(&mut LabelCounts)) {
        let slot = self.slot(label);
        let before = weight_of(self.counts[slot]);
        change(&mut self.counts[slot]);
        let delta = weight_of(self.counts[slot]) - before;
        let mut position = slot + 1;
        while position <= self.tree.len() {
            self.tree[position - 1] += delta;
            position += position & position.wrapping_neg();
        }
    }

    /// The sum of the weights of the first `count` slots.
    fn prefix_sum(&self, count: usize) -> f64 {
        let mut sum = 0.0;
        let mut position = count;
        while position > 0 {
            sum += self.tree[position - 1];
            position &= position - 1;
        }
        sum
    }
}

/// See [`LabelStats::weight`].
fn weight_of(c: LabelCounts) -> f64 {
    let payoff = f64::from(c.finds + 1) / f64::from(c.picks + 1);
    payoff / f64::from(c.shown + 1).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(n: usize) -> Vec<Label> {
        (0..n).map(|i| Label::edge(i, 1)).collect()
    }

    /// How often each label is picked over a grid of unit values.
    fn shares(stats: &LabelStats, labels: &[Label]) -> Vec<usize> {
        let mut picks = vec![0; labels.len()];
        for i in 0..10_000 {
            let label = stats.pick_rare(f64::from(i) / 10_000.0).expect("a label");
            picks[labels
                .iter()
                .position(|&l| l == label)
                .expect("a known label")] += 1;
        }
        picks
    }

    #[test]
    fn picks_follow_the_weights_exactly() {
        let labels = labels(37);
        let mut stats = LabelStats::default();
        for (i, label) in labels.iter().enumerate() {
            for _ in 0..=i % 5 {
                stats.added(&[*label]);
            }
        }
        let total: f64 = labels.iter().map(|&l| stats.weight(l)).sum();
        let picks = shares(&stats, &labels);
        for (label, picked) in labels.iter().zip(&picks) {
            let expected = 10_000.0 * stats.weight(*label) / total;
            assert!((*picked as f64 - expected).abs() <= 1.5, "{picks:?}");
        }
    }

    #[test]
    fn rare_labels_and_paying_ones_are_picked_more() {
        let labels = labels(3);
        let mut stats = LabelStats::default();
        // Label 0 is shown by every input added; labels 1 and 2 by none but the first.
        stats.added(&labels);
        for _ in 0..15 {
            stats.added(&labels[..1]);
        }
        // Label 2 was picked ten times for nothing.
        for _ in 0..10 {
            stats.picked(labels[2]);
        }
        stats.current = None;
        let picks = shares(&stats, &labels);
        assert!(picks[1] > picks[0] * 2, "rarity: {picks:?}");
        assert!(picks[1] > picks[2] * 5, "payoff: {picks:?}");
        // A find revives it.
        stats.picked(labels[2]);
        for _ in 0..20 {
            stats.added(&[]);
        }
        assert!(stats.weight(labels[2]) > stats.weight(labels[1]));
    }

    #[test]
    fn every_unit_value_picks_a_label() {
        assert_eq!(LabelStats::default().pick_rare(0.5), None);
        let mut stats = LabelStats::default();
        stats.added(&labels(5));
        for unit in [0.0, 0.5, 0.999_999_9] {
            assert!(stats.pick_rare(unit).is_some());
        }
    }
}
