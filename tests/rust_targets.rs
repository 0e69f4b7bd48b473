//! End to end: fuzz real instrumented Rust targets from the empty input, with bounded runs.

mod common;

use std::collections::BTreeMap;

use common::{build_fuzzer, run, scratch, summary};

/// The planted target's three bugs, by the function they are in, with their shortlex minima.
const PLANTED: [(&str, &[u8]); 3] = [
    ("planted: magic word", b"FUZZ"),
    ("index out of bounds", b"B\x00\xff"),
    ("attempt to add with overflow", b"+\x01\xff"),
];

#[test]
fn every_planted_panic_gets_its_minimal_reproducer() {
    let fuzzer = build_fuzzer("planted");
    // Both schedules: the labels they pick differ, the bugs and their minima do not.
    for (seed, schedule) in [("1", "uniform"), ("2", "uniform"), ("1", "rare")] {
        let out = scratch(&format!("planted-{seed}-{schedule}"));
        let out_arg = out.to_str().unwrap();
        let result = run(
            &fuzzer,
            &[
                "-o",
                out_arg,
                "--runs",
                "3000000",
                "--seed",
                seed,
                "--schedule",
                schedule,
            ],
        );
        assert_eq!(
            result.status.code(),
            Some(1),
            "exit status 1 means crashes were found; stderr:\n{}",
            String::from_utf8_lossy(&result.stderr)
        );
        let summary = summary(&out);
        let crashes = summary["crashes"].as_array().expect("crashes is a list");
        assert_eq!(
            crashes.len(),
            3,
            "three distinct crash labels: {crashes:#?}"
        );

        let mut found = BTreeMap::new();
        for crash in crashes {
            assert_eq!(crash["kind"], "panic");
            let location = crash["location"].as_str().unwrap();
            assert!(location.starts_with("planted/src/lib.rs:"), "{location}");
            let input = std::fs::read(out.join(crash["input"].as_str().unwrap())).unwrap();
            assert_eq!(crash["len"].as_u64(), Some(input.len() as u64));
            // Each shrunk reproducer is generalized into its pattern: the tag bug's middle
            // byte is free, and bytes after each bug's trigger do not matter.
            let pattern = crash["pattern"].as_str().unwrap_or_default();
            let expected = match input.as_slice() {
                b"FUZZ" => "FUZZ *",
                b"B\x00\xff" => "B ? \\xff *",
                _ => "+ ? \\xff *",
            };
            assert_eq!(pattern, expected, "{crash:#}");
            let file = format!("{}.pattern", crash["input"].as_str().unwrap());
            let written: serde_json::Value =
                serde_json::from_slice(&std::fs::read(out.join(file)).unwrap()).unwrap();
            assert_eq!(written["pattern"], expected);
            found.insert(
                crash["message"].as_str().unwrap().to_string(),
                (location.to_string(), input),
            );
        }
        for (message_start, minimal) in PLANTED {
            let (_, (_, input)) = found
                .iter()
                .find(|(message, _)| message.starts_with(message_start))
                .unwrap_or_else(|| panic!("no crash with message {message_start:?} in {found:?}"));
            assert_eq!(input.as_slice(), minimal, "seed {seed}: {message_start}");
        }
        let sites: std::collections::BTreeSet<_> = found.values().map(|(l, _)| l).collect();
        assert_eq!(sites.len(), 3, "three different sites");

        assert!(summary["executions"].as_u64().unwrap() >= 3_000_000);
        assert!(summary["labels"].as_u64().unwrap() >= 10);
        let entries = summary["corpus"]["entries"].as_u64().unwrap();
        let on_disk = std::fs::read_dir(out.join("corpus")).unwrap().count() as u64;
        assert_eq!(
            entries, on_disk,
            "corpus/ holds exactly the best-per-label inputs"
        );
        assert!(
            entries <= summary["labels"].as_u64().unwrap(),
            "at most one input per label"
        );
    }
}

#[test]
fn libfuzzer_artifact_flags_get_a_copy_of_every_reproducer() {
    let fuzzer = build_fuzzer("planted");
    let out = scratch("artifacts");
    let artifacts = out.join("artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let prefix = format!("-artifact_prefix={}/", artifacts.display());
    let result = run(
        &fuzzer,
        &[
            "-o",
            out.join("out").to_str().unwrap(),
            &prefix,
            "-runs=3000000",
            "-seed=1",
        ],
    );
    // Called with libFuzzer's flags: libFuzzer's exit status for a crash.
    assert_eq!(result.status.code(), Some(77));
    let listing = |dir: &std::path::Path| -> BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| labelfuzz::output::is_input_file(name))
            .map(|name| (name.clone(), std::fs::read(dir.join(&name)).unwrap()))
            .collect()
    };
    let crashes = listing(&out.join("out/crashes"));
    assert_eq!(crashes.len(), 3);
    assert_eq!(
        listing(&artifacts),
        crashes,
        "the copies are the final reproducers"
    );

    let exact = out.join("the-crash");
    let result = run(
        &fuzzer,
        &[
            "-o",
            out.join("out2").to_str().unwrap(),
            &format!("-exact_artifact_path={}", exact.display()),
            "--stop-on-crash",
            "-seed=1",
        ],
    );
    assert_eq!(result.status.code(), Some(77));
    let reproducer = std::fs::read(&exact).expect("the exact artifact path is written");
    assert!(listing(&out.join("out2/crashes"))
        .values()
        .any(|r| *r == reproducer));
}

#[test]
fn called_as_libfuzzer_the_first_corpus_directory_grows_and_reproducers_land_here() {
    // `./fuzzer CORPUS` with no -o, as OSS-Fuzz/ClusterFuzz style runners call libFuzzer.
    let fuzzer = build_fuzzer("planted");
    let work = scratch("libfuzzer-style");
    let corpus = work.join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    std::fs::write(corpus.join("mine"), b"user file").unwrap();
    let result = std::process::Command::new(&fuzzer)
        .args([corpus.to_str().unwrap(), "-runs=3000000", "-seed=1", "-q"])
        .current_dir(&work)
        .output()
        .expect("the fuzzer runs");
    assert_eq!(
        result.status.code(),
        Some(77),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert_eq!(std::fs::read(corpus.join("mine")).unwrap(), b"user file");
    let added = std::fs::read_dir(&corpus).unwrap().count() - 1;
    assert!(added >= 5, "new corpus inputs are added: {added}");
    let here: Vec<String> = std::fs::read_dir(&work)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("crash-"))
        .collect();
    assert_eq!(here.len(), 3, "one reproducer per planted bug: {here:?}");
    assert!(work.join("out/summary.json").exists());

    // -merge=1: the first directory gets the simplest input of each label the others show,
    // once; a second merge adds nothing.
    let merged = work.join("merged");
    std::fs::create_dir_all(&merged).unwrap();
    let merge = || {
        let child = std::process::Command::new(&fuzzer)
            .args([
                "-merge=1",
                merged.to_str().unwrap(),
                corpus.to_str().unwrap(),
                "-q",
            ])
            .current_dir(&work)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the fuzzer runs");
        let scratch = std::env::temp_dir().join(format!("labelfuzz-merge-{}", child.id()));
        let result = child.wait_with_output().expect("the fuzzer ends");
        assert_eq!(
            result.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&result.stderr)
        );
        assert!(
            !scratch.exists(),
            "the merge's scratch directory is removed"
        );
        std::fs::read_dir(&merged).unwrap().count()
    };
    let first = merge();
    assert!(first >= 3 && first <= added + 1, "{first} of {added}");
    assert_eq!(merge(), first, "merging again adds nothing");

    // -minimize_crash=1 reduces a reproducer as `reduce` does.
    std::fs::write(work.join("padded"), b"FUZZ and more bytes").unwrap();
    let minimal = work.join("minimal");
    let result = std::process::Command::new(&fuzzer)
        .args([
            "-minimize_crash=1",
            &format!("-exact_artifact_path={}", minimal.display()),
            "-o",
            work.join("min-out").to_str().unwrap(),
            work.join("padded").to_str().unwrap(),
        ])
        .current_dir(&work)
        .output()
        .expect("the fuzzer runs");
    assert!(
        matches!(result.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert_eq!(std::fs::read(&minimal).unwrap(), b"FUZZ");
}

#[test]
fn a_target_without_bugs_exits_zero_after_its_runs() {
    let fuzzer = build_fuzzer("empty");
    let out = scratch("empty");
    let result = run(
        &fuzzer,
        &["-o", out.to_str().unwrap(), "-runs=20000", "-seed=3"],
    );
    assert_eq!(
        result.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let summary = summary(&out);
    assert_eq!(summary["crashes"].as_array().unwrap().len(), 0);
    assert!(summary["executions"].as_u64().unwrap() >= 20000);
    assert_eq!(
        summary["labels"].as_u64(),
        Some(1),
        "an empty target has one edge"
    );
    assert_eq!(std::fs::read_dir(out.join("crashes")).unwrap().count(), 0);

    // The way cargo-fuzz and OSS-Fuzz runners call a libFuzzer binary: flags labelfuzz has no
    // use for (or that libFuzzer does not know either) are warned about, never fatal.
    let result = run(
        &fuzzer,
        &[
            "-o",
            out.to_str().unwrap(),
            "-entropic=1",
            "-print_final_stats=1",
            "-runs=1000",
            "-runs=2000",
            "-frobnicate=1",
        ],
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("`-entropic` is not used by labelfuzz; ignored"),
        "{stderr}"
    );
    assert!(
        stderr.contains("unrecognized flag `-frobnicate=1`"),
        "{stderr}"
    );
    let executed = stderr
        .lines()
        .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
        .and_then(|v| v.trim().parse::<u64>().ok());
    assert!(executed.is_some_and(|n| n >= 2000), "{stderr}");

    // --fresh moves the earlier run aside instead of resuming it.
    let parent = out.parent().unwrap().to_path_buf();
    let name = out.file_name().unwrap().to_string_lossy().into_owned();
    let asides = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&parent)
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{name}.previous-"))
            })
            .map(|e| e.path())
            .collect()
    };
    for old in asides() {
        std::fs::remove_dir_all(old).unwrap();
    }
    let result = run(
        &fuzzer,
        &["-o", out.to_str().unwrap(), "--fresh", "-runs=500"],
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(0), "{stderr}");
    let aside = asides();
    assert_eq!(aside.len(), 1, "{stderr}");
    assert!(aside[0].join("summary.json").exists());
    let series = labelfuzz::stats::read_series(&out.join("stats.jsonl"));
    assert!(
        series.last().unwrap()["executions"].as_u64().unwrap() < 2000,
        "a fresh series: {series:?}"
    );
}

#[test]
fn bad_flags_get_a_clear_message_and_status_two() {
    let fuzzer = build_fuzzer("empty");
    let out = scratch("bad-flags");
    for (args, needle) in [
        (vec!["--timeout", "0"], "--timeout"),
        (vec!["--runs", "ten"], "--runs"),
        (vec!["--max-len", "0"], "--max-len"),
        (vec!["--cores", "9-3"], "`9-3` runs backwards"),
        (vec!["-jobs=many"], "-jobs=many"),
    ] {
        let mut all = vec!["-o", out.to_str().unwrap()];
        all.extend(args.iter().copied());
        let result = run(&fuzzer, &all);
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(result.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    let missing = out.join("no-such-corpus");
    let result = run(
        &fuzzer,
        &["-o", out.to_str().unwrap(), missing.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no-such-corpus"), "{stderr}");
}

#[test]
fn signals_and_hangs_become_labels_with_minimal_reproducers() {
    let fuzzer = build_fuzzer("faults");
    let out = scratch("faults");
    let result = run(
        &fuzzer,
        &[
            "-o",
            out.to_str().unwrap(),
            // Every shrink candidate that still hangs costs a timeout and a restart, and slow
            // crashes shrink within 10 s plus a tenth of the run: on a loaded CI machine, 400 ms
            // timeouts and 300 000 runs (21 s) left the out-of-memory reproducer a byte too long.
            "--timeout",
            "200",
            "--rss-limit-mb",
            "256",
            // The runs bound the test; the time limit only guards against a hang, and leaves
            // room for a loaded machine (eight faults, seven restarting the process).
            "--max-time",
            "180",
            "--runs",
            "600000",
            "--seed",
            "5",
        ],
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    let summary = summary(&out);
    let crashes = summary["crashes"].as_array().expect("crashes");
    let by_input = common::crashes_by_input(&out);
    let expect = |input: &[u8], kind: &str, location_start: &str| {
        let (k, loc) = by_input.get(input).unwrap_or_else(|| {
            panic!(
                "no reproducer {:?} in {by_input:?}",
                String::from_utf8_lossy(input)
            )
        });
        assert_eq!(k, kind, "{loc}");
        assert!(loc.starts_with(location_start), "{loc}");
        loc.clone()
    };
    let abort = expect(b"A!", "signal", "SIGABRT at ");
    assert!(abort.contains("std::process::abort"), "{abort}");
    // With debug information, a signal's site is the faulting source line.
    let null = expect(b"N!", "signal", "SIGSEGV at ");
    assert!(
        null.contains("faults/src/main.rs:") && null.contains(" in faults::null_write"),
        "{null}"
    );
    // A panic inside `core` is labelled where this crate called it, in the function that did:
    // the same range check failing in two functions is two labels.
    for (input, function, which) in [
        (b"I!", "drain_past_end", "start"),
        (b"J!", "drain_beyond_end", "end"),
    ] {
        let slice = expect(input, "panic", "");
        assert!(
            slice.contains("faults/src/main.rs:")
                && slice.contains(&format!(" in faults::{function} "))
                && slice.ends_with(&format!(
                    "(range {which} index N out of range for slice of length N)"
                )),
            "{slice}"
        );
    }
    let overflow = expect(
        b"S!",
        "stack-overflow",
        "stack overflow in recursion faults::recurse",
    );
    expect(
        b"R!",
        "stack-overflow",
        "stack overflow in recursion faults::ping < faults::pong",
    );
    expect(b"L!", "timeout", "");
    let exit = expect(b"X!", "exit", "SIGABRT at ");
    assert!(exit.contains("std::process::exit"), "{exit}");
    expect(b"M!", "oom", "");
    assert_ne!(
        null, overflow,
        "two SIGSEGV bugs at two sites are two labels"
    );
    assert_ne!(abort, null);
    assert_eq!(
        crashes.len(),
        9,
        "one label per bug, no duplicates: {by_input:?}"
    );
    for crash in crashes {
        assert!(out.join(crash["input"].as_str().unwrap()).exists());
    }
}

/// Runs the `faults` target on one seed, a hang with 40 bytes too many, with `--runs 2`: the
/// run's limit comes with its first executions (the empty input, then the seed), so every
/// candidate of the hang's shrink runs after it, in the time the run's end allows.
fn run_out_of_runs_with_a_long_hang(name: &str, timeout_ms: &str) -> (common::Scratch, String) {
    let fuzzer = build_fuzzer("faults");
    let dir = scratch(name);
    let seeds = dir.join("seeds");
    std::fs::create_dir_all(&seeds).unwrap();
    let mut hang = b"L!".to_vec();
    hang.extend_from_slice(&[b'x'; 40]);
    std::fs::write(seeds.join("hang"), &hang).unwrap();
    let out = dir.join("out");
    let result = run(
        &fuzzer,
        &[
            "-o",
            out.to_str().unwrap(),
            "--timeout",
            timeout_ms,
            "--runs",
            "2",
            "--max-time",
            "120",
            seeds.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&result.stderr).into_owned();
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    (dir, stderr)
}

#[test]
fn a_hang_found_as_the_run_ends_is_handed_back_shrunk() {
    let (dir, stderr) = run_out_of_runs_with_a_long_hang("end-shrink", "100");
    let out = dir.join("out");
    let by_input = common::crashes_by_input(&out);
    assert_eq!(
        by_input.get(&b"L!"[..]).map(|(kind, _)| kind.as_str()),
        Some("timeout"),
        "{by_input:?} {stderr}"
    );
    // The shrink meets other crashes on its way (`I!`, `J!`): those are shrunk too.
    let summary = summary(&out);
    for crash in summary["crashes"].as_array().unwrap() {
        assert_eq!(crash["shrunk"], true, "{summary}");
    }
    assert!(!stderr.contains("not shrunk"), "{stderr}");
}

#[test]
fn a_shrink_the_runs_end_cuts_short_is_named_with_the_command_that_finishes_it() {
    // Each candidate that still hangs takes 6 s, and the run's end allows 10: it ends
    // with the shrink unfinished.
    let (dir, stderr) = run_out_of_runs_with_a_long_hang("end-shrink-cut", "6000");
    let out = dir.join("out");
    let summary = summary(&out);
    let crash = &summary["crashes"][0];
    assert_eq!(crash["shrunk"], false, "{summary}");
    let file = out.join(crash["input"].as_str().unwrap());
    assert!(
        stderr.contains(&format!("{} (timeout", file.display()))
            && stderr.contains("is not shrunk to its minimum")
            && stderr.contains(&format!("reduce {}`", file.display())),
        "{stderr}"
    );
}

#[test]
fn sigterm_stops_the_run_cleanly_with_a_final_summary() {
    let fuzzer = build_fuzzer("planted");
    let out = scratch("sigterm");
    let mut child = std::process::Command::new(&fuzzer)
        .args(["-q", "-o", out.to_str().unwrap()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the fuzzer starts");
    std::thread::sleep(std::time::Duration::from_secs(3));
    let pid = i32::try_from(child.id()).expect("pid fits");
    // SAFETY: plain kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let signalled = std::time::Instant::now();
    let status = child.wait().expect("the fuzzer ends");
    assert!(
        signalled.elapsed() < std::time::Duration::from_secs(10),
        "stopped promptly"
    );
    // No run limit was given: only the signal ended it, as a normal end (planted has crashes).
    assert_eq!(status.code(), Some(1), "{status}");
    let summary = summary(&out);
    let elapsed = summary["elapsed_secs"].as_f64().unwrap();
    assert!(elapsed >= 2.5, "the summary is the final one: {elapsed}");
    assert_eq!(summary["crashes"].as_array().unwrap().len(), 3);
}

#[test]
fn a_run_killed_with_sigkill_resumes_with_every_crash_and_its_corpus() {
    use std::os::unix::process::CommandExt;
    let fuzzer = build_fuzzer("planted");
    let out = scratch("sigkill");
    let mut child = std::process::Command::new(&fuzzer)
        .args(["-q", "--seed", "3", "-o", out.to_str().unwrap()])
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .expect("the fuzzer starts");
    // Let it find the three planted crashes and write a corpus, then kill the supervisor and
    // the fuzzing process at once, with no chance to clean up.
    let started = std::time::Instant::now();
    let crash_files = |out: &std::path::Path| -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<_> = std::fs::read_dir(out.join("crashes"))
            .map(|dir| {
                dir.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|name| labelfuzz::output::is_input_file(name))
                    .map(|name| {
                        let bytes = std::fs::read(out.join("crashes").join(&name)).unwrap();
                        (name, bytes)
                    })
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        files
    };
    let corpus_files = || std::fs::read_dir(out.join("corpus")).map_or(0, Iterator::count);
    while crash_files(&out).len() < 3 || corpus_files() < 5 {
        assert!(started.elapsed().as_secs() < 60, "crashes found in time");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    std::thread::sleep(std::time::Duration::from_secs(1));
    let group = i32::try_from(child.id()).expect("pid fits");
    // SAFETY: kill(2) on the process group of our own child.
    assert_eq!(unsafe { libc::kill(-group, libc::SIGKILL) }, 0);
    child.wait().expect("the fuzzer ends");

    let before = crash_files(&out);
    assert_eq!(before.len(), 3, "{before:?}");
    assert!(before.iter().all(|(_, bytes)| !bytes.is_empty()));
    let corpus_before = corpus_files();

    // One run past the restored inputs: what the summary shows comes from the resumed state.
    let resumed = run(&fuzzer, &["--runs", "1", "-o", out.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(1), "{stderr}");
    let after = crash_files(&out);
    assert_eq!(
        after, before,
        "every crash kept, none replaced by a worse one"
    );
    let summary = summary(&out);
    assert_eq!(summary["crashes"].as_array().unwrap().len(), 3);
    let labels = usize::try_from(summary["labels"].as_u64().unwrap()).unwrap();
    assert!(
        labels >= corpus_before,
        "the table is rebuilt from the corpus: {labels} labels, {corpus_before} inputs"
    );
}

#[test]
fn killing_the_fuzzer_again_and_again_mid_write_leaves_a_consistent_output_directory() {
    // The faults target crashes in many ways (panics, signals, hangs), so the output directory
    // is written all the time: crash reproducers, the corpus, the summary. Kill every process
    // of the run at moments spread over its first seconds, ten times, each restart resuming
    // from what the last one left.
    let fuzzer = build_fuzzer("faults");
    let out = scratch("kill-loop");
    let out_arg = out.to_str().unwrap();
    for round in 0..10u64 {
        let group = common::Group::start(
            &fuzzer,
            &[
                "--seed",
                &round.to_string(),
                "--timeout",
                "200",
                "-o",
                out_arg,
            ],
        );
        std::thread::sleep(std::time::Duration::from_millis(300 + 250 * (round % 7)));
        group.signal(libc::SIGKILL);
        let _ = group.wait(std::time::Duration::from_secs(30));
    }
    // One more run that ends by itself: it must start from whatever the kills left.
    let last = run(
        &fuzzer,
        &["--runs", "2000", "--timeout", "200", "-o", out_arg],
    );
    let stderr = String::from_utf8_lossy(&last.stderr);
    assert!(matches!(last.status.code(), Some(0 | 1)), "{stderr}");

    let mut files = Vec::new();
    for dir in [out.clone(), out.join("corpus"), out.join("crashes")] {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            if entry.file_type().unwrap().is_file() {
                files.push(entry.path());
            }
        }
    }
    let temporaries: Vec<_> = files
        .iter()
        .filter(|p| p.to_string_lossy().contains(".tmp."))
        .collect();
    assert!(temporaries.is_empty(), "left behind: {temporaries:?}");
    // Every corpus file is named by the digest of what it holds: none is half-written.
    for entry in std::fs::read_dir(out.join("corpus")).unwrap().flatten() {
        let bytes = std::fs::read(entry.path()).unwrap();
        assert_eq!(
            entry.file_name().to_string_lossy(),
            labelfuzz::labels::short_digest(&bytes),
            "a corpus file does not hold the input it is named for"
        );
    }
    // The summary parses and names reproducers that exist, with their lengths.
    let summary = summary(&out);
    let crashes = summary["crashes"].as_array().unwrap();
    assert!(!crashes.is_empty(), "{summary}");
    for crash in crashes {
        let path = out.join(crash["input"].as_str().unwrap());
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            bytes.len() as u64,
            crash["len"].as_u64().unwrap(),
            "{crash}"
        );
    }
    let entries = std::fs::read_dir(out.join("corpus")).unwrap().count() as u64;
    assert_eq!(summary["corpus"]["entries"].as_u64(), Some(entries));
    // The time series goes on over the restarts: readable lines, time and executions never
    // going back (a kill may leave one partial line, which readers skip).
    let series = labelfuzz::stats::read_series(&out.join("stats.jsonl"));
    assert!(series.len() >= 2, "{series:?}");
    for pair in series.windows(2) {
        for field in ["time", "executions"] {
            assert!(
                pair[1][field].as_f64() >= pair[0][field].as_f64(),
                "{field} went back: {pair:?}"
            );
        }
    }
    let text = std::fs::read_to_string(out.join("stats.jsonl")).unwrap();
    let unreadable = text
        .lines()
        .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_err())
        .count();
    assert!(
        unreadable <= 10,
        "at most one partial line a kill: {unreadable}"
    );
    assert!(std::fs::read_to_string(out.join("plot_data"))
        .unwrap()
        .starts_with("# relative_time"));
}

#[test]
fn unusual_corpus_files_are_named_in_warnings_and_the_rest_is_read() {
    use std::os::unix::ffi::OsStrExt;
    let fuzzer = build_fuzzer("planted");
    let dir = scratch("odd-corpus");
    let seeds = dir.join("seeds");
    std::fs::create_dir_all(seeds.join("nested")).unwrap();
    // A name that is not UTF-8, an empty file, an input in a subdirectory (read, as libFuzzer
    // does), one over --max-len, a dangling link and a FIFO (which would block a reader).
    let latin1 = std::ffi::OsStr::from_bytes(b"caf\xe9");
    std::fs::write(seeds.join(latin1), b"B\x00\xff").unwrap();
    std::fs::write(seeds.join("empty"), b"").unwrap();
    std::fs::write(seeds.join("nested/magic"), b"FUZZ").unwrap();
    std::fs::write(seeds.join("huge"), vec![b'+'; 5000]).unwrap();
    std::os::unix::fs::symlink(dir.join("nowhere"), seeds.join("dangling")).unwrap();
    let fifo = std::ffi::CString::new(seeds.join("fifo").as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo(3) with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);

    let out = dir.join("out");
    let stderr = common::run_expecting(
        &fuzzer,
        &[
            "--runs",
            "50",
            "--max-len",
            "4096",
            "-o",
            out.to_str().unwrap(),
            seeds.to_str().unwrap(),
        ],
        std::time::Duration::from_secs(120),
        1,
    );
    for needle in [
        "huge (5000 bytes > --max-len 4096)",
        "cannot read",
        "dangling",
        "fifo: not a regular file",
    ] {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
    // 50 runs are far too few to find these two crashes: they came from the seeds.
    let by_input = common::crashes_by_input(&out);
    assert!(by_input.contains_key(b"FUZZ".as_slice()), "{by_input:?}");
    assert!(
        by_input.contains_key(b"B\x00\xff".as_slice()),
        "{by_input:?}"
    );
}

#[test]
fn a_full_disk_keeps_the_crash_elsewhere_and_stops_with_a_clear_error() {
    let fuzzer = build_fuzzer("planted");
    let dir = scratch("full-disk");
    let seeds = dir.join("seeds");
    std::fs::create_dir_all(&seeds).unwrap();
    std::fs::write(seeds.join("magic"), b"FUZZ").unwrap();
    let Some(disk) = common::Tmpfs::mount(&dir.join("disk"), "size=64k") else {
        return;
    };
    // Fill it: the output directory can be created, but no byte can be written.
    let filler = std::fs::File::create(disk.0.join("filler")).unwrap();
    let _ = std::io::Write::write_all(&mut &filler, &vec![0u8; 1 << 20]);
    let out = disk.0.join("out");
    let stderr = common::run_expecting(
        &fuzzer,
        &[
            "--runs",
            "100",
            "-o",
            out.to_str().unwrap(),
            seeds.to_str().unwrap(),
        ],
        std::time::Duration::from_secs(60),
        2,
    );
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(stderr.contains(r#"its 4 bytes are "FUZZ""#), "{stderr}");
    let copy = stderr
        .split("a copy is in ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .unwrap_or_else(|| panic!("no copy named: {stderr}"));
    assert_eq!(std::fs::read(copy).expect("the copy exists"), b"FUZZ");
    let _ = std::fs::remove_file(copy);
}

#[test]
fn a_read_only_output_directory_is_refused_before_fuzzing_and_left_as_it_was() {
    let fuzzer = build_fuzzer("planted");
    let dir = scratch("read-only");
    let Some(disk) = common::Tmpfs::mount(&dir.join("disk"), "size=1m") else {
        return;
    };
    let out = disk.0.join("out");
    let first = common::run_bounded(
        &fuzzer,
        &["--max-time", "3", "-o", out.to_str().unwrap()],
        std::time::Duration::from_secs(60),
    );
    assert_eq!(first.status.code(), Some(1));
    let before = common::crashes_by_input(&out);
    assert_eq!(before.len(), 3, "{before:?}");
    disk.remount("ro");
    let stderr = common::run_expecting(
        &fuzzer,
        &["--max-time", "3", "-o", out.to_str().unwrap()],
        std::time::Duration::from_secs(60),
        2,
    );
    assert!(
        stderr.contains("Read-only file system") && stderr.contains(out.to_str().unwrap()),
        "{stderr}"
    );
    assert_eq!(common::crashes_by_input(&out), before);
}

#[test]
fn a_dictionary_token_opens_a_keyword_that_mutations_alone_do_not() {
    let fuzzer = build_fuzzer("keywords");
    let scratch_dir = scratch("dict");
    let dict = scratch_dir.join("keywords.dict");
    std::fs::write(
        &dict,
        "# libFuzzer format\nmagic=\"labelfuzz-magic-header\"\n",
    )
    .unwrap();
    let found = |extra: &[&str]| {
        let out = scratch(&format!("dict-run-{}", extra.len()));
        let mut args = vec![
            "-o",
            out.to_str().unwrap(),
            "--runs",
            "300000",
            "--seed",
            "3",
        ];
        // Without input-to-state replacement, only the dictionary knows the keyword.
        args.extend(["--cmplog", "0"]);
        args.extend(extra);
        let result = run(&fuzzer, &args);
        let stderr = String::from_utf8_lossy(&result.stderr).into_owned();
        // 77: libFuzzer's crash status, when the dictionary came as `-dict=`.
        assert!(matches!(result.status.code(), Some(0 | 1 | 77)), "{stderr}");
        common::crashes_by_input(&out).contains_key(&b"labelfuzz-magic-header"[..])
    };
    assert!(
        !found(&[]),
        "without the dictionary the keyword stays closed"
    );
    let spelled = format!("-dict={}", dict.display());
    assert!(found(&[&spelled]), "libFuzzer's -dict= opens it");
    assert!(found(&["-x", dict.to_str().unwrap()]), "AFL's -x opens it");

    let bad = scratch_dir.join("bad.dict");
    std::fs::write(&bad, "\"ok\"\nnot quoted\n").unwrap();
    let out = scratch("dict-bad");
    let result = run(
        &fuzzer,
        &["-o", out.to_str().unwrap(), "--dict", bad.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad.dict line 2"), "{stderr}");
}

#[test]
fn keywords_compared_with_slice_equality_are_found_through_their_operands() {
    let fuzzer = build_fuzzer("keywords");
    let out = scratch("keywords");
    let result = run(
        &fuzzer,
        &[
            "-o",
            out.to_str().unwrap(),
            "--runs",
            "500000",
            "--seed",
            "3",
        ],
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    let crashes = common::crashes_by_input(&out);
    let inputs: Vec<&[u8]> = crashes.keys().map(Vec::as_slice).collect();
    assert_eq!(
        inputs,
        vec![&b"labelfuzz-magic-header"[..], &b"null"[..]],
        "{crashes:?}"
    );
}

#[test]
fn a_counter_compared_to_a_constant_is_found_with_default_flags() {
    let fuzzer = build_fuzzer("counter");
    let out = scratch("counter");
    let result = run(
        &fuzzer,
        &[
            "-o",
            out.to_str().unwrap(),
            "--runs",
            "300000",
            "--seed",
            "5",
            "--stop-on-crash",
        ],
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    let crashes = common::crashes_by_input(&out);
    let (kind, site) = &crashes[&b"CCCC".to_vec()];
    assert_eq!(kind, "panic");
    assert!(site.contains("src/main.rs:"), "{site}");
}

#[test]
fn a_command_looked_up_by_hash_is_found_through_the_crates_string_literals() {
    let fuzzer = build_fuzzer("hashed_commands");
    let fuzz = |out: &std::path::Path, extra: &[&str]| {
        let mut args = vec![
            "-o",
            out.to_str().unwrap(),
            "--runs",
            "200000",
            "--max-time",
            "60",
            "--seed",
            "5",
            "--stop-on-crash",
        ];
        args.extend_from_slice(extra);
        let result = run(&fuzzer, &args);
        let stderr = String::from_utf8_lossy(&result.stderr).into_owned();
        (result.status.code(), stderr)
    };
    let out = scratch("hashed-commands");
    let (status, stderr) = fuzz(&out, &[]);
    assert_eq!(status, Some(1), "{stderr}");
    let crashes = common::crashes_by_input(&out);
    let (kind, site) = &crashes[&b"drop-everything".to_vec()];
    assert_eq!(kind, "panic");
    assert!(site.contains("hashed_commands/src/lib.rs:"), "{site}");
    // Without the library's literals nothing leads there within the same executions.
    let (status, stderr) = fuzz(&scratch("hashed-commands-without"), &["--auto-dict", "0"]);
    assert_eq!(status, Some(0), "{stderr}");
}

/// Runs `fuzzer --replay` on one input; returns the edges it covers.
fn edges_of(fuzzer: &std::path::Path, name: &str, input: &[u8]) -> u64 {
    let dir = scratch(name);
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/input"), input).unwrap();
    let out = dir.join("out");
    let result = run(
        fuzzer,
        &[
            "--replay",
            "-o",
            out.to_str().unwrap(),
            dir.join("in").to_str().unwrap(),
        ],
    );
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    summary(&out)["edges"].as_u64().expect("edges")
}

#[test]
fn a_bug_inside_a_registry_crate_is_found_with_the_default_build() {
    let fuzzer = build_fuzzer("registry_bug");
    let out = scratch("registry-bug");
    let result = run(
        &fuzzer,
        &[
            "-o",
            out.to_str().unwrap(),
            "--runs",
            "3000000",
            "--seed",
            "1",
        ],
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    let crashes = common::crashes_by_input(&out);
    assert_eq!(crashes.len(), 1, "{crashes:?}");
    let (input, (kind, location)) = crashes.iter().next().unwrap();
    assert_eq!(kind, "panic");
    assert!(
        location.contains("/registry/src/") && location.contains("/chrono-"),
        "the panic is inside chrono: {location}"
    );
    let text = String::from_utf8_lossy(input);
    assert_eq!(text.matches('-').count(), 2, "a date: {text:?}");

    // proc-macro2 is also built for the host (as a dependency of proc-macros), plain; the
    // target's copy is instrumented: lexing a real token stream covers far more than `(` alone.
    let alone = edges_of(&fuzzer, "registry-bug-paren", b"(");
    let tokens = edges_of(
        &fuzzer,
        "registry-bug-tokens",
        b"(fn f(x: u8) -> u8 { x + 1 } // 'a \"s\" 0x1f",
    );
    assert!(
        tokens > alone + 30,
        "proc-macro2's lexer is instrumented: {tokens} vs {alone} edges"
    );
}
