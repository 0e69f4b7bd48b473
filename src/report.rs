//! The run summary: `summary.json`, the corpus directory, and the progress line.

use serde::{Deserialize, Serialize};

use libafl::state::{HasExecutions, HasImported, HasStartTime};
use libafl::HasMetadata;
use libafl_bolts::current_time;

use crate::crashes::CrashTable;
use crate::error::LabelfuzzError;
use crate::learned_tokens::LearnedTokens;
use crate::output::OutputDir;
use crate::table::CorpusTable;

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
    /// What the target did to the fuzzing process that labelfuzz put back (see
    /// [`crate::interference`]), e.g. `replaced the SIGSEGV handler`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_interference: Vec<String>,
    /// Reproducers written again because their file was deleted or replaced during the run;
    /// in a multi-core run, the sum over the clients.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reproducers_rewritten: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn one() -> usize {
    1
}

impl Summary {
    /// What the progress line shows of this summary.
    #[must_use]
    pub fn figures(&self) -> crate::progress::Figures {
        crate::progress::Figures {
            executions: self.executions,
            elapsed_secs: self.elapsed_secs,
            execs_per_sec: self.execs_per_sec,
            labels: self.labels,
            edges: self.edges,
            corpus_entries: self.corpus.entries,
            corpus_bytes: self.corpus.bytes,
            crash_kinds: self.crashes.iter().map(|c| c.kind.clone()).collect(),
            peak_rss_mb: self.peak_rss_mb,
        }
    }

    /// Reads a summary written by a run.
    pub fn read(out: &OutputDir) -> Result<Self, LabelfuzzError> {
        Self::read_file(&out.root().join("summary.json"))
    }

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
            target_interference: parts
                .iter()
                .flat_map(|p| p.target_interference.iter().cloned())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect(),
        })
    }

    /// The merge of the summaries the `count` clients of a multi-core run wrote to
    /// `clients/<n>.json` (None when there is none yet). Each crash's length is the length of
    /// the reproducer on disk: the clients share `crashes/`, where the simplest one won, and a
    /// client's own record may be of a reproducer another client's replaced.
    #[must_use]
    pub fn merge_clients(out: &OutputDir, count: usize) -> Option<Summary> {
        Self::merge_parts(out, &Self::client_parts(out, count))
    }

    /// [`Summary::merge`] of the clients' `parts`, each crash with the length of its file in
    /// `out`.
    fn merge_parts(out: &OutputDir, parts: &[Summary]) -> Option<Summary> {
        let mut merged = Self::merge(parts)?;
        for crash in &mut merged.crashes {
            if let Ok(meta) = std::fs::metadata(out.root().join(&crash.input)) {
                crash.len = usize::try_from(meta.len()).unwrap_or(usize::MAX);
            }
        }
        Some(merged)
    }

    /// The summaries the `count` clients of a multi-core run wrote (those there are yet).
    fn client_parts(out: &OutputDir, count: usize) -> Vec<Summary> {
        (1..=count)
            .filter_map(|i| Self::read_file(&out.root().join(format!("clients/{i}.json"))).ok())
            .collect()
    }

    /// The figures of the time series ([`crate::stats`]).
    #[must_use]
    pub fn point(&self) -> crate::stats::Point {
        crate::stats::Point {
            elapsed_secs: self.elapsed_secs,
            executions: self.executions,
            execs_per_sec: self.execs_per_sec,
            labels: self.labels,
            edges: self.edges,
            corpus_entries: self.corpus.entries,
            corpus_bytes: self.corpus.bytes,
            crash_labels: self.crashes.len(),
            timeouts: self.crashes.iter().filter(|c| c.kind == "timeout").count(),
            peak_rss_mb: self.peak_rss_mb,
            imported: self.imported,
        }
    }

    fn read_file(path: &std::path::Path) -> Result<Self, LabelfuzzError> {
        let text = std::fs::read(path).map_err(|e| LabelfuzzError::io("read", path, e))?;
        serde_json::from_slice(&text).map_err(|e| {
            LabelfuzzError::io(
                "parse",
                path,
                std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            )
        })
    }
}

/// Which client of a multi-core run this process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Client {
    /// 1-based index among the clients.
    pub index: usize,
    /// How many clients the run has.
    pub count: usize,
}

impl Client {
    /// The only client of a single-process run.
    pub const ALONE: Client = Client { index: 1, count: 1 };

    /// The first client runs the start inputs (seeds, an earlier run's corpus) and owns
    /// `corpus/`; the others receive what it finds through the broker.
    #[must_use]
    pub fn is_first(self) -> bool {
        self.index == 1
    }
}

/// Writes summaries and the corpus directory, and prints the progress line.
#[derive(Debug, Clone)]
pub struct Reporter {
    out: OutputDir,
    quiet: bool,
    progress: crate::progress::Progress,
    client: Client,
    /// Whether `corpus/` follows the table and the time series grows: not when a run only
    /// replays or reduces inputs, which must leave an earlier campaign's records alone.
    records: Records,
}

/// What a [`Reporter`] keeps besides `summary.json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Records {
    /// `corpus/` (and a libFuzzer corpus directory) follows the table.
    pub corpus: bool,
    /// `stats.jsonl` and `plot_data` grow.
    pub series: bool,
}

impl Reporter {
    /// The output directory reports go to.
    #[must_use]
    pub fn output(&self) -> &OutputDir {
        &self.out
    }

    /// A reporter for `client`, writing under `out`; `quiet` silences the progress line.
    #[must_use]
    pub fn new(out: OutputDir, quiet: bool, client: Client) -> Self {
        Reporter {
            out,
            quiet,
            progress: crate::progress::Progress::default(),
            client,
            records: Records {
                corpus: true,
                series: true,
            },
        }
    }

    /// Prints progress lines in `style`.
    #[must_use]
    pub fn with_progress(mut self, style: crate::progress::ProgressStyle) -> Self {
        self.progress = crate::progress::Progress::new(style);
        self
    }

    /// Keeps only `records` besides `summary.json`.
    #[must_use]
    pub fn keeping(mut self, records: Records) -> Self {
        self.records = records;
        self
    }

    /// Builds the summary of the current state.
    pub fn summarize<S: HasMetadata + HasExecutions + HasStartTime + HasImported>(
        state: &S,
    ) -> Summary {
        let elapsed = current_time()
            .saturating_sub(*state.start_time())
            .as_secs_f64();
        let executions = *state.executions();
        let (labels, edges, corpus) = state.metadata::<CorpusTable>().map_or_else(
            |_| (0, 0, CorpusSize::default()),
            |t| {
                (
                    t.label_count(),
                    t.edge_count(),
                    CorpusSize {
                        entries: t.entry_count(),
                        bytes: t.total_bytes(),
                    },
                )
            },
        );
        let crashes = state
            .metadata::<CrashTable>()
            .map(|t| {
                t.records()
                    .map(|r| CrashSummary {
                        label: r.label.to_string(),
                        kind: r.info.kind.to_string(),
                        location: r.info.location.clone(),
                        message: r.info.message.clone(),
                        input: r.file.clone(),
                        len: r.len,
                        first_found_secs: r.first_found_secs,
                        first_found_execs: r.first_found_execs,
                        pattern: r.pattern.as_ref().map(ToString::to_string),
                        pattern_executions: r.pattern.as_ref().map(crate::pattern::Pattern::probes),
                        typed_pattern: r
                            .pattern
                            .as_ref()
                            .and_then(|p| p.typed().map(ToString::to_string)),
                        same_bug_as: r.same_bug_as.iter().map(ToString::to_string).collect(),
                        frames: r.info.frames.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Summary {
            executions,
            elapsed_secs: elapsed,
            execs_per_sec: if elapsed > 0.0 {
                executions as f64 / elapsed
            } else {
                0.0
            },
            labels,
            edges,
            corpus,
            crashes,
            peak_rss_mb: crate::memory::peak_rss_mb(),
            clients: 1,
            imported: *state.imported(),
            learned_tokens: state
                .metadata::<LearnedTokens>()
                .map_or(0, |learned| learned.tokens().len()),
            target_interference: crate::interference::reported(),
            reproducers_rewritten: state
                .metadata::<CrashTable>()
                .map_or(0, CrashTable::rewritten),
        }
    }

    /// Writes `summary.json` and `corpus/`, appends to the time series (`stats.jsonl`,
    /// `plot_data`), and prints the progress line. In a multi-core run
    /// each client writes its own summary to `clients/<index>.json` and `summary.json` merges
    /// them all; the first client alone writes `corpus/` and prints progress (the merged
    /// figures). Returns this client's summary.
    pub fn report<S: HasMetadata + HasExecutions + HasStartTime + HasImported>(
        &self,
        state: &S,
    ) -> Result<Summary, LabelfuzzError> {
        self.report_at(state, crate::progress::Moment::Periodic)
    }

    /// The run's last report (libFuzzer-style progress ends with its `DONE` line).
    pub fn finish<S: HasMetadata + HasExecutions + HasStartTime + HasImported>(
        &self,
        state: &S,
    ) -> Result<Summary, LabelfuzzError> {
        self.report_at(state, crate::progress::Moment::Final)
    }

    /// Writes `learned.dict`: the tokens this client learned from the target's comparisons, a
    /// dictionary for `-dict`/`--dict` in later runs.
    fn write_learned_tokens<S: HasMetadata>(&self, state: &S) -> Result<(), LabelfuzzError> {
        let Ok(learned) = state.metadata::<LearnedTokens>() else {
            return Ok(());
        };
        if learned.tokens().is_empty() {
            return Ok(());
        }
        let text = crate::dictionary::format_dictionary(learned.tokens().iter().map(Vec::as_slice));
        self.out
            .write_atomic(std::path::Path::new("learned.dict"), text.as_bytes())
    }

    fn report_at<S: HasMetadata + HasExecutions + HasStartTime + HasImported>(
        &self,
        state: &S,
        moment: crate::progress::Moment,
    ) -> Result<Summary, LabelfuzzError> {
        let own = Self::summarize(state);
        if self.client.is_first() && self.records.corpus {
            if let Ok(table) = state.metadata::<CorpusTable>() {
                self.out
                    .sync_corpus(table.entries().map(|e| e.key.as_slice()))?;
                self.out
                    .write_corpus_index(table.entries().map(|e| (e.key.as_slice(), e.holds())))?;
            }
        }
        // Each client's own summary, read once per report in a multi-core run.
        let parts = if self.client == Client::ALONE {
            Vec::new()
        } else {
            let name = format!("clients/{}.json", self.client.index);
            self.out
                .write_summary_to(std::path::Path::new(&name), &own)?;
            Summary::client_parts(&self.out, self.client.count)
        };
        let summary = Summary::merge_parts(&self.out, &parts).unwrap_or_else(|| own.clone());
        self.out.write_summary(&summary)?;
        if self.client.is_first() && self.records.series {
            self.write_learned_tokens(state)?;
        }
        if self.client.is_first() && self.records.series {
            let clients: Vec<_> = parts.iter().map(Summary::point).collect();
            let offset = state
                .metadata::<crate::stats::SeriesOffset>()
                .copied()
                .unwrap_or_default();
            crate::stats::append(&self.out, &summary.point(), &clients, offset)?;
        }
        if !self.quiet && self.client.is_first() {
            crate::say!("{}", self.progress.lines(&summary.figures(), moment));
        }
        Ok(own)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn merged_crash_lengths_are_those_of_the_files_on_disk() {
        let dir = std::env::temp_dir().join(format!("labelfuzz-merge-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = OutputDir::create(&dir).unwrap();
        std::fs::create_dir_all(dir.join("clients")).unwrap();
        out.write_atomic(Path::new("crashes/crash-1"), b"abc")
            .unwrap();
        let crash = |len: usize| CrashSummary {
            label: "crash:1".into(),
            kind: "panic".into(),
            location: "src/lib.rs:1:1".into(),
            message: String::new(),
            input: "crashes/crash-1".into(),
            len,
            first_found_secs: 0.0,
            first_found_execs: 0,
            pattern: None,
            pattern_executions: None,
            typed_pattern: None,
            same_bug_as: Vec::new(),
            frames: Vec::new(),
        };
        for (client, len) in [(1, 7), (2, 5)] {
            let summary = Summary {
                executions: 1,
                elapsed_secs: 1.0,
                execs_per_sec: 1.0,
                labels: 1,
                edges: 1,
                corpus: CorpusSize::default(),
                crashes: vec![crash(len)],
                peak_rss_mb: 0,
                clients: 1,
                imported: 0,
                learned_tokens: client,
                target_interference: Vec::new(),
                reproducers_rewritten: 0,
            };
            let text = serde_json::to_vec(&summary).unwrap();
            out.write_atomic(Path::new(&format!("clients/{client}.json")), &text)
                .unwrap();
        }
        let merged = Summary::merge_clients(&out, 2).unwrap();
        assert_eq!(merged.crashes.len(), 1);
        assert_eq!(merged.crashes[0].len, 3);
        assert_eq!(merged.learned_tokens, 2, "the most any client learned");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
