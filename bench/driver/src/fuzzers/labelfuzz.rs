//! How the bench starts labelfuzz (as it ships, or with one lever flipped) and reads its
//! statistics.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use super::{pinned, Invocation, MAX_LEN, RSS_LIMIT_MB, TIMEOUT_MS};
use crate::ablation::Lever;
use crate::targets::Builds;
use crate::util::read_json;

/// labelfuzz's command: the build for `lever` (the shipped one for `None`) with its flags.
pub(super) fn command(lever: Option<Lever>, builds: &Builds, run: &Invocation<'_>) -> Command {
    let mut cmd = pinned(builds.labelfuzz_for(lever), run.cpu);
    cmd.args(lever.map_or(&[][..], |l| l.flip_flags()));
    cmd.args(["-q", "--seed", &run.seed.to_string()])
        .args(["--max-time", &run.secs.to_string()])
        .args(["--timeout", &TIMEOUT_MS.to_string()])
        .args(["--max-len", &MAX_LEN.to_string()])
        .args(["--rss-limit-mb", &RSS_LIMIT_MB.to_string()])
        .arg("-o")
        .arg(run.work);
    if run.has_seeds {
        cmd.arg(run.seeds);
    }
    cmd.env("RUST_BACKTRACE", "0");
    cmd
}

/// Executions and distinct crash labels, from the run's `summary.json`.
pub(super) fn stats(work: &Path) -> Value {
    let summary = read_json(&work.join("summary.json"));
    json!({
        "executions": summary["executions"],
        "crashes": summary["crashes"].as_array().map_or(0, Vec::len),
    })
}
