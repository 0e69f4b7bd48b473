//! The coverage shrink's time budget (`--shrink-budget 1`): a shrink of slow executions ends
//! where it got once it has had its time, so that one slow input cannot hold a run up; a long
//! shrink of inputs as fast as the rest runs to its end.

use std::time::{Duration, Instant};

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
}
