//! `summary.json` in the output directory: reading a run's, and merging a multi-core run's client
//! summaries (the schema and the merge itself are `labelfuzz-tools`', which the report reads).

pub use labelfuzz_tools::summary::{CorpusSize, CrashSummary, Summary};

use crate::error::LabelfuzzError;
use crate::output::OutputDir;

/// Reads the summary a run wrote in `out`.
///
/// # Errors
/// When `out` holds no readable `summary.json`.
pub fn read(out: &OutputDir) -> Result<Summary, LabelfuzzError> {
    Ok(Summary::read_file(&out.root().join("summary.json"))?)
}

/// Where client `index` of a multi-core run writes its own summary, under the output directory.
pub(crate) fn client_file(index: usize) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("clients/{index}.json"))
}

/// The summary `client` last wrote: its own in a multi-core run, the run's otherwise.
pub(crate) fn read_own(out: &OutputDir, client: super::Client) -> Option<Summary> {
    if client == super::Client::ALONE {
        read(out).ok()
    } else {
        Summary::read_file(&out.root().join(client_file(client.index))).ok()
    }
}

/// The merge of the summaries the `count` clients of a multi-core run wrote to
/// `clients/<n>.json` (None when there is none yet). Each crash's length is the length of
/// the reproducer on disk: the clients share `crashes/`, where the simplest one won, and a
/// client's own record may be of a reproducer another client's replaced.
#[must_use]
pub fn merge_clients(out: &OutputDir, count: usize) -> Option<Summary> {
    merge_parts(out, &client_parts(out, count))
}

/// [`Summary::merge`] of the clients' `parts`, each crash with the length of its file in
/// `out`.
pub(super) fn merge_parts(out: &OutputDir, parts: &[Summary]) -> Option<Summary> {
    let mut merged = Summary::merge(parts)?;
    for crash in &mut merged.crashes {
        if let Ok(meta) = std::fs::metadata(out.root().join(&crash.input)) {
            crash.len = usize::try_from(meta.len()).unwrap_or(usize::MAX);
        }
    }
    Some(merged)
}

/// The summaries the `count` clients of a multi-core run wrote (those there are yet).
pub(super) fn client_parts(out: &OutputDir, count: usize) -> Vec<Summary> {
    (1..=count)
        .filter_map(|i| Summary::read_file(&out.root().join(client_file(i))).ok())
        .collect()
}
