//! How the bench starts AFL++ (with its CmpLog build) and reads its statistics.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use super::{pinned, Invocation, MAX_LEN, RSS_LIMIT_MB, TIMEOUT_MS};
use crate::targets::Builds;

/// Where AFL++ keeps its corpus under the run's working directory.
pub(super) fn corpus(work: &Path) -> PathBuf {
    work.join("out/default/queue")
}

/// afl-fuzz's command, on the seeds (or one newline when the target has none).
pub(super) fn command(builds: &Builds, run: &Invocation<'_>) -> Command {
    let input = if run.has_seeds {
        run.seeds.to_path_buf()
    } else {
        // AFL++ needs one starting input: a newline, as its docs suggest.
        let dir = run.work.join("in");
        std::fs::create_dir_all(&dir).expect("AFL++ input");
        std::fs::write(dir.join("newline"), b"\n").expect("AFL++ input");
        dir
    };
    let mut cmd = pinned(&builds.aflpp.join("afl-fuzz"), run.cpu);
    cmd.arg("-i")
        .arg(input)
        .arg("-o")
        .arg(run.work.join("out"))
        .args(["-V", &run.secs.to_string()])
        .args(["-s", &run.seed.to_string()])
        .args(["-G", &MAX_LEN.to_string()])
        .args(["-t", &TIMEOUT_MS.to_string()])
        .args(["-m", &RSS_LIMIT_MB.to_string()])
        .arg("-c")
        .arg(&builds.afl_cmplog)
        .arg("--")
        .arg(&builds.afl)
        .env("AFL_NO_UI", "1")
        .env("AFL_SKIP_CPUFREQ", "1")
        .env("AFL_NO_AFFINITY", "1")
        .env("AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES", "1")
        .env("AFL_SKIP_CRASHES", "1")
        .env("RUST_BACKTRACE", "0")
        .current_dir(run.work);
    cmd
}

/// Executions and saved crashes, from AFL++'s `fuzzer_stats`.
pub(super) fn stats(work: &Path) -> Value {
    let text = std::fs::read_to_string(work.join("out/default/fuzzer_stats")).unwrap_or_default();
    let field = |name: &str| -> u64 {
        text.lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim() == name)
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or(0)
    };
    json!({
        "executions": field("execs_done"),
        "crashes": field("saved_crashes"),
    })
}
