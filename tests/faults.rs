//! What users' machines and damaged output directories do to a run (issue 39), on the planted
//! Rust target: each test checks that every reproducer found before the fault is still on disk
//! and byte-identical after it, that no file of `OUT/` is partial, and what the run printed.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{build_fuzzer, run, run_bounded, scratch, Group};
use labelfuzz::process::children;

/// Every file under `dir` (recursively) with its bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut found = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                found.insert(path.clone(), std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    found
}

/// A first run that finds the planted target's crashes; returns its reproducers.
fn first_run(fuzzer: &Path, out: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let output = run(
        fuzzer,
        &[
            "-o",
            out.to_str().unwrap(),
            "--runs",
            "200000",
            "--seed",
            "1",
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let crashes = files(&out.join("crashes"));
    assert!(crashes.len() >= 3, "three planted bugs: {crashes:?}");
    crashes
}

/// Every reproducer of `before` is on disk with the same bytes, and no temporary file of an
/// unfinished write is left in `out`.
fn nothing_lost_or_partial(out: &Path, before: &BTreeMap<PathBuf, Vec<u8>>) {
    let after = files(&out.join("crashes"));
    for (path, bytes) in before {
        assert_eq!(after.get(path), Some(bytes), "{} changed", path.display());
    }
    nothing_partial(out);
    let summary = common::summary(out);
    assert!(
        summary["crashes"].as_array().map_or(0, Vec::len) >= 3,
        "{summary}"
    );
}

/// No temporary file of an unfinished write is left in `out`.
fn nothing_partial(out: &Path) {
    let partial: Vec<PathBuf> = files(out)
        .into_keys()
        .filter(|path| path.to_string_lossy().contains(".tmp."))
        .collect();
    assert!(partial.is_empty(), "partial files: {partial:?}");
}

#[test]
fn a_second_run_on_the_same_output_directory_is_refused_and_the_first_loses_nothing() {
    let fuzzer = build_fuzzer("planted");
    let scratch_dir = scratch("faults-shared");
    let out = scratch_dir.join("out");
    let out_arg = out.to_str().unwrap();
    let before = first_run(&fuzzer, &out);
    let running = Group::start(&fuzzer, &["-o", out_arg, "--max-time", "60"]);
    let lock = out.join(".labelfuzz.lock");
    let started = std::time::Instant::now();
    while std::fs::read_to_string(&lock).ok().as_deref() != Some(&running.pid().to_string()) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the run never took its lock"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let second = run_bounded(
        &fuzzer,
        &["-o", out_arg, "--runs", "1000"],
        Duration::from_secs(30),
    );
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("in use by another labelfuzz run")
            && stderr.contains(&format!("process {}", running.pid())),
        "{stderr}"
    );
    running.signal(libc::SIGINT);
    let first = running.wait(Duration::from_secs(30));
    assert_eq!(
        first.status.code(),
        Some(1),
        "the first run went on: {first:?}"
    );
    nothing_lost_or_partial(&out, &before);
    // Once the first run has ended, the directory is free again.
    let third = run(&fuzzer, &["-o", out_arg, "--runs", "1000"]);
    assert_eq!(third.status.code(), Some(1), "{third:?}");
}

#[test]
fn a_damaged_summary_and_state_file_and_foreign_files_do_not_stop_a_resumed_run() {
    let fuzzer = build_fuzzer("planted");
    let scratch_dir = scratch("faults-damaged");
    let out = scratch_dir.join("out");
    let before = first_run(&fuzzer, &out);
    std::fs::write(out.join("summary.json"), b"{\"crashes\": [{\"inp").expect("damage");
    let state = out.join("corpus.json");
    let text = std::fs::read(&state).expect("the state file");
    std::fs::write(&state, &text[..text.len() / 2]).expect("truncate");
    let garbage: Vec<u8> = (0..3000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(out.join("corpus/not-ours.bin"), garbage).expect("a foreign file");
    std::fs::write(out.join("corpus/empty"), b"").expect("an empty file");
    std::fs::create_dir_all(out.join("corpus/nested")).expect("a directory");
    let stats = out.join("stats.jsonl");
    let lines = std::fs::read(&stats).expect("the stats series");
    std::fs::write(
        &stats,
        [&lines[..lines.len() * 2 / 3], b"{\"execu"].concat(),
    )
    .expect("cut");
    let resumed = run(
        &fuzzer,
        &[
            "-o",
            out.to_str().unwrap(),
            "--runs",
            "20000",
            "--seed",
            "2",
        ],
    );
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    // The run starts from crashes/ and corpus/ and rewrites the summary and state files whole.
    assert_eq!(resumed.status.code(), Some(1), "{stderr}");
    nothing_lost_or_partial(&out, &before);
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&state).expect("the state file"))
            .expect("the state file is whole again");
    assert!(!state.is_null());
}

/// Runs the hostile target misbehaving as `how`, from `dir`, with `args`.
fn run_hostile(how: &str, dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(build_fuzzer("hostile"))
        .args(args)
        .env("HOSTILE", how)
        .current_dir(dir)
        .output()
        .expect("the fuzzer starts")
}

#[test]
fn a_target_that_changes_directory_does_not_move_the_fuzzers_files() {
    let dir = scratch("faults-chdir");
    std::fs::create_dir_all(dir.join("art")).expect("the artifact directory");
    let output = run_hostile(
        "chdir",
        &dir,
        &[
            "-o",
            "out",
            "-artifact_prefix=art/",
            "--runs",
            "300000",
            "-q",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    // libFuzzer's exit status for the first crash found, as a libFuzzer flag was given: 77,
    // or 70 when the hang (HNG) came first.
    assert!(
        matches!(output.status.code(), Some(77 | 70)),
        "{:?} {stderr}",
        output.status
    );
    let crashes = files(&dir.join("out/crashes"));
    let reproducers: Vec<&Vec<u8>> = crashes
        .iter()
        .filter(|(path, _)| path.extension().is_none())
        .map(|(_, bytes)| bytes)
        .collect();
    assert!(reproducers.contains(&&b"BUG".to_vec()), "{crashes:?}");
    let artifacts = files(&dir.join("art"));
    assert!(
        artifacts.values().any(|bytes| bytes == b"BUG"),
        "the artifact copy: {artifacts:?}"
    );
    nothing_partial(&dir.join("out"));
}

#[test]
fn handlers_the_target_replaces_are_put_back_and_reported_once() {
    // The target ignores SIGSEGV and SIGALRM from its first execution on: left so, its null
    // write would fault for ever in its own handler, and no timeout would end it.
    let dir = scratch("faults-handlers");
    let output = run_hostile("own-handlers", &dir, &["-o", "out", "--runs", "300000"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    for signal in ["SIGSEGV", "SIGALRM"] {
        let said = format!("the target replaced the {signal} handler");
        assert_eq!(stderr.matches(&said).count(), 1, "{signal} once:\n{stderr}");
    }
    let summary = common::summary(&dir.join("out"));
    let kinds: Vec<&str> = summary["crashes"]
        .as_array()
        .expect("crashes")
        .iter()
        .filter_map(|crash| crash["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"panic"), "{summary}");
    assert!(
        kinds
            .iter()
            .any(|kind| kind.contains("SIGSEGV") || kind.contains("signal")),
        "the null write is caught: {summary}"
    );
    nothing_partial(&dir.join("out"));
}

/// The reproducers in `out/crashes` (not their pattern files), by content.
fn reproducer_contents(out: &Path) -> Vec<Vec<u8>> {
    files(&out.join("crashes"))
        .into_iter()
        .filter(|(path, _)| path.extension().is_none())
        .map(|(_, bytes)| bytes)
        .collect()
}

/// What `summary.json` in `out` says the target did to the fuzzing process.
fn interference(out: &Path) -> Vec<String> {
    common::summary(out)["target_interference"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter_map(|what| what.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn limits_the_target_lowers_are_put_back_before_anything_is_written() {
    // A file-size limit of one byte would kill the process (SIGXFSZ) at the first reproducer
    // and at the first line written to a redirected stderr; six descriptors would fail saves.
    let dir = scratch("faults-rlimits");
    let output = run_hostile("rlimits", &dir, &["-o", "out", "--runs", "300000"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    for limit in ["RLIMIT_NOFILE", "RLIMIT_FSIZE"] {
        let said = format!("the target lowered {limit}");
        assert_eq!(stderr.matches(&said).count(), 1, "{limit} once:\n{stderr}");
        assert!(
            interference(&dir.join("out")).contains(&format!("lowered {limit}")),
            "summary.json names {limit}"
        );
    }
    let reproducers = reproducer_contents(&dir.join("out"));
    for bug in [&b"BUG"[..], b"SEG"] {
        assert!(reproducers.iter().any(|r| r == bug), "{reproducers:?}");
    }
    nothing_partial(&dir.join("out"));
}

#[test]
fn a_crash_in_a_process_the_target_forks_is_not_an_executions_crash() {
    // Every execution forks a child that leaves through exit(0) (the exit guard must not turn
    // it into a crash) and runs /bin/true; for inputs starting with FRK the child faults.
    let dir = scratch("faults-fork");
    let output = run_hostile("fork", &dir, &["-o", "out", "--runs", "20000"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let reproducers = reproducer_contents(&dir.join("out"));
    assert!(
        reproducers.iter().any(|r| r == b"BUG"),
        "the fuzzing process's own bugs are found: {reproducers:?}"
    );
    assert!(
        !reproducers
            .iter()
            .any(|r| r.is_empty() || r.starts_with(b"FRK")),
        "no child's exit or fault is an execution's crash: {reproducers:?}"
    );
    assert!(
        stderr
            .matches("a process the target forked got signal 11")
            .count()
            <= 1,
        "{stderr}"
    );
    if stderr.contains("a process the target forked") {
        assert!(
            interference(&dir.join("out")).contains(&"crashed in a process it forked".to_string())
        );
    }
    nothing_partial(&dir.join("out"));
}

#[test]
fn standard_descriptors_the_target_closes_are_opened_again_and_reported_once() {
    let dir = scratch("faults-close-stdio");
    let output = run_hostile("close-stdio", &dir, &["-o", "out", "--runs", "300000"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    for (fd, name) in ["stdin", "stdout", "stderr"].iter().enumerate() {
        let said = format!("the target closed descriptor {fd} ({name})");
        assert_eq!(stderr.matches(&said).count(), 1, "{name} once:\n{stderr}");
        assert!(
            interference(&dir.join("out")).contains(&format!("closed descriptor {fd} ({name})"))
        );
    }
    // The run's own lines after the target closed stderr still arrive: the crashes' patterns.
    assert!(stderr.contains("labelfuzz: pattern of panic"), "{stderr}");
    assert!(reproducer_contents(&dir.join("out"))
        .iter()
        .any(|r| r == b"BUG"));
    nothing_partial(&dir.join("out"));
}

#[test]
fn crashes_and_hangs_in_threads_the_target_starts_are_found() {
    // THR faults in a thread of the target's own; HNG waits on a thread that never ends.
    let dir = scratch("faults-threads");
    let output = run_hostile(
        "",
        &dir,
        &["-o", "out", "--runs", "300000", "--timeout", "300"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let summary = common::summary(&dir.join("out"));
    let crashes = summary["crashes"].as_array().expect("crashes");
    let found = |kind: &str, text: &str| {
        crashes
            .iter()
            .any(|c| c["kind"] == kind && c["location"].as_str().is_some_and(|l| l.contains(text)))
    };
    assert!(found("signal", "null_write"), "{summary}");
    assert!(crashes.iter().any(|c| c["kind"] == "timeout"), "{summary}");
    let reproducers = reproducer_contents(&dir.join("out"));
    for bug in [&b"THR"[..], b"HNG"] {
        assert!(reproducers.iter().any(|r| r == bug), "{reproducers:?}");
    }
    nothing_partial(&dir.join("out"));
}

#[test]
fn a_slow_leak_reaches_the_memory_limit_and_the_run_goes_on() {
    // 64 KiB leaked per execution: the limit is reached after about 4 000 executions, again
    // after each restart, and the run must go on to its last execution.
    let dir = scratch("faults-leak");
    let output = run_hostile(
        "leak",
        &dir,
        &["-o", "out", "-runs=40000", "-rss_limit_mb=300", "-seed=1"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    // libFuzzer's status for whichever crash came first: 77, 70 (timeout) or 71 (memory).
    assert!(
        matches!(output.status.code(), Some(77 | 70 | 71)),
        "{:?} {stderr}",
        output.status
    );
    let summary = common::summary(&dir.join("out"));
    assert!(summary["executions"].as_u64() >= Some(40_000), "{summary}");
    let crashes = summary["crashes"].as_array().expect("crashes");
    // Labelled apart from an input that exceeds the limit alone: its reproducer may not.
    assert!(
        crashes
            .iter()
            .any(|c| c["kind"] == "oom" && c["location"] == "memory grew across executions"),
        "{summary}"
    );
    assert!(crashes.iter().any(|c| c["kind"] == "panic"), "{summary}");
    nothing_partial(&dir.join("out"));
}

#[test]
fn a_target_writing_a_mebibyte_per_execution_is_fuzzed_as_any_other() {
    let dir = scratch("faults-chatty");
    let output = std::process::Command::new(build_fuzzer("hostile"))
        .args(["-o", "out", "--runs", "50000", "-q"])
        .env("HOSTILE", "chatty")
        .current_dir(&dir)
        .stdout(std::process::Stdio::null())
        .output()
        .expect("the fuzzer starts");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let summary = common::summary(&dir.join("out"));
    assert!(summary["executions"].as_u64() >= Some(50_000), "{summary}");
    assert!(
        summary["peak_rss_mb"].as_u64() < Some(500),
        "the output is not kept: {summary}"
    );
    assert!(reproducer_contents(&dir.join("out"))
        .iter()
        .any(|r| r == b"BUG"));
    nothing_partial(&dir.join("out"));
}

/// The first child of `pid`, waited for: a supervisor has none for a moment while it starts the
/// next fuzzing process (after a reproducer that ends the process, a hang or a crash).
fn first_child(pid: u32) -> u32 {
    let mut child = None;
    assert!(
        wait_until(Duration::from_secs(20), || {
            child = children(pid).first().copied();
            child.is_some()
        }),
        "process {pid} had no child for 20 s"
    );
    child.expect("waited for")
}

/// Waits until `done` holds, up to `limit`; whether it did.
fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let started = std::time::Instant::now();
    while started.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    done()
}

/// The reproducers in `out/crashes` (not their pattern files), by path.
fn reproducer_files(out: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    files(&out.join("crashes"))
        .into_iter()
        .filter(|(path, _)| path.extension().is_none())
        .collect()
}

/// Waits for a running fuzzer to have `count` reproducers in `out`, and for shrinking to leave
/// them alone for a few seconds; returns them.
fn settled_reproducers(out: &Path, count: usize) -> BTreeMap<PathBuf, Vec<u8>> {
    assert!(
        wait_until(Duration::from_secs(40), || reproducer_files(out).len()
            >= count),
        "{count} reproducers: {:?}",
        reproducer_files(out)
    );
    let mut before = reproducer_files(out);
    let _ = wait_until(Duration::from_secs(10), || {
        std::thread::sleep(Duration::from_secs(2));
        let now = reproducer_files(out);
        std::mem::replace(&mut before, now.clone()) == now
    });
    before
}

#[test]
fn a_reproducer_deleted_or_replaced_during_the_run_is_written_again() {
    let fuzzer = build_fuzzer("planted");
    let scratch_dir = scratch("faults-deleted");
    let out = scratch_dir.join("out");
    let out_arg = out.to_str().unwrap();
    let running = Group::start(&fuzzer, &["-o", out_arg, "--max-time", "60", "--seed", "1"]);
    let reproducers = || reproducer_files(&out);
    let before = settled_reproducers(&out, 3);
    let mut paths = before.keys();
    let deleted = paths.next().expect("a reproducer").clone();
    let replaced = paths.next().expect("another").clone();
    std::fs::remove_file(&deleted).expect("delete");
    std::fs::write(&replaced, b"not the reproducer, and longer than it").expect("replace");
    assert!(
        wait_until(Duration::from_secs(20), || reproducers() == before),
        "written again: {:?}",
        reproducers()
    );
    running.signal(libc::SIGINT);
    let output = running.wait(Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    for path in [&deleted, &replaced] {
        let name = path.file_name().unwrap().to_string_lossy();
        assert!(
            stderr.contains(&format!(
                "crashes/{name} was deleted or replaced during the run"
            )),
            "{stderr}"
        );
    }
    assert!(common::summary(&out)["reproducers_rewritten"].as_u64() >= Some(2));
    nothing_lost_or_partial(&out, &before);
}

#[test]
fn a_disk_filling_up_under_a_multi_core_run_stops_it_clearly_and_loses_nothing() {
    let fuzzer = build_fuzzer("planted");
    let dir = scratch("faults-disk-full");
    let Some(disk) = common::Tmpfs::mount(&dir.join("disk"), "size=4m") else {
        return;
    };
    let out = disk.0.join("out");
    let running = Group::start(
        &fuzzer,
        &[
            "-o",
            out.to_str().unwrap(),
            "--cores",
            "0-1",
            "--max-time",
            "90",
            "--seed",
            "1",
        ],
    );
    let before = settled_reproducers(&out, 3);
    let filler = Filler::start(disk.0.join("filler"));
    let output = running.wait(Duration::from_secs(60));
    drop(filler);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("No space left on device")
            && stderr.contains("free some space and run the same command again"),
        "{stderr}"
    );
    for (path, bytes) in &before {
        assert_eq!(
            std::fs::read(path).ok().as_ref(),
            Some(bytes),
            "{}",
            path.display()
        );
    }
    nothing_partial(&out);
    // What is there is whole: the last summary written before the disk filled.
    let summary = common::summary(&out);
    assert!(
        summary["crashes"].as_array().map_or(0, Vec::len) >= 3,
        "{summary}"
    );
}

/// A thread filling the disk for as long as it lives, as another program writing there would:
/// filled only once, the page of a file the fuzzer was replacing at that moment comes free
/// again, and its later rewrites of small files would go on fitting in that one page.
struct Filler {
    filling: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Filler {
    fn start(path: PathBuf) -> Filler {
        let filling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let still_filling = std::sync::Arc::clone(&filling);
        let thread = std::thread::spawn(move || {
            let mut file = std::fs::File::create(path).expect("a filler file");
            while still_filling.load(std::sync::atomic::Ordering::Relaxed) {
                if std::io::Write::write_all(&mut file, &[0u8; 1 << 12]).is_err() {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        });
        Filler {
            filling,
            thread: Some(thread),
        }
    }
}

impl Drop for Filler {
    fn drop(&mut self) {
        self.filling
            .store(false, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Sends `signal` to process `pid`.
fn send(pid: u32, signal: i32) {
    let pid = i32::try_from(pid).expect("pid fits");
    // SAFETY: kill(2) on a process of the test's own run.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}

/// Kills `supervisor`'s fuzzing process with SIGKILL until the next one says it starts again
/// from the output directory. A kill that lands while the process is already ending after a
/// crash (its state saved), or before its successor has taken that state over, loses nothing
/// and is no kill without state: the next process is killed instead.
fn kill_client_outright(running: &Group, supervisor: u32) {
    const NOTICE: &str = "killed without saving its state";
    for _ in 0..5 {
        let client = first_child(supervisor);
        let pid = i32::try_from(client).expect("pid fits");
        // SAFETY: kill(2) on a process of the test's own run (which may have ended already).
        unsafe { libc::kill(pid, libc::SIGKILL) };
        assert!(
            wait_until(Duration::from_secs(20), || children(supervisor)
                .iter()
                .any(|&c| c != client)),
            "a new fuzzing process"
        );
        if wait_until(Duration::from_secs(10), || {
            running.stderr_so_far().contains(NOTICE)
        }) {
            return;
        }
    }
    panic!(
        "five kills, and no process started again without state:\n{}",
        running.stderr_so_far()
    );
}

/// Starts the planted target on `out`, on two cores when `cores`, for `secs` seconds, and
/// waits for its three reproducers to settle.
fn planted_run(out: &Path, cores: bool, secs: &str) -> (Group, BTreeMap<PathBuf, Vec<u8>>) {
    let fuzzer = build_fuzzer("planted");
    let mut args = vec![
        "-o",
        out.to_str().unwrap(),
        "--max-time",
        secs,
        "--seed",
        "1",
    ];
    if cores {
        args.extend(["--cores", "0-1"]);
    }
    let running = Group::start(&fuzzer, &args);
    let before = settled_reproducers(out, 3);
    (running, before)
}

#[test]
fn a_fuzzing_process_killed_outright_is_started_again_from_the_output_directory() {
    // SIGKILL, as the kernel's out-of-memory killer sends it: no state is saved, and LibAFL's
    // supervisor alone would abort instead of starting another process.
    for cores in [false, true] {
        let scratch_dir = scratch(&format!("faults-killed-client-{cores}"));
        let out = scratch_dir.join("out");
        let (running, before) = planted_run(&out, cores, "40");
        let supervisor = if cores {
            first_child(running.pid())
        } else {
            running.pid()
        };
        kill_client_outright(&running, supervisor);
        let output = running.wait(Duration::from_secs(60));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert_eq!(
            stderr
                .matches("killed without saving its state (SIGKILL, or the kernel's out-of-memory killer); a new one starts from")
                .count(),
            1,
            "{stderr}"
        );
        assert!(!stderr.contains("panicked at"), "{stderr}");
        nothing_lost_or_partial(&out, &before);
        let summary = common::summary(&out);
        assert_eq!(summary["clients"], if cores { 2 } else { 1 }, "{summary}");
        assert_eq!(summary["restarts_after_kill"], 1, "{summary}");
    }
}

#[test]
fn a_process_killed_outright_goes_on_from_its_corpus_even_when_its_reproducers_end_processes() {
    // After a kill the new process runs the reproducers first, and on the faults target most of
    // them end the process (signals, hangs): each restart must go on with the list read after
    // the kill, or the corpus is never run again (the table starts over from the empty input
    // and `corpus/` follows it). And the run goes on: its clock and series do not start over.
    let fuzzer = build_fuzzer("faults");
    let scratch_dir = scratch("faults-killed-with-restarting-reproducers");
    let out = scratch_dir.join("out");
    let secs = 30;
    let started = std::time::Instant::now();
    let running = Group::start(
        &fuzzer,
        &[
            "-o",
            out.to_str().unwrap(),
            "--timeout",
            "300",
            "--rss-limit-mb",
            "256",
            "--max-time",
            &secs.to_string(),
            "--seed",
            "2",
        ],
    );
    settled_reproducers(&out, 4);
    assert!(wait_until(Duration::from_secs(20), || started.elapsed()
        > Duration::from_secs(10)));
    let before = common::summary(&out);
    let labels_before = before["labels"].as_u64().unwrap();
    kill_client_outright(&running, running.pid());
    let killed_at = before["elapsed_secs"].as_f64().unwrap();
    let output = running.wait(Duration::from_secs(secs + 60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("a new one starts from"), "{stderr}");
    let series = labelfuzz::stats::read_series(&out.join("stats.jsonl"));
    let times: Vec<f64> = series.iter().map(|l| l["time"].as_f64().unwrap()).collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "the series started over after the kill: {times:?}"
    );
    for line in series
        .iter()
        .filter(|l| l["time"].as_f64().unwrap() > killed_at)
    {
        assert!(
            line["labels"].as_u64().unwrap() >= labels_before,
            "{labels_before} labels before the kill, then {line}"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(secs + 10),
        "the run took {:?} for --max-time {secs}",
        started.elapsed()
    );
}

#[test]
fn killing_the_launching_process_of_a_multi_core_run_stops_every_client_cleanly() {
    let scratch_dir = scratch("faults-killed-broker");
    let out = scratch_dir.join("out");
    let (running, before) = planted_run(&out, true, "120");
    running.signal_leader(libc::SIGKILL);
    // `wait` fails unless every supervisor and client of the group ends within 10 s.
    let output = running.wait(Duration::from_secs(20));
    assert_eq!(output.status.code(), None, "killed");
    nothing_lost_or_partial(&out, &before);
    // Each client wrote its last summary on the way out.
    for client in 1..=2 {
        let path = out.join(format!("clients/{client}.json"));
        let summary: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).expect("a client summary"))
                .expect("whole");
        assert!(summary["executions"].as_u64() > Some(0), "{summary}");
    }
}

#[test]
fn a_supervisor_stopped_for_a_while_holds_nothing_up() {
    let scratch_dir = scratch("faults-stopped-supervisor");
    let out = scratch_dir.join("out");
    let (running, before) = planted_run(&out, true, "100");
    let supervisor = first_child(running.pid());
    // A minute, as a machine under memory pressure or a debugger may hold one.
    send(supervisor, libc::SIGSTOP);
    std::thread::sleep(Duration::from_secs(60));
    send(supervisor, libc::SIGCONT);
    let output = running.wait(Duration::from_secs(100));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    nothing_lost_or_partial(&out, &before);
    assert_eq!(common::summary(&out)["clients"], 2);
}

/// Processes spinning on CPU 0 until dropped.
struct Hogs(Vec<std::process::Child>);

impl Drop for Hogs {
    fn drop(&mut self) {
        for hog in &mut self.0 {
            let _ = hog.kill();
            let _ = hog.wait();
        }
    }
}

/// `command`, made to run on CPU 0 only.
fn on_cpu_zero(command: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: sched_setaffinity on the child between fork and exec, with a set built there.
    unsafe {
        command.pre_exec(|| {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw const set)
                != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

#[test]
fn a_machine_that_keeps_the_fuzzer_waiting_for_a_cpu_does_not_make_hangs() {
    // Each execution computes for 20 ms; nine spinning processes on the fuzzer's CPU leave it a
    // tenth of it, so an execution lasts about 200 ms of wall time, four times the 50 ms
    // timeout, while the target itself is never slow. Those are not hangs. The stretch a
    // starved execution gets is capped at twenty timeouts (1 s): the margin is for whatever
    // else the machine runs on that CPU (under CI, the other tests' builds and fuzzers; with
    // a 25 ms timeout, fourteen more busy processes there made a hang). The short windows make
    // the timers fire many times an execution: that is when one found the fuzzing thread with
    // a signal pending, the kernel gave it to the memory watcher's thread, and judged from
    // there the waiting thread looked hung (most runs here, before the signal went on to the
    // fuzzing thread).
    let fuzzer = build_fuzzer("hostile");
    let dir = scratch("faults-starved");
    let hogs = Hogs(
        (0..9)
            .map(|_| {
                on_cpu_zero(std::process::Command::new("sh").args(["-c", "while :; do :; done"]))
                    .spawn()
                    .expect("sh starts")
            })
            .collect(),
    );
    let output = on_cpu_zero(&mut std::process::Command::new(fuzzer))
        .args(["-q", "-o", "out", "--runs", "40", "--timeout", "50"])
        .env("HOSTILE", "busy")
        .current_dir(&dir)
        .output()
        .expect("the fuzzer starts");
    drop(hogs);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let summary = common::summary(&dir.join("out"));
    assert_eq!(summary["crashes"], serde_json::json!([]), "{stderr}");
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        summary["executions"].as_u64().unwrap_or(0) >= 40,
        "{summary}"
    );
    nothing_partial(&dir.join("out"));
}
