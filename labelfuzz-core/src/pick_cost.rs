//! What fuzzing each corpus entry costs, so that slow entries are picked less often.
//!
//! Every pick of an entry runs its expansions and mutants, and all of them take about as long
//! as the entry itself: an entry whose executions take ten times the average costs ten picks of
//! the others. Picked as often as any other, a few slow entries (long inputs of a decompressor
//! that declare large outputs) take most of the run's time. In the spirit of AFL++'s
//! performance score, a label drawn by the schedule is kept only with a probability that falls
//! with its entry's time per execution relative to the run's average, so that every entry gets
//! roughly an equal share of the time rather than an equal share of the picks.
//!
//! The time is measured per pick, not per execution: two clock readings a pick cost nothing,
//! where a reading around every execution would slow a fast target.

use std::collections::HashMap;
use std::time::Duration;

/// How much the run-wide average keeps of its past at each pick: it follows the run's recent
/// picks (a few thousand), not the first minute's short inputs.
const AVERAGE_MEMORY: f64 = 0.999;

/// The smallest chance an entry is kept at when drawn, however slow: no label is starved.
const LEAST_ACCEPTANCE: f64 = 1.0 / 64.0;

/// Time per execution of each entry picked so far, and of the run.
#[derive(Clone, Debug, Default)]
pub struct PickCosts {
    /// Nanoseconds per execution of each entry's picks, smoothed over its picks.
    per_entry: HashMap<usize, f64>,
    /// Nanoseconds spent in recent picks (decayed), over the executions they ran (decayed).
    recent_nanos: f64,
    recent_executions: f64,
}

impl PickCosts {
    /// Records a pick of `entry` that took `elapsed` and ran `executions` executions.
    pub fn record(&mut self, entry: usize, elapsed: Duration, executions: u64) {
        if executions == 0 {
            // Every candidate was already run: nothing was learnt about its speed.
            return;
        }
        let nanos = elapsed.as_nanos() as f64;
        let per_execution = nanos / executions as f64;
        self.per_entry
            .entry(entry)
            .and_modify(|cost| *cost = (*cost + per_execution) / 2.0)
            .or_insert(per_execution);
        self.recent_nanos = self.recent_nanos * AVERAGE_MEMORY + nanos;
        self.recent_executions = self.recent_executions * AVERAGE_MEMORY + executions as f64;
    }

    /// The chance that `entry`, when drawn, is kept: 1 for an entry never picked or at most as
    /// slow as the run's average, the average over its time per execution otherwise.
    #[must_use]
    pub fn acceptance(&self, entry: usize) -> f64 {
        let Some(&cost) = self.per_entry.get(&entry) else {
            return 1.0;
        };
        if self.recent_executions <= 0.0 || cost <= 0.0 {
            return 1.0;
        }
        let average = self.recent_nanos / self.recent_executions;
        (average / cost).clamp(LEAST_ACCEPTANCE, 1.0)
    }

    /// Forgets `entry` (it left the corpus).
    pub fn forget(&mut self, entry: usize) {
        self.per_entry.remove(&entry);
    }

    /// How many entries have a measured cost.
    #[must_use]
    pub fn len(&self) -> usize {
        self.per_entry.len()
    }

    /// True before any pick was recorded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.per_entry.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn an_entry_never_picked_or_as_fast_as_the_run_is_always_kept() {
        let mut costs = PickCosts::default();
        assert!((costs.acceptance(3) - 1.0).abs() < f64::EPSILON);
        costs.record(1, micros(100), 100);
        costs.record(2, micros(100), 100);
        for entry in 1..=3 {
            assert!((costs.acceptance(entry) - 1.0).abs() < 1e-9);
        }
        costs.record(4, micros(50), 100);
        assert!((costs.acceptance(4) - 1.0).abs() < f64::EPSILON);
        assert!(costs.acceptance(1) < 1.0, "slower than the new average");
    }

    #[test]
    fn a_slow_entry_is_kept_in_proportion_to_its_speed() {
        let mut costs = PickCosts::default();
        for _ in 0..9 {
            costs.record(1, micros(100), 1000);
        }
        // Four times slower an execution, and a tenth of the executions.
        costs.record(2, micros(40), 100);
        let average = (900.0 + 40.0) / 9100.0 * 1000.0;
        let expected = average / 400.0;
        assert!(
            (costs.acceptance(2) - expected).abs() < 0.01,
            "{} against {expected}",
            costs.acceptance(2)
        );
        assert!((costs.acceptance(1) - 1.0).abs() < f64::EPSILON);
    }

    #[test]
    fn no_entry_is_starved_and_a_forgotten_one_starts_afresh() {
        let mut costs = PickCosts::default();
        costs.record(1, micros(1), 1000);
        costs.record(2, Duration::from_secs(1), 1);
        assert!((costs.acceptance(2) - LEAST_ACCEPTANCE).abs() < f64::EPSILON);
        costs.forget(2);
        assert!((costs.acceptance(2) - 1.0).abs() < f64::EPSILON);
        assert_eq!(costs.len(), 1);
    }

    #[test]
    fn a_pick_that_ran_nothing_teaches_nothing() {
        let mut costs = PickCosts::default();
        costs.record(1, micros(100), 0);
        assert!(costs.is_empty());
    }

    #[test]
    fn an_entry_that_speeds_up_is_kept_more() {
        let mut costs = PickCosts::default();
        costs.record(1, micros(10), 100);
        costs.record(2, micros(1000), 100);
        let before = costs.acceptance(2);
        costs.record(2, micros(10), 100);
        assert!(costs.acceptance(2) > before);
    }
}
