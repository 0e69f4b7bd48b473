//! The stall switch: comparison progress labels (`--cmp-progress 2`, the default) and havoc's
//! long runs (`--long-runs 2`) turned on once the run's edges stop growing.
//!
//! Comparison progress pays where edges have run dry (a checksum, a length field, a magic word
//! behind a plateau: libdeflate and xz in the ablation bench, whose edges grow in rare steps
//! after the first minutes) and costs where edges still come (SQLite, lcms: the callbacks slow
//! every execution and their labels dilute the schedule). Long runs likewise reach a compressed
//! block's long match (lz4, zlib) but, from the start, fill the corpus with long inputs that
//! loops keep for their hit counts and that run slowly (xz). So the run starts on edges alone and
//! switches once they stall: when it has run half again as many executions as it had when the
//! last new edge came, and at least [`MIN_QUIET_EXECUTIONS`] without one. Only distinct edges
//! count, not new hit-count buckets of known ones, and executions, not seconds, so that the
//! switch does not depend on how fast the machine is. Each fuzzing process watches its own
//! executions; the first to see the stall marks the output directory
//! ([`OutputDir::mark_edges_stalled`]), and the mark switches the run's other clients, a process
//! restarted after a crash or a kill, and a later run resumed there, whose corpus holds inputs
//! kept for comparison labels alone.

use libafl::state::HasExecutions;
use libafl::{stages::Stage, Error, HasMetadata};

use crate::config::Switch;
use crate::output::OutputDir;
use crate::table::CorpusTable;

/// The fewest executions without a new edge that count as a stall.
pub(crate) const MIN_QUIET_EXECUTIONS: u64 = 500_000;

/// Executions between two looks at the edge count (counting edges walks every label).
const LOOK_EVERY: u64 = 20_000;

/// Whether this fuzzing process has seen the run's edges stall; state metadata, so that a process
/// restarted after a crash keeps its count. `grew_at` is the look that saw the growth, within
/// [`LOOK_EVERY`] executions of the new edge.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EdgeStall {
    /// Edges the run held at the last look.
    edges: usize,
    /// Executions when the edge count last grew.
    grew_at: u64,
    /// Executions at the last look.
    looked_at: u64,
    /// The run stalled once; it stays switched.
    stalled: bool,
}

libafl_bolts::impl_serdeany!(EdgeStall);

impl EdgeStall {
    /// Whether a look is due at `executions`.
    #[must_use]
    pub fn look_due(&self, executions: u64) -> bool {
        !self.stalled && executions.saturating_sub(self.looked_at) >= LOOK_EVERY
    }

    /// Notes that the run holds `edges` edges after `executions` executions; true once the run
    /// has stalled (and from then on).
    pub fn observe(&mut self, edges: usize, executions: u64) -> bool {
        if self.stalled {
            return true;
        }
        self.looked_at = executions;
        if edges > self.edges {
            self.edges = edges;
            self.grew_at = executions;
            return false;
        }
        let quiet = executions.saturating_sub(self.grew_at);
        self.stalled = quiet >= MIN_QUIET_EXECUTIONS.max(self.grew_at / 2);
        self.stalled
    }

    /// Whether the run has stalled.
    #[must_use]
    pub fn stalled(&self) -> bool {
        self.stalled
    }

    /// Takes on a stall another process of the run saw.
    pub fn adopt_stall(&mut self) {
        self.stalled = true;
    }
}

/// Turns comparison progress and long runs on (those whose flag says 2) once the run's edges
/// stall ([`EdgeStall`]), or once another process of the run has marked the output directory.
#[derive(Debug)]
pub struct StallSwitchStage {
    /// The output directory the stall is marked in; `None` when the run does not switch.
    watched: Option<OutputDir>,
    /// Comparison progress comes on at the stall.
    cmp_progress: bool,
    /// Long runs come on at the stall.
    long_runs: bool,
    /// `-q`: no line when the switch comes.
    quiet: bool,
}

impl StallSwitchStage {
    /// A stage that watches for the stall when `cmp_progress` or `long_runs` waits for it, and
    /// otherwise does nothing.
    #[must_use]
    pub fn new(cmp_progress: Switch, long_runs: Switch, out: &OutputDir, quiet: bool) -> Self {
        let cmp_progress = cmp_progress == Switch::OnceStalled;
        let long_runs = long_runs == Switch::OnceStalled;
        StallSwitchStage {
            watched: (cmp_progress || long_runs).then(|| out.clone()),
            cmp_progress,
            long_runs,
            quiet,
        }
    }

    /// Turns on what waits for the stall.
    fn switch(&self) {
        switch_on(self.cmp_progress, self.long_runs);
    }

    /// What the stall turned on, for the line that says so.
    fn switched(&self) -> String {
        let mut parts = Vec::new();
        if self.cmp_progress {
            parts.push("comparison progress labels on (--cmp-progress 2)");
        }
        if self.long_runs {
            parts.push("long runs in havoc (--long-runs 2)");
        }
        parts.join(", ")
    }
}

/// Turns on, in this process, comparison progress and long runs where asked: at the stall, or
/// when a fuzzing process starts (the flags' 1, or their 2 in a run that has stalled).
pub fn switch_on(cmp_progress: bool, long_runs: bool) {
    if cmp_progress {
        crate::cmp_progress::enable();
    }
    if long_runs {
        crate::long_run::enable();
    }
}

impl<E, EM, S, Z> Stage<E, EM, S, Z> for StallSwitchStage
where
    S: HasMetadata + HasExecutions,
{
    fn perform(
        &mut self,
        _fuzzer: &mut Z,
        _executor: &mut E,
        state: &mut S,
        _manager: &mut EM,
    ) -> Result<(), Error> {
        let Some(out) = &self.watched else {
            return Ok(());
        };
        let executions = *state.executions();
        let stall = state.metadata_or_insert_with(EdgeStall::default);
        if !stall.look_due(executions) {
            return Ok(());
        }
        let edges = state
            .metadata::<CorpusTable>()
            .map_or(0, |table| table.edge_count());
        let stall = state.metadata_mut::<EdgeStall>()?;
        if out.edges_stalled() {
            stall.adopt_stall();
            self.switch();
        } else if stall.observe(edges, executions) {
            self.switch();
            // Unmarked, the run's other processes only switch when they see the stall too.
            if let Err(e) = out.mark_edges_stalled(executions) {
                crate::say!(
                    "labelfuzz: warning: the stall is not shared with other processes: {e}"
                );
            }
            if !self.quiet {
                crate::say!(
                    "labelfuzz: edges stalled after {executions} executions: {}",
                    self.switched()
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_whose_edges_keep_growing_never_stalls() {
        let mut watch = EdgeStall::default();
        for step in 1..1000u64 {
            assert!(!watch.observe(step as usize, step * 100_000));
        }
    }

    #[test]
    fn a_stall_is_half_again_the_executions_of_the_last_new_edge() {
        let mut watch = EdgeStall::default();
        assert!(!watch.observe(10, 4_000_000));
        assert!(!watch.observe(10, 5_999_999));
        assert!(watch.observe(10, 6_000_000));
        // Once switched, it stays switched.
        assert!(watch.observe(11, 6_100_000));
        assert!(!watch.look_due(u64::MAX));
    }

    #[test]
    fn an_early_stall_needs_the_minimum_quiet_executions() {
        let mut watch = EdgeStall::default();
        assert!(!watch.observe(3, 1_000));
        assert!(!watch.observe(3, MIN_QUIET_EXECUTIONS));
        assert!(watch.observe(3, MIN_QUIET_EXECUTIONS + 1_000));
    }

    #[test]
    fn the_switch_watches_only_when_something_waits_for_the_stall() {
        let dir =
            std::env::temp_dir().join(format!("labelfuzz-stall-switch-{}", std::process::id()));
        let out = OutputDir::create(&dir).unwrap();
        let neither = StallSwitchStage::new(Switch::FromStart, Switch::Off, &out, true);
        assert!(neither.watched.is_none());
        let both = StallSwitchStage::new(Switch::OnceStalled, Switch::OnceStalled, &out, true);
        assert!(both.watched.is_some());
        assert_eq!(
            both.switched(),
            "comparison progress labels on (--cmp-progress 2), long runs in havoc (--long-runs 2)"
        );
        let long_runs = StallSwitchStage::new(Switch::Off, Switch::OnceStalled, &out, true);
        assert_eq!(long_runs.switched(), "long runs in havoc (--long-runs 2)");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn looks_are_spaced() {
        let mut watch = EdgeStall::default();
        assert!(watch.look_due(LOOK_EVERY));
        watch.observe(1, LOOK_EVERY);
        assert!(!watch.look_due(LOOK_EVERY + 1));
        assert!(watch.look_due(2 * LOOK_EVERY));
    }
}
