//! How the bench starts libFuzzer (restarted on its corpus after a crash) and reads its
//! statistics.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use super::{pinned, Invocation, MAX_LEN, RSS_LIMIT_MB, TIMEOUT_MS};
use crate::targets::Builds;
use crate::util::files_in;

/// libFuzzer's command, on its corpus directory plus the seeds.
pub(super) fn command(builds: &Builds, run: &Invocation<'_>) -> Command {
    let corpus = run.work.join("corpus");
    let artifacts = run.work.join("artifacts");
    std::fs::create_dir_all(&corpus).expect("corpus");
    std::fs::create_dir_all(&artifacts).expect("artifacts");
    let mut cmd = pinned(&builds.libfuzzer, run.cpu);
    cmd.arg(&corpus);
    if run.has_seeds {
        cmd.arg(run.seeds);
    }
    cmd.arg(format!("-max_total_time={}", run.secs))
        .arg(format!("-seed={}", run.seed))
        .arg(format!("-max_len={MAX_LEN}"))
        .arg(format!("-timeout={}", TIMEOUT_MS.div_ceil(1000)))
        .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
        .arg("-print_final_stats=1")
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .current_dir(run.work)
        .env("RUST_BACKTRACE", "0");
    cmd
}

/// Executions over all its starts, crash files, and how often it was restarted.
pub(super) fn stats(work: &Path, executions: u64, starts: u64) -> Value {
    json!({
        "executions": executions,
        "crashes": files_in(&work.join("artifacts")).len(),
        "restarts": starts.saturating_sub(1),
    })
}

/// Executions libFuzzer reports in one log (its final stats, or its last status line).
pub fn libfuzzer_units(log: &str) -> u64 {
    log.lines()
        .filter_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
        .filter_map(|v| v.trim().parse().ok())
        .next_back()
        .or_else(|| {
            log.lines()
                .filter_map(|l| l.strip_prefix('#'))
                .filter_map(|l| l.split([':', '\t', ' ']).next())
                .filter_map(|v| v.parse().ok())
                .next_back()
        })
        .unwrap_or(0)
}
