//! The run's time series: one JSON line every report in `OUT/stats.jsonl`, and the same figures
//! in AFL++'s `plot_data` columns (so afl-plot style tools read them).
//!
//! Lines are appended with one `write` each: a kill -9 leaves at most a partial last line, which
//! [`read_series`] skips, and the next append starts on a fresh line. A run resumed in the same
//! output directory continues the series: its times and executions start where the last line
//! left off ([`SeriesOffset`]).

use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::LabelfuzzError;
use crate::output::OutputDir;

/// The figures of one moment of a run (or of one client of a multi-core run).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Point {
    /// Seconds since this run started.
    pub elapsed_secs: f64,
    /// Executions of this run.
    pub executions: u64,
    /// Executions per second over this run.
    pub execs_per_sec: f64,
    /// Labels held.
    pub labels: usize,
    /// Distinct edges reached.
    pub edges: usize,
    /// Corpus entries.
    pub corpus_entries: usize,
    /// Corpus bytes.
    pub corpus_bytes: usize,
    /// Crash labels, timeouts included.
    pub crash_labels: usize,
    /// Crash labels that are timeouts (AFL++'s hangs).
    pub timeouts: usize,
    /// Peak resident memory, MiB.
    pub peak_rss_mb: usize,
    /// Inputs received from other clients that improved a label.
    pub imported: usize,
}

/// Where an earlier run's series ended: a resumed run adds these to its own time and executions
/// (state metadata, so that it is set once per run, not at every restart of the process).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SeriesOffset {
    /// Seconds the earlier runs fuzzed.
    pub secs: f64,
    /// Executions of the earlier runs.
    pub executions: u64,
}

libafl_bolts::impl_serdeany!(SeriesOffset);

pub use labelfuzz_tools::series::read_series;

impl From<&crate::report::Summary> for Point {
    fn from(summary: &crate::report::Summary) -> Self {
        Point {
            elapsed_secs: summary.elapsed_secs,
            executions: summary.executions,
            execs_per_sec: summary.execs_per_sec,
            labels: summary.labels,
            edges: summary.edges,
            corpus_entries: summary.corpus.entries,
            corpus_bytes: summary.corpus.bytes,
            crash_labels: summary.crashes.len(),
            timeouts: summary
                .crashes
                .iter()
                .filter(|c| c.kind == "timeout")
                .count(),
            peak_rss_mb: summary.peak_rss_mb,
            imported: summary.imported,
        }
    }
}

/// Where the series in `out` ended (zero when there is none).
#[must_use]
pub fn offset_of(out: &OutputDir) -> SeriesOffset {
    read_series(&out.root().join("stats.jsonl"))
        .last()
        .map_or_else(SeriesOffset::default, |line| SeriesOffset {
            secs: line["time"].as_f64().unwrap_or(0.0),
            executions: line["executions"].as_u64().unwrap_or(0),
        })
}

/// Appends one line for `point` (and, in a multi-core run, `clients`, each client's own) to
/// `stats.jsonl` and `plot_data`.
pub fn append(
    out: &OutputDir,
    point: &Point,
    clients: &[Point],
    offset: SeriesOffset,
) -> Result<(), LabelfuzzError> {
    let time = offset.secs + point.elapsed_secs;
    let executions = offset.executions + point.executions;
    let mut line = json!({
        "time": round(time),
        "executions": executions,
        "execs_per_sec": round(point.execs_per_sec),
        "labels": point.labels,
        "edges": point.edges,
        "corpus_entries": point.corpus_entries,
        "corpus_bytes": point.corpus_bytes,
        "crash_labels": point.crash_labels,
        "peak_rss_mb": point.peak_rss_mb,
    });
    if clients.len() > 1 {
        line["clients"] = clients
            .iter()
            .map(|c| {
                json!({
                    "executions": c.executions,
                    "execs_per_sec": round(c.execs_per_sec),
                    "labels": c.labels,
                    "imported": c.imported,
                })
            })
            .collect();
    }
    append_line(&out.root().join("stats.jsonl"), None, &format!("{line}\n"))?;
    // AFL++'s columns; what labelfuzz has no notion of (cycles, pending, depth) is 0.
    let plot = format!(
        "{}, 0, 0, {}, 0, 0, 0.00%, {}, {}, 0, {:.2}, {}, {}\n",
        time as u64,
        point.corpus_entries,
        point.crash_labels - point.timeouts,
        point.timeouts,
        point.execs_per_sec,
        executions,
        point.edges
    );
    append_line(
        &out.root().join("plot_data"),
        Some(
            "# relative_time, cycles_done, cur_item, corpus_count, pending_total, pending_favs, \
             map_size, saved_crashes, saved_hangs, max_depth, execs_per_sec, total_execs, \
             edges_found\n",
        ),
        &plot,
    )
}

fn round(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// Appends `line` with one write, after a newline if the file ends in a partial line, and after
/// `header` if the file is new.
fn append_line(path: &Path, header: Option<&str>, line: &str) -> Result<(), LabelfuzzError> {
    let io = |e| LabelfuzzError::io("append to", path, e);
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)
        .map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let mut text = String::new();
    if len == 0 {
        text.push_str(header.unwrap_or(""));
    } else {
        let mut last = [0u8];
        file.seek(SeekFrom::Start(len - 1)).map_err(io)?;
        file.read_exact(&mut last).map_err(io)?;
        if last[0] != b'\n' {
            text.push('\n');
        }
    }
    text.push_str(line);
    file.write_all(text.as_bytes()).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn point(elapsed: f64, executions: u64) -> Point {
        Point {
            elapsed_secs: elapsed,
            executions,
            execs_per_sec: executions as f64 / elapsed,
            labels: 10,
            edges: 5,
            corpus_entries: 3,
            corpus_bytes: 12,
            ..Point::default()
        }
    }

    #[test]
    fn a_partial_last_line_is_skipped_and_the_series_goes_on_after_it() {
        let dir = std::env::temp_dir().join(format!("labelfuzz-stats-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let out = OutputDir::create(&dir).unwrap();
        append(&out, &point(2.0, 100), &[], SeriesOffset::default()).unwrap();
        // What kill -9 in the middle of a write leaves.
        let mut file = OpenOptions::new()
            .append(true)
            .open(dir.join("stats.jsonl"))
            .unwrap();
        file.write_all(b"{\"time\": 4.0, \"execu").unwrap();
        assert_eq!(read_series(&dir.join("stats.jsonl")).len(), 1);
        let offset = offset_of(&out);
        assert_eq!(
            offset,
            SeriesOffset {
                secs: 2.0,
                executions: 100
            }
        );
        // A resumed run continues from there.
        append(&out, &point(1.0, 50), &[], offset).unwrap();
        let series = read_series(&dir.join("stats.jsonl"));
        assert_eq!(series.len(), 2);
        assert_eq!(series[1]["time"], 3.0);
        assert_eq!(series[1]["executions"], 150);
        let plot = fs::read_to_string(dir.join("plot_data")).unwrap();
        let lines: Vec<&str> = plot.lines().collect();
        assert!(lines[0].starts_with("# relative_time, cycles_done"));
        assert_eq!(lines.len(), 3);
        assert!(lines[2].starts_with("3, 0, 0, 3, "), "{}", lines[2]);
        assert_eq!(lines[2].split(", ").count(), 13);
        fs::remove_dir_all(dir).unwrap();
    }
}
