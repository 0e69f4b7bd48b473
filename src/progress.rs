//! The progress line on stderr: labelfuzz's own, or libFuzzer's for the tools and scripts that
//! parse libFuzzer's output (`#N  NEW  cov: … ft: … corp: …/…b exec/s: … rss: …Mb`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What a progress line shows, taken from the run's summary.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    /// Executions so far.
    pub executions: u64,
    /// Seconds since the run started.
    pub elapsed_secs: f64,
    /// Executions per second.
    pub execs_per_sec: f64,
    /// Labels held.
    pub labels: usize,
    /// Distinct edges reached.
    pub edges: usize,
    /// Corpus inputs.
    pub corpus_entries: usize,
    /// Corpus bytes.
    pub corpus_bytes: usize,
    /// The kind of every crash label (`panic`, `signal`, `timeout`, ...).
    pub crash_kinds: Vec<String>,
    /// Peak resident memory, MiB.
    pub peak_rss_mb: usize,
}

impl From<&crate::report::Summary> for Figures {
    fn from(summary: &crate::report::Summary) -> Self {
        Figures {
            executions: summary.executions,
            elapsed_secs: summary.elapsed_secs,
            execs_per_sec: summary.execs_per_sec,
            labels: summary.labels,
            edges: summary.edges,
            corpus_entries: summary.corpus.entries,
            corpus_bytes: summary.corpus.bytes,
            crash_kinds: summary.crashes.iter().map(|c| c.kind.clone()).collect(),
            peak_rss_mb: summary.peak_rss_mb,
        }
    }
}

/// Which progress line to print.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProgressStyle {
    /// `#N  T s  exec/s: … labels: … edges: … corpus: …/…b  crashes: …`.
    #[default]
    Labelfuzz,
    /// libFuzzer's format: edges are its `cov:`, labels its `ft:` (features).
    LibFuzzer,
    /// A few lines redrawn in place, for a terminal: labels, edges, corpus, crashes by kind,
    /// exec/s and the time since the last new label.
    Terminal,
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
    /// When the label count last grew, in hundredths of a second into the run.
    last_new_label: Arc<AtomicU64>,
}

/// How many lines the terminal status takes (redrawn in place).
const STATUS_LINES: usize = 3;

/// `1234567` as `1 234 567`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut text = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            text.push(' ');
        }
        text.push(c);
    }
    text
}

/// Seconds as `h:mm:ss`.
fn clock(secs: f64) -> String {
    let secs = secs.max(0.0) as u64;
    format!("{}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// The terminal status of `summary`: `STATUS_LINES` lines, each cleared before it is written.
fn status(summary: &Figures, since_new_label: f64) -> Vec<String> {
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for kind in &summary.crash_kinds {
        match kinds.iter_mut().find(|(k, _)| k == kind) {
            Some((_, n)) => *n += 1,
            None => kinds.push((kind, 1)),
        }
    }
    let crashes = if kinds.is_empty() {
        "none".to_string()
    } else {
        kinds
            .iter()
            .map(|(kind, n)| format!("{n} {kind}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    vec![
        format!(
            "labelfuzz {}   exec/s {}   executions {}   peak RSS {} MiB",
            clock(summary.elapsed_secs),
            grouped(summary.execs_per_sec as u64),
            grouped(summary.executions),
            summary.peak_rss_mb
        ),
        format!(
            "labels {}   edges {}   corpus {} inputs, {} bytes   last new label {} ago",
            grouped(summary.labels as u64),
            grouped(summary.edges as u64),
            grouped(summary.corpus_entries as u64),
            grouped(summary.corpus_bytes as u64),
            clock(since_new_label)
        ),
        format!("crash labels {}: {crashes}", summary.crash_kinds.len()),
    ]
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
    pub fn lines(&self, summary: &Figures, moment: Moment) -> String {
        let labels = summary.labels as u64;
        let first = self.lines.fetch_add(1, Ordering::Relaxed) == 0;
        let grew = self.last_labels.swap(labels, Ordering::Relaxed) < labels;
        let now = (summary.elapsed_secs * 100.0) as u64;
        if grew {
            self.last_new_label.store(now, Ordering::Relaxed);
        }
        match self.style {
            ProgressStyle::Terminal => {
                let since = now.saturating_sub(self.last_new_label.load(Ordering::Relaxed));
                // Back up over the previous status, then clear and write each line.
                let up = if first {
                    String::new()
                } else {
                    format!("\x1b[{STATUS_LINES}A")
                };
                let lines: Vec<String> = status(summary, since as f64 / 100.0)
                    .into_iter()
                    .map(|line| format!("\x1b[2K{line}"))
                    .collect();
                format!("{up}{}", lines.join("\n"))
            }
            ProgressStyle::Labelfuzz => format!(
                "#{:<10} {:>7.1}s  exec/s: {:<9.0} labels: {:<6} edges: {:<6} corpus: {}/{}b  crashes: {}",
                summary.executions,
                summary.elapsed_secs,
                summary.execs_per_sec,
                summary.labels,
                summary.edges,
                summary.corpus_entries,
                summary.corpus_bytes,
                summary.crash_kinds.len()
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
                    summary.corpus_entries,
                    libfuzzer_size(summary.corpus_bytes as u64),
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

    fn summary(executions: u64, labels: usize) -> Figures {
        Figures {
            executions,
            labels,
            edges: 7,
            corpus_entries: 3,
            corpus_bytes: 20_000,
            peak_rss_mb: 31,
            ..Figures::default()
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
    fn the_terminal_status_redraws_three_lines_in_place() {
        let progress = Progress::new(ProgressStyle::Terminal);
        let mut running = summary(1_234_567, 5);
        running.elapsed_secs = 75.0;
        let first = progress.lines(&running, Moment::Periodic);
        assert!(!first.contains("\x1b[3A"), "nothing to back up over yet");
        assert_eq!(first.matches("\x1b[2K").count(), 3);
        assert!(first.contains("executions 1 234 567"), "{first}");
        assert!(first.contains("crash labels 0: none"), "{first}");
        running.elapsed_secs = 80.0;
        let second = progress.lines(&running, Moment::Periodic);
        assert!(second.starts_with("\x1b[3A"));
        assert!(second.contains("last new label 0:00:05 ago"), "{second}");
    }

    #[test]
    fn byte_counts_switch_units_where_libfuzzer_does() {
        assert_eq!(libfuzzer_size(16_383), "16383b");
        assert_eq!(libfuzzer_size(16_384), "16Kb");
        assert_eq!(libfuzzer_size(1 << 24), "16Mb");
    }
}
