//! `summary.json`: what a run found (the engine writes it every two seconds), and how the
//! summaries of a multi-core run's clients merge.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::ToolError;

/// Size of the corpus (the best-per-label inputs).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorpusSize {
    /// Number of inputs.
    pub entries: usize,
    /// Their total length.
    pub bytes: usize,
}

/// One crash label in the summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CrashSummary {
    /// The crash label.
    pub label: String,
    /// `panic`, `signal`, `sanitizer`, `stack-overflow`, `exit`, `timeout` or `oom`.
    pub kind: String,
    /// Where it happened.
    pub location: String,
    /// The first line of the panic message, if any.
    pub message: String,
    /// The reproducer's path, relative to the output directory.
    pub input: String,
    /// The reproducer's length.
    pub len: usize,
    /// Whether the reproducer is shrunk to its minimum: false only when the run ended before
    /// its shrink did (a slow crash's, past the time the run's end allows it); `reduce` on it
    /// finishes the shrink.
    #[serde(default = "yes")]
    pub shrunk: bool,
    /// Seconds into the run when the label was first seen.
    pub first_found_secs: f64,
    /// Executions into the run when the label was first seen.
    pub first_found_execs: u64,
    /// The reproducer's abstract failure pattern, once found (`B ? \xff *`, `((<expr>))`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Executions the pattern cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern_executions: Option<usize>,
    /// The pattern on the reproducer's `Debug` form, for a typed (`Arbitrary`) target
    /// (`[Push(_), Push(_), Add]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typed_pattern: Option<String>,
    /// Crash labels whose patterns and this one's match each other's reproducers: the same
    /// bug.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub same_bug_as: Vec<String>,
    /// The crash's frames (offsets in the executable, innermost first), for reports in
    /// libFuzzer's shape.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frames: Vec<usize>,
}

/// `summary.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Executions so far.
    pub executions: u64,
    /// Seconds since the run started.
    pub elapsed_secs: f64,
    /// Executions per second over the whole run.
    pub execs_per_sec: f64,
    /// Labels held (edge, bucket pairs).
    pub labels: usize,
    /// Distinct edges reached.
    pub edges: usize,
    /// The corpus.
    pub corpus: CorpusSize,
    /// Every crash label with its reproducer.
    pub crashes: Vec<CrashSummary>,
    /// The largest resident memory of the fuzzing process (since its last restart), in MiB;
    /// in a multi-core run, the sum over the clients.
    #[serde(default)]
    pub peak_rss_mb: usize,
    /// Fuzzing processes (clients) in the run.
    #[serde(default = "one")]
    pub clients: usize,
    /// Inputs received from other clients (or machines) that improved a label of this table;
    /// in a multi-core run, the sum over the clients.
    #[serde(default)]
    pub imported: usize,
    /// Tokens learned from the target's comparisons (`learned.dict`); in a multi-core run, the
    /// most any client learned.
    #[serde(default)]
    pub learned_tokens: usize,
    /// What the target did to the fuzzing process that labelfuzz put back (the runtime's
    /// `interference`), e.g. `replaced the SIGSEGV handler`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_interference: Vec<String>,
    /// Reproducers written again because their file was deleted or replaced during the run;
    /// in a multi-core run, the sum over the clients.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reproducers_rewritten: usize,
    /// Fuzzing processes started again after one was killed outright (SIGKILL, the kernel's
    /// out-of-memory killer) without saving its state; in a multi-core run, the sum over the
    /// clients.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub restarts_after_kill: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn one() -> usize {
    1
}

fn yes() -> bool {
    true
}

impl Summary {
    /// Merges the summaries of the clients of one run: executions, speed, memory and imports
    /// add up; labels, edges and the corpus are the largest table's (the tables converge on the
    /// same set); crash labels are united, each with its shortest reproducer.
    #[must_use]
    pub fn merge(parts: &[Summary]) -> Option<Summary> {
        let largest = parts.iter().max_by_key(|p| p.labels)?;
        let mut crashes: std::collections::BTreeMap<&str, &CrashSummary> =
            std::collections::BTreeMap::new();
        for crash in parts.iter().flat_map(|p| &p.crashes) {
            let kept = crashes.entry(&crash.label).or_insert(crash);
            if crash.len < kept.len
                || (crash.len == kept.len && crash.first_found_secs < kept.first_found_secs)
            {
                *kept = crash;
            }
        }
        Some(Summary {
            executions: parts.iter().map(|p| p.executions).sum(),
            elapsed_secs: parts.iter().map(|p| p.elapsed_secs).fold(0.0, f64::max),
            execs_per_sec: parts.iter().map(|p| p.execs_per_sec).sum(),
            labels: largest.labels,
            edges: largest.edges,
            corpus: largest.corpus.clone(),
            crashes: crashes.into_values().cloned().collect(),
            peak_rss_mb: parts.iter().map(|p| p.peak_rss_mb).sum(),
            clients: parts.len(),
            imported: parts.iter().map(|p| p.imported).sum(),
            learned_tokens: parts.iter().map(|p| p.learned_tokens).max().unwrap_or(0),
            reproducers_rewritten: parts.iter().map(|p| p.reproducers_rewritten).sum(),
            restarts_after_kill: parts.iter().map(|p| p.restarts_after_kill).sum(),
            target_interference: parts
                .iter()
                .flat_map(|p| p.target_interference.iter().cloned())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect(),
        })
    }

    /// Reads a `summary.json` (a run's, or a client's under `clients/`).
    ///
    /// # Errors
    /// When the file cannot be read or is not a summary.
    pub fn read_file(path: &Path) -> Result<Self, ToolError> {
        let text = std::fs::read(path).map_err(|e| ToolError::io("read", path, e))?;
        serde_json::from_slice(&text).map_err(|e| ToolError::unreadable(path, e))
    }
}
