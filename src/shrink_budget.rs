//! The shrinks' time budgets: a coverage shrink of slow executions ends where it got once it
//! has had its time (`--shrink-budget 1`), so that one slow input cannot hold a run up, while a
//! long shrink of inputs as fast as the rest runs to its end; shrinking slow crashes (timeouts,
//! out-of-memory) draws on a budget of its own.

use std::time::{Duration, Instant};

use libafl_bolts::impl_serdeany;
use serde::{Deserialize, Serialize};

/// The least time one coverage shrink gets under `--shrink-budget 1`.
pub const COVERAGE_SHRINK_TIME: Duration = Duration::from_secs(2);

/// Under `--shrink-budget 1`, one coverage shrink also gets this share of the run's time so far
/// (1 in 50: 12 s ten minutes in), when that is more than [`COVERAGE_SHRINK_TIME`].
pub const COVERAGE_SHRINK_SHARE: u32 = 50;

/// Under `--shrink-budget 1`, a coverage shrink past its time is ended only when its executions
/// took this many times the run's mean execution time or more: the slow input's shrink that holds
/// a run up (lcms), not a long shrink of inputs that run as fast as the rest (libdeflate's,
/// which the ablation bench measured to pay off when left to finish).
pub const SLOW_SHRINK_FACTOR: f64 = 10.0;

/// The clock of the coverage shrink under way (`--shrink-budget 1`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CoverageShrinkClock {
    /// When it began.
    began: Instant,
    /// The run's executions when it began.
    executions_before: u64,
    /// From when it may be ended.
    deadline: Instant,
    /// The run's mean seconds per execution when it began, times [`SLOW_SHRINK_FACTOR`]: its own
    /// executions, on average slower than this, end it past the deadline.
    slow_execution_secs: f64,
}

impl CoverageShrinkClock {
    /// The clock of a shrink beginning now, `run_time` and `executions` into the run.
    pub(crate) fn begin(run_time: Duration, executions: u64) -> Self {
        let slow_execution_secs = secs_per_execution(run_time, executions) * SLOW_SHRINK_FACTOR;
        let began = Instant::now();
        CoverageShrinkClock {
            began,
            executions_before: executions,
            deadline: began + COVERAGE_SHRINK_TIME.max(run_time / COVERAGE_SHRINK_SHARE),
            slow_execution_secs,
        }
    }

    /// Whether the shrink should end at `now`, with the run at `executions`.
    pub(crate) fn spent(&self, now: Instant, executions: u64) -> bool {
        if now <= self.deadline {
            return false;
        }
        let own_executions = executions.saturating_sub(self.executions_before);
        secs_per_execution(now - self.began, own_executions) >= self.slow_execution_secs
    }
}

/// The mean seconds per execution of `executions` that took `time` (all of it: none ran).
fn secs_per_execution(time: Duration, executions: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)] // a mean: precision beyond 2^52 executions is moot
    let executions = executions.max(1) as f64;
    time.as_secs_f64() / executions
}

/// The time that shrinking slow crashes (timeouts, out-of-memory) may take: a floor plus a
/// share of the run so far, so that a hang found early cannot take the rest of the run. (Before
/// it, one 2-second PNG found after 11 seconds of a ten-minute run took the other 589: 353
/// executions a second where there had been 18 000.) A shrink that runs out is left unfinished
/// and resumes, from its best reproducer so far, once the run has earned more time; the
/// reproducer is on disk all along. A shrink still unfinished when the run reaches its limits
/// gets [`SlowShrinkBudget::END_ALLOWANCE_SECS`] more (see [`SlowShrinkBudget::end`]). Kept in
/// the state, so that it survives the restart each timeout causes.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SlowShrinkBudget {
    spent_secs: f64,
    /// When the candidate running now started (seconds since the Unix epoch). Still set after
    /// a restart when that candidate ended the process: its time, restart included, is
    /// charged then.
    running_since: Option<f64>,
    /// Once the run reached its limits: when the time its unfinished shrinks get ends
    /// (seconds since the Unix epoch).
    #[serde(default)]
    ends_by: Option<f64>,
}

impl_serdeany!(SlowShrinkBudget);

impl SlowShrinkBudget {
    /// Seconds allowed whatever the run's length.
    pub const FLOOR_SECS: f64 = 10.0;
    /// The share of the run's time allowed on top.
    pub const SHARE: f64 = 0.1;
    /// Seconds a run past its limits (`--max-time`, `--runs`) may go on to finish the crash
    /// shrinks it left unfinished: a reproducer a run hands back is shrunk, whatever the budget
    /// had left when the limits came.
    pub const END_ALLOWANCE_SECS: f64 = 10.0;

    fn settle(&mut self, now: f64) {
        if let Some(since) = self.running_since.take() {
            self.spent_secs += (now - since).max(0.0);
        }
    }

    /// True when a slow shrink may run another candidate, `elapsed` seconds into the run
    /// (`now`: seconds since the Unix epoch).
    pub fn available(&mut self, now: f64, elapsed: f64) -> bool {
        self.settle(now);
        if let Some(ends_by) = self.ends_by {
            return now < ends_by;
        }
        self.spent_secs < Self::FLOOR_SECS + Self::SHARE * elapsed.max(0.0)
    }

    /// The run reached its limits at `now`: shrinks left unfinished may go on until the
    /// time this returns ([`Self::END_ALLOWANCE_SECS`] on), fixed at the first call so that a
    /// restart during them (a timeout) gives no more.
    pub fn end(&mut self, now: f64) -> f64 {
        *self.ends_by.get_or_insert(now + Self::END_ALLOWANCE_SECS)
    }

    /// A slow-shrink candidate starts running.
    pub fn start(&mut self, now: f64) {
        self.settle(now);
        self.running_since = Some(now);
    }

    /// The candidate running returned.
    pub fn finish(&mut self, now: f64) {
        self.settle(now);
    }

    /// Seconds spent so far.
    #[must_use]
    pub fn spent_secs(&self) -> f64 {
        self.spent_secs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_coverage_shrink_past_its_time_ends_only_when_its_executions_are_slow() {
        let began = Instant::now();
        // The run's mean: 1 ms per execution, so 10 ms or more is slow.
        let clock = CoverageShrinkClock {
            began,
            executions_before: 1000,
            deadline: began + Duration::from_secs(2),
            slow_execution_secs: 0.001 * SLOW_SHRINK_FACTOR,
        };
        let at = |secs| began + Duration::from_secs(secs);
        // Within its time, even 100 ms per execution goes on.
        assert!(!clock.spent(at(1), 1010));
        // Past it, at the run's pace (3 s for 3000 executions), it goes on...
        assert!(!clock.spent(at(3), 4000));
        // ...and ends at 3 s for 30 executions (100 ms each),
        assert!(clock.spent(at(3), 1030));
        // or with none run since it began.
        assert!(clock.spent(at(3), 1000));
    }

    #[test]
    fn slow_shrinks_get_a_floor_and_a_share_of_the_run() {
        let mut budget = SlowShrinkBudget::default();
        let start = 1_000.0;
        assert!(budget.available(start + 5.0, 5.0));
        // A candidate that ended the process is charged when the next check settles it.
        budget.start(start + 5.0);
        assert!(!budget.available(start + 17.0, 17.0), "12 s spent of 11.7");
        assert!((budget.spent_secs() - 12.0).abs() < 1e-9);
        // The run earns more: 10 % of 100 s on top of the floor.
        assert!(budget.available(start + 100.0, 100.0));
        budget.start(start + 100.0);
        budget.finish(start + 110.0);
        assert!(!budget.available(start + 110.0, 110.0), "22 s spent of 21");
        // A clock that went backwards charges nothing.
        budget.start(start + 200.0);
        budget.finish(start + 150.0);
        assert!((budget.spent_secs() - 22.0).abs() < 1e-9);
    }

    #[test]
    fn a_run_at_its_limits_gives_unfinished_shrinks_one_allowance() {
        let mut budget = SlowShrinkBudget::default();
        let start = 1_000.0;
        budget.start(start);
        budget.finish(start + 30.0);
        assert!(!budget.available(start + 30.0, 30.0), "30 s spent of 13");
        let ends_by = budget.end(start + 30.0);
        assert!((ends_by - (start + 30.0 + SlowShrinkBudget::END_ALLOWANCE_SECS)).abs() < 1e-9);
        assert!(budget.available(start + 35.0, 35.0));
        // A restart that ends the run again (after a timeout) gets no more time.
        assert!((budget.end(start + 39.0) - ends_by).abs() < 1e-9);
        assert!(!budget.available(ends_by, ends_by - start));
    }
}
