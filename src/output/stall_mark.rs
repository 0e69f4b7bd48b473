//! The output directory's note that the run's edges stalled (`--cmp-progress 2`): the one
//! piece of a run's fuzzing state that every process of it, and a later run resumed in the same
//! directory, must share.

use std::path::Path;

use super::OutputDir;
use crate::error::LabelfuzzError;

/// The file whose presence says the run's edges stalled; it holds the executions of the
/// process that saw it, when it did.
const EDGES_STALLED: &str = "edges-stalled";

impl OutputDir {
    /// Notes that the run's edges stalled after `executions` executions, so that comparison
    /// progress labels are on in every client of the run, in a process restarted after a kill,
    /// and in a later run resumed here (whose corpus holds inputs kept for those labels).
    ///
    /// # Errors
    /// When the file cannot be written.
    pub fn mark_edges_stalled(&self, executions: u64) -> Result<(), LabelfuzzError> {
        self.write_atomic(
            Path::new(EDGES_STALLED),
            format!("{executions}\n").as_bytes(),
        )
    }

    /// Whether a process of this run, or of an earlier one here, saw the run's edges stall.
    #[must_use]
    pub fn edges_stalled(&self) -> bool {
        self.root().join(EDGES_STALLED).exists()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_is_seen_by_every_handle_on_the_directory_and_by_a_later_run() {
        let dir = std::env::temp_dir().join(format!("labelfuzz-stall-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = OutputDir::create(&dir).unwrap();
        let other_client = out.clone();
        assert!(!other_client.edges_stalled());
        out.mark_edges_stalled(1_234_567).unwrap();
        assert!(other_client.edges_stalled());
        assert!(OutputDir::create(&dir).unwrap().edges_stalled());
        assert_eq!(
            std::fs::read_to_string(dir.join(EDGES_STALLED)).unwrap(),
            "1234567\n"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
