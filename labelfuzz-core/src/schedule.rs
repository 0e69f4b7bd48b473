//! Which label to fuzz next. The seed picks labels uniformly; [`Schedule::Rare`] learns instead,
//! in the spirit of libFuzzer's Entropic and AFL++'s rare-edge schedules: a label shown by few
//! of the inputs added so far is rarer (its neighbourhood is less explored), and a label whose
//! expansions keep finding improvements pays off; one that has been picked often for nothing
//! fades. The counts live in [`LabelStats`], beside the best-per-label table.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::labels::Label;

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

/// The counts behind [`Schedule::Rare`], by label.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LabelStats {
    counts: HashMap<Label, LabelCounts>,
    /// The label picked last: the one finds are credited to.
    current: Option<Label>,
}

impl LabelStats {
    /// Counts an input added to the corpus showing `labels`, and credits the label being
    /// fuzzed with a find.
    pub fn added(&mut self, labels: &[Label]) {
        for label in labels {
            self.counts.entry(*label).or_default().shown += 1;
        }
        if let Some(current) = self.current {
            self.counts.entry(current).or_default().finds += 1;
        }
    }

    /// Notes that `label` was picked.
    pub fn picked(&mut self, label: Label) {
        self.counts.entry(label).or_default().picks += 1;
        self.current = Some(label);
    }

    /// The counts of `label` (zeros when never seen).
    #[must_use]
    pub fn counts(&self, label: Label) -> LabelCounts {
        self.counts.get(&label).copied().unwrap_or_default()
    }

    /// How much `label` deserves a pick: payoff (finds per pick, optimistic for labels seldom
    /// picked) divided by the square root of how many added inputs showed it (rarity).
    #[must_use]
    pub fn weight(&self, label: Label) -> f64 {
        let c = self.counts(label);
        let payoff = f64::from(c.finds + 1) / f64::from(c.picks + 1);
        payoff / f64::from(c.shown + 1).sqrt()
    }

    /// Picks one of `labels` (not empty) by `schedule`; `unit` is a uniform random number in
    /// [0, 1).
    #[must_use]
    pub fn pick(&self, schedule: Schedule, labels: &[Label], unit: f64) -> usize {
        let last = labels.len().saturating_sub(1);
        match schedule {
            Schedule::Uniform => ((unit * labels.len() as f64) as usize).min(last),
            Schedule::Rare => {
                let weights: Vec<f64> = labels.iter().map(|&l| self.weight(l)).collect();
                let mut left = unit * weights.iter().sum::<f64>();
                for (index, weight) in weights.iter().enumerate() {
                    if left < *weight {
                        return index;
                    }
                    left -= weight;
                }
                last
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(n: usize) -> Vec<Label> {
        (0..n).map(|i| Label::edge(i, 1)).collect()
    }

    /// How often each label is picked over a grid of unit values.
    fn shares(stats: &LabelStats, schedule: Schedule, labels: &[Label]) -> Vec<usize> {
        let mut picks = vec![0; labels.len()];
        for i in 0..10_000 {
            picks[stats.pick(schedule, labels, f64::from(i) / 10_000.0)] += 1;
        }
        picks
    }

    #[test]
    fn uniform_picks_every_label_alike() {
        let labels = labels(4);
        let picks = shares(&LabelStats::default(), Schedule::Uniform, &labels);
        assert!(picks.iter().all(|&n| n == 2_500), "{picks:?}");
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
        let picks = shares(&stats, Schedule::Rare, &labels);
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
        let labels = labels(5);
        let stats = LabelStats::default();
        for schedule in [Schedule::Uniform, Schedule::Rare] {
            for unit in [0.0, 0.5, 0.999_999_9] {
                assert!(stats.pick(schedule, &labels, unit) < labels.len());
            }
        }
    }
}
