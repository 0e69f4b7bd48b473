//! Reading `stats.jsonl`, the run's time series (the engine appends to it; see its `stats`).

use std::path::Path;

/// The lines of a `stats.jsonl`, skipping any that do not parse (a partial last line).
#[must_use]
pub fn read_series(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read(path).unwrap_or_default();
    String::from_utf8_lossy(&text)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}
