//! The run summary: `summary.json`, the corpus directory, and the progress line.

use libafl::state::{HasExecutions, HasImported, HasStartTime};
use libafl::HasMetadata;
use libafl_bolts::current_time;

use crate::crashes::CrashTable;
use crate::error::LabelfuzzError;
use crate::learned_tokens::LearnedTokens;
use crate::output::OutputDir;
use crate::table::CorpusTable;

pub mod summary;

pub use summary::{CorpusSize, CrashSummary, Summary};

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
                        shrunk: r.shrunk,
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
            restarts_after_kill: crate::process::restarts_after_kill(),
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
            self.out
                .write_summary_to(&summary::client_file(self.client.index), &own)?;
            summary::client_parts(&self.out, self.client.count)
        };
        let summary = summary::merge_parts(&self.out, &parts).unwrap_or_else(|| own.clone());
        self.out.write_summary(&summary)?;
        if self.client.is_first() && self.records.series {
            self.write_learned_tokens(state)?;
        }
        if self.client.is_first() && self.records.series {
            let clients: Vec<_> = parts.iter().map(crate::stats::Point::from).collect();
            let offset = state
                .metadata::<crate::stats::SeriesOffset>()
                .copied()
                .unwrap_or_default();
            crate::stats::append(
                &self.out,
                &crate::stats::Point::from(&summary),
                &clients,
                offset,
            )?;
        }
        if !self.quiet && self.client.is_first() {
            crate::say!(
                "{}",
                self.progress
                    .lines(&crate::progress::Figures::from(&summary), moment)
            );
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
        let dir =
            std::env::temp_dir().join(format!("labelfuzz-merged-summary-{}", std::process::id()));
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
            shrunk: true,
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
                restarts_after_kill: 0,
            };
            let text = serde_json::to_vec(&summary).unwrap();
            out.write_atomic(Path::new(&format!("clients/{client}.json")), &text)
                .unwrap();
        }
        let merged = summary::merge_clients(&out, 2).unwrap();
        assert_eq!(merged.crashes.len(), 1);
        assert_eq!(merged.crashes[0].len, 3);
        assert_eq!(merged.learned_tokens, 2, "the most any client learned");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
