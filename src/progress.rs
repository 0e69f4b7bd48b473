//! The progress line on stderr: labelfuzz's own, or libFuzzer's for the tools and scripts that
//! parse libFuzzer's output (`#N  NEW  cov: … ft: … corp: …/…b exec/s: … rss: …Mb`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::report::Summary;

/// Which progress line to print.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProgressStyle {
    /// `#N  T s  exec/s: … labels: … edges: … corpus: …/…b  crashes: …`.
    #[default]
    Labelfuzz,
    /// libFuzzer's format: edges are its `cov:`, labels its `ft:` (features).
    LibFuzzer,
}

/// When a line is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// A periodic report while the run goes on.
    Periodic,
    /// The run's last report.
    Final,
}

/// The progress printer of one run (its clones share what was printed so far).
#[derive(Clone, Debug, Default)]
pub struct Progress {
    style: ProgressStyle,
    lines: Arc<AtomicU64>,
    last_labels: Arc<AtomicU64>,
}

/// libFuzzer's way of writing a byte count: b, Kb or Mb.
fn libfuzzer_size(bytes: u64) -> String {
    if bytes < 1 << 14 {
        format!("{bytes}b")
    } else if bytes < 1 << 24 {
        format!("{}Kb", bytes >> 10)
    } else {
        format!("{}Mb", bytes >> 20)
    }
}

impl Progress {
    /// A printer of `style` lines.
    #[must_use]
    pub fn new(style: ProgressStyle) -> Self {
        Progress {
            style,
            ..Progress::default()
        }
    }

    /// The line (or lines) for `summary` at `moment`.
    #[must_use]
    pub fn lines(&self, summary: &Summary, moment: Moment) -> String {
        let labels = summary.labels as u64;
        let first = self.lines.fetch_add(1, Ordering::Relaxed) == 0;
        let grew = self.last_labels.swap(labels, Ordering::Relaxed) < labels;
        match self.style {
            ProgressStyle::Labelfuzz => format!(
                "#{:<10} {:>7.1}s  exec/s: {:<9.0} labels: {:<6} edges: {:<6} corpus: {}/{}b  crashes: {}",
                summary.executions,
                summary.elapsed_secs,
                summary.execs_per_sec,
                summary.labels,
                summary.edges,
                summary.corpus.entries,
                summary.corpus.bytes,
                summary.crashes.len()
            ),
            ProgressStyle::LibFuzzer => {
                let event = match moment {
                    Moment::Final => "DONE  ",
                    Moment::Periodic if first => "INITED",
                    Moment::Periodic if grew => "NEW   ",
                    Moment::Periodic => "pulse ",
                };
                let mut text = format!(
                    "#{}\t{event} cov: {} ft: {} corp: {}/{} exec/s: {:.0} rss: {}Mb",
                    summary.executions,
                    summary.edges,
                    summary.labels,
                    summary.corpus.entries,
                    libfuzzer_size(summary.corpus.bytes as u64),
                    summary.execs_per_sec,
                    summary.peak_rss_mb
                );
                if moment == Moment::Final {
                    text.push_str(&format!(
                        "\nDone {} runs in {:.0} second(s)",
                        summary.executions, summary.elapsed_secs
                    ));
                }
                text
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(executions: u64, labels: usize) -> Summary {
        Summary {
            executions,
            labels,
            edges: 7,
            corpus: crate::report::CorpusSize {
                entries: 3,
                bytes: 20_000,
            },
            peak_rss_mb: 31,
            ..Summary::default()
        }
    }

    #[test]
    fn libfuzzer_lines_read_as_libfuzzer_writes_them() {
        let progress = Progress::new(ProgressStyle::LibFuzzer);
        let inited = progress.lines(&summary(10, 5), Moment::Periodic);
        assert!(inited.starts_with("#10\tINITED cov: 7 ft: 5 corp: 3/19Kb exec/s: "));
        assert!(inited.ends_with(" rss: 31Mb"), "{inited}");
        assert!(progress
            .lines(&summary(20, 9), Moment::Periodic)
            .starts_with("#20\tNEW    cov: 7 ft: 9 "));
        assert!(progress
            .lines(&summary(30, 9), Moment::Periodic)
            .starts_with("#30\tpulse  cov: 7 ft: 9 "));
        let done = progress.lines(&summary(40, 9), Moment::Final);
        assert!(done.starts_with("#40\tDONE   cov: 7 ft: 9 "), "{done}");
        assert!(done.ends_with("\nDone 40 runs in 0 second(s)"), "{done}");
    }

    #[test]
    fn byte_counts_switch_units_where_libfuzzer_does() {
        assert_eq!(libfuzzer_size(16_383), "16383b");
        assert_eq!(libfuzzer_size(16_384), "16Kb");
        assert_eq!(libfuzzer_size(1 << 24), "16Mb");
    }
}
