//! End to end: C libFuzzer harnesses built with `labelfuzz-cc`, fuzzed with bounded runs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{checked, crashes_by_input, labelfuzz_cc, root, run, scratch};

/// Builds `fuzzers/c_planted/<file>` with `labelfuzz-cc -O1 <flags>` into `dir`; returns the
/// fuzzer.
fn build_planted(dir: &Path, file: &str, flags: &[&str]) -> PathBuf {
    let source = root().join("fuzzers/c_planted").join(file);
    let mut args = vec!["-O1"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&[source.to_str().unwrap(), "-o", "fuzzer"]);
    labelfuzz_cc(dir, &args);
    dir.join("fuzzer")
}

/// Fuzzes for at most `runs` executions (and 60 s) with `seed` and `extra` flags into `out`, and
/// checks the exit status says crashes were found.
fn fuzz_until_crashes(fuzzer: &Path, out: &Path, runs: &str, seed: &str, extra: &[&str]) {
    fuzz_expecting(fuzzer, out, runs, seed, extra, 1);
}

/// As [`fuzz_until_crashes`], checking that no crash was found.
fn fuzz_finding_nothing(fuzzer: &Path, out: &Path, runs: &str, seed: &str, extra: &[&str]) {
    fuzz_expecting(fuzzer, out, runs, seed, extra, 0);
}

/// Fuzzes for at most `runs` executions (and 60 s) and checks the exit status.
fn fuzz_expecting(fuzzer: &Path, out: &Path, runs: &str, seed: &str, extra: &[&str], status: i32) {
    let mut args = vec![
        "-o",
        out.to_str().unwrap(),
        "--runs",
        runs,
        "--max-time",
        "60",
    ];
    args.extend_from_slice(&["--seed", seed]);
    args.extend_from_slice(extra);
    let result = run(fuzzer, &args);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(status), "{stderr}");
}

#[test]
fn two_crashes_raising_the_same_signal_are_two_labels() {
    let dir = scratch("c-planted");
    let fuzzer = build_planted(&dir, "planted.c", &[]);
    let out = dir.join("out");
    fuzz_until_crashes(&fuzzer, &out, "400000", "3", &[]);
    let crashes = crashes_by_input(&out);
    let inputs: Vec<&[u8]> = crashes.keys().map(Vec::as_slice).collect();
    assert_eq!(inputs, vec![&b"H!"[..], &b"T?"[..]], "{crashes:?}");
    let (header_kind, header_site) = &crashes[&b"H!".to_vec()];
    let (trailer_kind, trailer_site) = &crashes[&b"T?".to_vec()];
    assert_eq!(
        (header_kind.as_str(), trailer_kind.as_str()),
        ("signal", "signal")
    );
    assert!(
        header_site.starts_with("SIGSEGV at ")
            && header_site.contains("planted.c:11 in check_header"),
        "{header_site}"
    );
    assert!(
        trailer_site.starts_with("SIGSEGV at ") && trailer_site.contains(" in check_trailer"),
        "{trailer_site}"
    );
    assert_ne!(header_site, trailer_site);
}

#[test]
fn aborts_stack_overflows_hangs_memory_blowups_and_exits_in_c_are_labels() {
    let dir = scratch("c-faults");
    let fuzzer = build_planted(&dir, "faults.c", &[]);
    let out = dir.join("out");
    fuzz_until_crashes(
        &fuzzer,
        &out,
        "300000",
        "5",
        &["--timeout", "400", "--rss-limit-mb", "256"],
    );
    let crashes = crashes_by_input(&out);
    let expect = |input: &[u8], kind: &str, site_start: &str| {
        let (k, site) = crashes
            .get(input)
            .unwrap_or_else(|| panic!("no reproducer {input:?} in {crashes:?}"));
        assert_eq!(k, kind, "{site}");
        assert!(site.starts_with(site_start), "{site}");
    };
    expect(b"A!", "signal", "SIGABRT at ");
    // The line that called abort(), in the harness function (debug information).
    let (_, abort_site) = &crashes[&b"A!".to_vec()];
    assert!(
        abort_site.contains("faults.c:") && abort_site.ends_with(" in LLVMFuzzerTestOneInput"),
        "{abort_site}"
    );
    expect(
        b"S!",
        "stack-overflow",
        "stack overflow in recursion recurse",
    );
    expect(b"L!", "timeout", "");
    expect(b"M!", "oom", "");
    expect(b"X!", "exit", "");
    assert_eq!(crashes.len(), 5, "one label per bug: {crashes:?}");
}

#[test]
fn a_division_by_zero_reached_at_any_depth_of_a_recursive_parser_is_one_label() {
    let dir = scratch("c-calc");
    let fuzzer = build_planted(&dir, "calc.c", &[]);
    let out = dir.join("out");
    fuzz_until_crashes(&fuzzer, &out, "300000", "2", &[]);
    let crashes = crashes_by_input(&out);
    assert_eq!(crashes.len(), 1, "one bug, one label: {crashes:?}");
    let (input, (kind, site)) = crashes.iter().next().unwrap();
    assert_eq!(kind, "signal");
    assert_eq!(input, b"/0", "the shortlex-minimal division by zero");
    // labelfuzz-cc builds with debug information: the site is the faulting line.
    assert!(
        site.starts_with("SIGFPE at ")
            && site.ends_with("calc.c:46 in term < expr < LLVMFuzzerTestOneInput"),
        "{site}"
    );
    // The same bug reached through nested parentheses: replayed, it shows the same label.
    let nested = dir.join("nested");
    std::fs::write(&nested, b"((((((1/0))))))").unwrap();
    let result = run(&fuzzer, &[nested.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(site.as_str()), "{site} not in:\n{stderr}");
}

#[test]
fn copies_of_one_inlined_faulting_line_are_one_label_with_debug_information() {
    let dir = scratch("c-inlined-trap");
    let fuzzer = build_planted(&dir, "inlined_trap.c", &["-g"]);
    // Each input reaches its own copy of the trap (two call sites of `checked_div`, both
    // inlined into `evaluate`); replayed alone, each prints its label.
    let label_of = |name: &str, input: &[u8]| {
        let file = dir.join(name);
        std::fs::write(&file, input).unwrap();
        let out = dir.join(format!("out-{name}"));
        let result = run(
            &fuzzer,
            &["-o", out.to_str().unwrap(), file.to_str().unwrap()],
        );
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(result.status.code(), Some(1), "{stderr}");
        let crashes = crashes_by_input(&out);
        let (kind, site) = crashes.get(input).expect("the input's crash").clone();
        assert_eq!(kind, "signal");
        site
    };
    let first = label_of("first", b"a10");
    let second = label_of("second", b"b0x");
    assert!(
        first.starts_with("SIGILL at ")
            && first
                .contains("inlined_trap.c:8 in checked_div < evaluate < LLVMFuzzerTestOneInput"),
        "{first}"
    );
    assert_eq!(first, second, "one faulting line, one label");
    assert!(
        !first.contains("libafl"),
        "the fuzzer's frames are not the bug's: {first}"
    );
}

#[test]
fn keywords_compared_with_memcmp_are_found_through_their_operands() {
    let dir = scratch("c-keywords");
    let fuzzer = build_planted(&dir, "keywords.c", &[]);
    let out = dir.join("out");
    fuzz_until_crashes(&fuzzer, &out, "300000", "4", &[]);
    let crashes = crashes_by_input(&out);
    let inputs: Vec<&[u8]> = crashes.keys().map(Vec::as_slice).collect();
    assert_eq!(
        inputs,
        vec![&b"labelfuzz-magic!"[..], &b"null"[..]],
        "{crashes:?}"
    );
    assert!(crashes[&b"null".to_vec()]
        .1
        .ends_with("keywords.c:12 in null_keyword < LLVMFuzzerTestOneInput"));
}

#[test]
fn a_command_looked_up_by_hash_is_found_through_the_programs_string_literals() {
    let dir = scratch("c-hashed-commands");
    // As build systems do: the program compiled on its own, then linked into the fuzzer.
    let source = root().join("fuzzers/c_planted/hashed_commands.c");
    labelfuzz_cc(
        &dir,
        &["-O1", "-c", source.to_str().unwrap(), "-o", "commands.o"],
    );
    labelfuzz_cc(&dir, &["commands.o", "-o", "fuzzer"]);
    let fuzzer = dir.join("fuzzer");
    let out = dir.join("out");
    fuzz_until_crashes(&fuzzer, &out, "200000", "5", &[]);
    let crashes = crashes_by_input(&out);
    let inputs: Vec<&[u8]> = crashes.keys().map(Vec::as_slice).collect();
    assert_eq!(inputs, vec![&b"drop-everything"[..]], "{crashes:?}");
    // Without the program's literals nothing leads there within the same executions.
    fuzz_finding_nothing(
        &fuzzer,
        &dir.join("out-without"),
        "200000",
        "5",
        &["--auto-dict", "0"],
    );
}

#[test]
fn a_sanitizer_report_slower_than_the_timeout_is_the_bug_not_a_timeout() {
    // ASan symbolizes its report before it aborts: seconds for a large binary or on a loaded
    // machine. `sleep_before_dying=2` stands in for that, past a 300 ms timeout; the execution
    // is still the heap overflow.
    let dir = scratch("c-slow-report");
    let fuzzer = build_planted(&dir, "heap.c", &["-fsanitize=fuzzer,address"]);
    let input = dir.join("overflow");
    std::fs::write(&input, b"OV\0").unwrap();
    let out = dir.join("out");
    let result = std::process::Command::new(&fuzzer)
        .env("ASAN_OPTIONS", "sleep_before_dying=2")
        .args(["-q", "--timeout", "300", "-o"])
        .arg(&out)
        .arg(&input)
        .output()
        .expect("the fuzzer starts");
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    let crashes = crashes_by_input(&out);
    assert_eq!(
        crashes.get(b"OV\0".as_slice()).map(|c| c.0.as_str()),
        Some("sanitizer"),
        "{crashes:?}"
    );
    assert!(crashes.values().all(|c| c.0 != "timeout"), "{crashes:?}");
}

#[test]
fn address_sanitizer_reports_are_labels_named_by_bug_type() {
    let dir = scratch("c-heap");
    let fuzzer = build_planted(&dir, "heap.c", &["-fsanitize=fuzzer,address"]);
    let out = dir.join("out");
    fuzz_until_crashes(&fuzzer, &out, "200000", "3", &[]);
    let crashes = crashes_by_input(&out);
    assert_eq!(crashes.len(), 2, "{crashes:?}");
    let (kind, site) = &crashes[&b"OV\0".to_vec()];
    assert_eq!(kind, "sanitizer");
    assert!(
        site.starts_with("AddressSanitizer heap-buffer-overflow at ")
            && site.ends_with("heap.c:14 in LLVMFuzzerTestOneInput"),
        "{site}"
    );
    let (kind, site) = &crashes[&b"UF".to_vec()];
    assert_eq!(kind, "sanitizer");
    assert!(
        site.starts_with("AddressSanitizer heap-use-after-free at ")
            && site.ends_with("heap.c:20 in LLVMFuzzerTestOneInput"),
        "{site}"
    );
}

/// `nm` definitions of `symbol` in `file` (an executable, object or archive).
fn definitions(file: &std::path::Path, symbol: &str) -> usize {
    let out = Command::new("nm").arg(file).output().expect("nm runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|line| {
            let mut fields = line.split_whitespace().rev();
            let name = fields.next();
            let kind = fields.next().unwrap_or("");
            name == Some(symbol) && kind != "U" && kind != "w"
        })
        .count()
}

#[test]
fn an_ordinary_multi_file_build_links_the_harness_once_into_the_fuzzer_only() {
    let dir = scratch("c-multilib");
    common::checked(
        Command::new("cp")
            .arg("-r")
            .arg(root().join("tests/data/multilib/."))
            .arg(&dir),
        "copying the library",
    );
    let cc = common::compiler_wrapper_dir().join("labelfuzz-cc");
    common::checked(
        Command::new("make")
            .current_dir(&dir)
            .arg(format!("CC={}", cc.display())),
        "make CC=labelfuzz-cc",
    );

    // The library's own tool links without the harness and runs its own main.
    let tool = Command::new(dir.join("multitool"))
        .arg("Kw")
        .output()
        .expect("tool runs");
    assert_eq!(
        String::from_utf8_lossy(&tool.stdout),
        "multitool: Kw -> 2\n"
    );
    assert_eq!(definitions(&dir.join("multitool"), "libafl_main"), 0);
    // The archive holds the library only: no harness, no main.
    let archive = dir.join("libmulti.a");
    assert_eq!(definitions(&archive, "main"), 0);
    assert_eq!(definitions(&archive, "libafl_main"), 0);
    assert_eq!(definitions(&archive, "multilib_parse"), 1);

    labelfuzz_cc(
        &dir,
        &[
            "-O1",
            "-Iinclude",
            "fuzz_parse.c",
            "libmulti.a",
            "-o",
            "fuzz_parse",
        ],
    );
    let fuzzer = dir.join("fuzz_parse");
    for symbol in [
        "main",
        "libafl_main",
        "LLVMFuzzerTestOneInput",
        "multilib_parse",
        "multilib_checksum",
    ] {
        assert_eq!(
            definitions(&fuzzer, symbol),
            1,
            "{symbol} defined once in the fuzzer"
        );
    }
    let out = dir.join("out");
    fuzz_until_crashes(&fuzzer, &out, "3000000", "1", &[]);
    let crashes = crashes_by_input(&out);
    let (kind, site) = &crashes[&b"KW!".to_vec()];
    assert_eq!(kind, "signal");
    assert!(
        site.starts_with("SIGABRT at ") && site.contains(" in multilib_parse"),
        "{site}"
    );
}

#[test]
fn a_missing_clang_is_named_with_its_install_command() {
    let dir = scratch("c-no-clang");
    let cc = common::compiler_wrapper_dir().join("labelfuzz-cc");
    let out = Command::new(&cc)
        .current_dir(&dir)
        .env("LABELFUZZ_LLVM_BIN", dir.join("no-llvm-here"))
        .args(["-c", "x.c"])
        .output()
        .expect("labelfuzz-cc runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("clang-19 not found"), "{stderr}");
    assert!(stderr.contains("apt-get install clang-19"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_crash_file_given_alone_is_run_once_and_reported() {
    let dir = scratch("c-repro");
    let fuzzer = build_planted(&dir, "planted.c", &[]);
    std::fs::write(dir.join("crash-input"), b"xxT?").unwrap();
    std::fs::write(dir.join("fine-input"), b"fine").unwrap();
    let out = dir.join("out");
    let crashing = run(
        &fuzzer,
        &[
            "-o",
            out.to_str().unwrap(),
            dir.join("crash-input").to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&crashing.stderr);
    assert_eq!(crashing.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("SIGSEGV in check_trailer"), "{stderr}");
    let summary = common::summary(&out);
    assert_eq!(
        summary["executions"].as_u64(),
        Some(1),
        "only the file, as libFuzzer runs it: no fuzzing"
    );

    let fine = run(
        &fuzzer,
        &[
            "-o",
            dir.join("out2").to_str().unwrap(),
            dir.join("fine-input").to_str().unwrap(),
        ],
    );
    assert_eq!(
        fine.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&fine.stderr)
    );
}

#[test]
// One scenario followed through every file the run writes; the 100-line rule is for src/.
#[allow(clippy::too_many_lines)]
fn grammar_mode_reproducers_are_minimal_choice_sequences_with_their_sentences() {
    let dir = scratch("c-grammar");
    let fuzzer = build_planted(&dir, "planted.c", &[]);
    let grammar = root().join("fuzzers/c_planted/letters.json");
    let out = dir.join("out");
    fuzz_until_crashes(
        &fuzzer,
        &out,
        "400000",
        "2",
        &["--grammar", grammar.to_str().unwrap()],
    );
    let summary = common::summary(&out);
    let mut found: Vec<(Vec<u8>, Vec<u8>)> = summary["crashes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|crash| {
            let file = out.join(crash["input"].as_str().unwrap());
            let rendered = file.with_file_name(format!(
                "{}.rendered",
                file.file_name().unwrap().to_string_lossy()
            ));
            (
                std::fs::read(&file).unwrap(),
                std::fs::read(rendered).unwrap(),
            )
        })
        .collect();
    found.sort();
    // Patterns: after `H!` anything may follow (any `<start>`); `T?` must end the input, and
    // what comes before it is another list element, which a pattern over the derivation tree
    // keeps concrete.
    let mut patterns: Vec<&str> = summary["crashes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|crash| crash["pattern"].as_str().unwrap_or_default())
        .collect();
    patterns.sort_unstable();
    assert_eq!(patterns, ["H!<start>", "T?"]);
    let pattern_of = |prefix: &str| {
        summary["crashes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["pattern"].as_str().is_some_and(|p| p.starts_with(prefix)))
            .map(|c| out.join(format!("{}.pattern", c["input"].as_str().unwrap())))
            .unwrap()
    };
    let rendered_crashes = |out: &Path| -> Vec<Vec<u8>> {
        let mut all: Vec<Vec<u8>> = std::fs::read_dir(out.join("crashes"))
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "rendered"))
            .map(|e| std::fs::read(e.path()).unwrap())
            .collect();
        all.sort();
        all
    };
    // --avoid: the same run with the grammar rewritten never produces `H!...`, and still finds
    // the other bug.
    let avoiding = dir.join("avoiding");
    fuzz_until_crashes(
        &fuzzer,
        &avoiding,
        "400000",
        "2",
        &[
            "--grammar",
            grammar.to_str().unwrap(),
            "--avoid",
            pattern_of("H!").to_str().unwrap(),
        ],
    );
    assert_eq!(rendered_crashes(&avoiding), vec![b"T?".to_vec()]);
    // --only: every input is `H!...`, so the one crash is that one.
    let only = dir.join("only");
    fuzz_until_crashes(
        &fuzzer,
        &only,
        "2000",
        "2",
        &[
            "--grammar",
            grammar.to_str().unwrap(),
            "--only",
            pattern_of("H!").to_str().unwrap(),
        ],
    );
    assert_eq!(rendered_crashes(&only), vec![b"H!".to_vec()]);
    // Choices: 1 = one more character, then its index in A-Z!? ('H' 7, 'T' 19, '!' 26, '?' 27);
    // the exhausted sequence ends the word.
    assert_eq!(
        found,
        vec![
            (vec![1, 7, 1, 26], b"H!".to_vec()),
            (vec![1, 19, 1, 27], b"T?".to_vec())
        ]
    );

    // `reduce`: a long choice sequence rendering `H!E` (it crashes on its `H!` prefix) reduces
    // to the same minimum the fuzzer found, in a handful of target runs.
    let long = dir.join("long-choices");
    std::fs::write(&long, [5u8, 7, 9, 26, 3, 4, 2, 19, 1, 27]).unwrap();
    let reduced = run(
        &fuzzer,
        &[
            "reduce",
            "--grammar",
            grammar.to_str().unwrap(),
            "-o",
            dir.join("reduced").to_str().unwrap(),
            long.to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&reduced.stdout);
    assert_eq!(reduced.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains(r#"rendering "H!E""#), "{stdout}");
    assert!(
        stdout.contains(r#"4 choices [1, 7, 1, 26] rendering "H!""#),
        "{stdout}"
    );
    let runs: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("target runs: "))
        .and_then(|n| n.parse().ok())
        .expect("the run count is printed");
    assert!(runs < 200, "{runs} runs");

    // `reduce --parse`: a sentence is parsed into its choices first.
    let text = dir.join("sentence.txt");
    std::fs::write(&text, "T?XYZ").unwrap();
    let parsed = run(
        &fuzzer,
        &[
            "reduce",
            "--parse",
            "--grammar",
            grammar.to_str().unwrap(),
            "-o",
            dir.join("parsed").to_str().unwrap(),
            text.to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&parsed.stdout);
    assert!(
        stdout.contains("parsed: 10 choices [1, 19, 1, 27, 1, 23, 1, 24, 1, 25]"),
        "{stdout}"
    );
    assert!(
        stdout.contains(r#"4 choices [1, 19, 1, 27] rendering "T?""#),
        "{stdout}"
    );

    std::fs::write(dir.join("bad.json"), r#"{"<start>": [["<x>"]]}"#).unwrap();
    let bad = run(
        &fuzzer,
        &[
            "--grammar",
            dir.join("bad.json").to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("`<start>` uses `<x>`, which is not defined"),
        "{stderr}"
    );
}

#[test]
fn an_oss_fuzz_build_script_builds_a_libraries_shipped_harnesses_with_labelfuzz() {
    // lz4 ships its OSS-Fuzz build (ossfuzz/ossfuzz.sh: `make` with $CC, $CFLAGS and
    // $LIB_FUZZING_ENGINE); it runs unchanged with labelfuzz's compilers in OSS-Fuzz's
    // environment.
    let dir = scratch("oss-fuzz-lz4");
    let sources = checked(
        Command::new("bash")
            .arg("-c")
            .arg("NATIVE_TARGET=oss-fuzz-lz4; source scripts/native.sh; registry_source lz4-sys"),
        "finding lz4's sources",
    );
    let liblz4 = PathBuf::from(String::from_utf8_lossy(&sources.stdout).trim()).join("liblz4");
    let project = dir.join("lz4");
    checked(
        Command::new("cp").arg("-r").arg(&liblz4).arg(&project),
        "copying lz4",
    );
    let out = dir.join("out");
    checked(
        Command::new("bash")
            .arg(root().join("scripts/oss-fuzz-build.sh"))
            .arg(&project)
            .arg(&out)
            .arg(project.join("ossfuzz/ossfuzz.sh")),
        "lz4's OSS-Fuzz build",
    );
    for fuzzer in [
        "decompress_fuzzer",
        "round_trip_fuzzer",
        "compress_frame_fuzzer",
    ] {
        assert!(out.join(fuzzer).is_file(), "{fuzzer} was built");
    }
    let state = dir.join("state");
    let result = run(
        &out.join("decompress_fuzzer"),
        &["-runs=50000", "-seed=1", "-o", state.to_str().unwrap()],
    );
    assert_eq!(
        result.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    // The library itself is instrumented (its CFLAGS carry -fsanitize=fuzzer-no-link): the
    // harness alone has a few dozen edges, LZ4's decoder hundreds.
    let edges = common::summary(&state)["edges"].as_u64().unwrap_or(0);
    assert!(edges >= 150, "{edges} edges");
}

/// Runs `fuzzer` with `args` (progress lines on: no `-q`).
fn run_loud(fuzzer: &Path, args: &[&str]) -> std::process::Output {
    Command::new(fuzzer)
        .args(args)
        .output()
        .expect("the fuzzer starts")
}

#[test]
fn libfuzzer_output_flags_silence_the_target_and_shape_the_progress_lines() {
    let dir = scratch("c-noisy");
    let fuzzer = build_planted(&dir, "noisy.c", &[]);
    let out = |name: &str| dir.join(name).to_str().unwrap().to_string();

    // Without a mask the target's chatter is there; with -close_fd_mask=3 it is gone, and the
    // fuzzer's own progress lines still reach stderr.
    let noisy = run_loud(&fuzzer, &["-runs=2000", "-seed=1", "-o", &out("loud")]);
    assert!(String::from_utf8_lossy(&noisy.stdout).contains("TARGET-STDOUT"));
    assert!(String::from_utf8_lossy(&noisy.stderr).contains("TARGET-STDERR"));
    let quiet = run_loud(
        &fuzzer,
        &[
            "-runs=2000",
            "-seed=1",
            "-close_fd_mask=3",
            "-o",
            &out("silenced"),
        ],
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&quiet.stdout),
        String::from_utf8_lossy(&quiet.stderr),
    );
    assert_eq!(quiet.status.code(), Some(0), "{stderr}");
    assert!(!stdout.contains("TARGET-STDOUT"), "{stdout}");
    assert!(!stderr.contains("TARGET-STDERR"), "{stderr}");
    assert!(stderr.contains("labels:"), "progress lines stay: {stderr}");

    // libFuzzer's progress format, and -only_ascii=1: no corpus input has a byte outside
    // printable ASCII and whitespace, though the target rewards such bytes.
    let ascii = run_loud(
        &fuzzer,
        &[
            "-runs=20000",
            "-seed=1",
            "-only_ascii=1",
            "-close_fd_mask=3",
            "--libfuzzer-progress",
            "-o",
            &out("ascii"),
        ],
    );
    let stderr = String::from_utf8_lossy(&ascii.stderr);
    assert!(stderr.contains("\tINITED cov: "), "{stderr}");
    assert!(stderr.contains("\tDONE   cov: "), "{stderr}");
    assert!(stderr.contains("Done 20000 runs in "), "{stderr}");
    let corpus: Vec<Vec<u8>> = std::fs::read_dir(dir.join("ascii/corpus"))
        .expect("corpus")
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    assert!(corpus.len() > 3, "{corpus:?}");
    for input in &corpus {
        assert!(
            input
                .iter()
                .all(|&b| b.is_ascii_graphic() || b == b' ' || (9..=13).contains(&b)),
            "{input:?}"
        );
    }
    let loud_corpus_has_high_bytes = std::fs::read_dir(dir.join("loud/corpus"))
        .expect("corpus")
        .any(|e| {
            std::fs::read(e.unwrap().path())
                .unwrap()
                .iter()
                .any(|&b| b >= 0x80)
        });
    assert!(loud_corpus_has_high_bytes, "the check above can fail");
}

#[test]
fn a_counter_compared_to_a_constant_is_found_with_default_flags() {
    let dir = scratch("c-four-in-a-row");
    let fuzzer = build_planted(&dir, "four_in_a_row.c", &[]);
    let out = dir.join("out");
    fuzz_until_crashes(&fuzzer, &out, "300000", "5", &["--stop-on-crash"]);
    let crashes = crashes_by_input(&out);
    let (kind, site) = &crashes[&b"CCCC".to_vec()];
    assert_eq!(kind, "signal");
    assert!(
        site.ends_with("four_in_a_row.c:12 in LLVMFuzzerTestOneInput"),
        "{site}"
    );
}

/// Fuzzes the planted `file` for up to `runs` executions and checks that a crash's reproducer
/// starts with `prefix`; then checks that with the flags `lever_off` the same budget finds
/// nothing, so that the lever the test is about is what found it.
fn found_only_with_lever(name: &str, file: &str, runs: &str, prefix: &[u8], lever_off: &[&str]) {
    let dir = scratch(name);
    let fuzzer = build_planted(&dir, file, &[]);
    let out = dir.join("out");
    fuzz_until_crashes(&fuzzer, &out, runs, "3", &["--stop-on-crash"]);
    let crashes = crashes_by_input(&out);
    assert!(
        crashes.keys().any(|input| input.starts_with(prefix)),
        "{crashes:?}"
    );
    fuzz_finding_nothing(&fuzzer, &dir.join("plain"), runs, "3", lever_off);
}

#[test]
fn a_length_field_compared_after_scaling_is_found_by_undoing_the_scale() {
    found_only_with_lever(
        "c-scaled-length",
        "scaled_length.c",
        "200000",
        &0x068a_cf0f_u32.to_le_bytes(),
        &["--cmplog-transforms", "0"],
    );
}

#[test]
fn a_size_field_stored_as_a_variable_length_integer_is_found_by_encoding_the_compared_value() {
    // 0x1a2b3c4 in LEB128: seven bits a byte, lowest first.
    found_only_with_lever(
        "c-varint-length",
        "varint_length.c",
        "200000",
        &[0xc4, 0xe7, 0x8a, 0x0d],
        &["--cmplog-transforms", "0"],
    );
}

#[test]
fn content_behind_a_checksum_is_found_by_repairing_each_mutants_checksum() {
    found_only_with_lever(
        "c-checksum-gate",
        "checksum_gate.c",
        "300000",
        b"GATE",
        &["--cmplog-repair", "0"],
    );
}

/// zlib's Adler-32 of `data`, big-endian, as `checksum_gate.c` reads it.
fn adler32_be(data: &[u8]) -> [u8; 4] {
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    (b << 16 | a).to_be_bytes()
}

#[test]
fn a_crash_behind_a_checksum_shrinks_to_its_minimum_by_repairing_each_candidate() {
    let dir = scratch("c-checksum-shrink");
    let fuzzer = build_planted(&dir, "checksum_gate.c", &[]);
    // A long record that passes the checksum: its mutant with the word is a long crash, and
    // every shorter candidate of that crash fails the checksum unless it is repaired.
    let seeds = dir.join("seeds");
    std::fs::create_dir_all(&seeds).unwrap();
    let mut long = b"GATx and a tail the shrink has to remove".to_vec();
    long.extend_from_slice(&adler32_be(&long.clone()));
    std::fs::write(seeds.join("long"), &long).unwrap();
    let mut minimal = b"GATE".to_vec();
    minimal.extend_from_slice(&adler32_be(b"GATE"));
    let seed_dir = seeds.to_str().unwrap();
    let out = dir.join("out");
    fuzz_until_crashes(&fuzzer, &out, "100000", "1", &["--stop-on-crash", seed_dir]);
    let crashes = crashes_by_input(&out);
    assert!(crashes.contains_key(&minimal), "{crashes:?}");
}

#[test]
fn a_crash_found_by_expanding_a_record_behind_a_checksum_shrinks_to_its_minimum() {
    let dir = scratch("c-checksum-length");
    let fuzzer = build_planted(&dir, "checksum_length.c", &[]);
    let seeds = dir.join("seeds");
    std::fs::create_dir_all(&seeds).unwrap();
    let mut short = b"ab".to_vec();
    short.extend_from_slice(&adler32_be(b"ab"));
    std::fs::write(seeds.join("short"), &short).unwrap();
    let seed_dir = seeds.to_str().unwrap();
    // Havoc off: the expansions lengthen the record. The crash is found by an expansion (or
    // an input-to-state mutant of a long entry that failed the check), and its shrink removes
    // bytes the checksum covers: it ends minimal only if the gates watched while expanding
    // are kept with it (without, it stayed at 133 bytes). Picks not charged by execution time,
    // so that the run is the same every time: charged, the order of the picks follows the
    // measured execution times, and about half the runs ended with a 27-byte reproducer.
    let flags = [
        "--stop-on-crash",
        "--havoc",
        "0",
        "--charge-exec-time",
        "0",
        seed_dir,
    ];
    let out = dir.join("out");
    fuzz_until_crashes(&fuzzer, &out, "200000", "1", &flags);
    let crashes = crashes_by_input(&out);
    let mut minimal = vec![0u8; 12];
    minimal.extend_from_slice(&adler32_be(&[0u8; 12]));
    assert!(crashes.contains_key(&minimal), "{crashes:?}");
}

#[test]
fn conditions_the_compiler_folds_into_one_branch_are_found_one_at_a_time() {
    let dir = scratch("c-folded-conditions");
    let fuzzer = build_planted(&dir, "folded_conditions.c", &[]);
    let out = dir.join("out");
    fuzz_until_crashes(&fuzzer, &out, "300000", "1", &["--stop-on-crash"]);
    let crashes = crashes_by_input(&out);
    // The shortlex-smallest bytes whose pairs sum to 0x5a, 0xa5, 0x3c, 0xc3.
    let minimal = [0, 0x5a, 0, 0xa5, 0, 0x3c, 0, 0xc3].to_vec();
    assert!(crashes.contains_key(&minimal), "{crashes:?}");
    // The check can fail: with the compiler's folding kept, the same budget finds nothing.
    checked(
        Command::new(common::compiler_wrapper_dir().join("labelfuzz-cc"))
            .current_dir(&dir)
            .env("LABELFUZZ_FOLDED_CONDITIONS", "1")
            .args(["-O1", "-o", "folded"])
            .arg(root().join("fuzzers/c_planted/folded_conditions.c")),
        "labelfuzz-cc with LABELFUZZ_FOLDED_CONDITIONS=1",
    );
    fuzz_finding_nothing(&dir.join("folded"), &dir.join("plain"), "300000", "1", &[]);
}

/// The labels `fuzzer` counts after running the files of `seeds` once each (`-runs=0`).
fn labels_of(fuzzer: &Path, out: &Path, seeds: &Path) -> u64 {
    let result = run(
        fuzzer,
        &[
            "-runs=0",
            "-o",
            out.to_str().unwrap(),
            seeds.to_str().unwrap(),
        ],
    );
    assert_eq!(
        result.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    common::summary(out)["labels"]
        .as_u64()
        .expect("labels in summary.json")
}

#[test]
fn each_way_out_of_a_loop_with_two_conditions_is_a_label_of_its_own() {
    // "N\1\0" ends the name at its terminator; "N\1\1" at the end of the input, after as
    // many turns of the loop.
    each_condition_is_a_label_of_its_own("unterminated_name.c", b"N\x01\x00", &[b"N\x01\x01"]);
}

#[test]
fn each_side_of_a_chosen_value_is_a_label_of_its_own() {
    // "V\0\5" chooses 10 for the offset (not 'X') and the size for the length (3 < 5); the
    // others choose 3 for the offset, and the byte for the length.
    each_condition_is_a_label_of_its_own(
        "chosen_values.c",
        b"V\x00\x05",
        &[b"VX\x05", b"V\x00\x01"],
    );
}

/// Builds `source` (in `fuzzers/c_planted/`) at `-O2` and checks that each of `others` adds
/// labels to those of `first` alone (it takes a side of a condition `first` does not), and
/// that with the compiler's folding kept (`LABELFUZZ_FOLDED_CONDITIONS=1`) none does: the
/// check can fail.
fn each_condition_is_a_label_of_its_own(source: &str, first: &[u8], others: &[&[u8]]) {
    let dir = scratch(&format!("c-conditions-{}", source.trim_end_matches(".c")));
    let source = root().join("fuzzers/c_planted").join(source);
    let source = source.to_str().unwrap();
    labelfuzz_cc(&dir, &["-O2", source, "-o", "split"]);
    checked(
        Command::new(common::compiler_wrapper_dir().join("labelfuzz-cc"))
            .current_dir(&dir)
            .env("LABELFUZZ_FOLDED_CONDITIONS", "1")
            .args(["-O2", source, "-o", "folded"]),
        "labelfuzz-cc with LABELFUZZ_FOLDED_CONDITIONS=1",
    );
    let seeds = |name: &str, files: &[&[u8]]| {
        let seeds = dir.join(name);
        std::fs::create_dir_all(&seeds).unwrap();
        for (i, bytes) in files.iter().enumerate() {
            std::fs::write(seeds.join(format!("seed-{i}")), bytes).unwrap();
        }
        seeds
    };
    let alone = seeds("alone", &[first]);
    let pairs: Vec<_> = others
        .iter()
        .enumerate()
        .map(|(i, other)| seeds(&format!("pair-{i}"), &[first, other]))
        .collect();
    for build in ["split", "folded"] {
        let fuzzer = dir.join(build);
        let labels_alone = labels_of(&fuzzer, &dir.join(format!("{build}-alone")), &alone);
        for (i, (other, pair)) in others.iter().zip(&pairs).enumerate() {
            let labels = labels_of(&fuzzer, &dir.join(format!("{build}-pair-{i}")), pair);
            if build == "split" {
                assert!(
                    labels > labels_alone,
                    "{other:?} shows no label of its own ({labels_alone}, {labels})"
                );
            } else {
                assert_eq!(
                    labels, labels_alone,
                    "folded, {other:?} takes no edge {first:?} does not"
                );
            }
        }
    }
}

#[test]
fn bytes_checked_at_fixed_places_of_a_zeroed_record_are_written_where_they_were_read() {
    let dir = scratch("c-scattered-bytes");
    let fuzzer = build_planted(&dir, "scattered_bytes.c", &[]);
    let out = dir.join("out");
    fuzz_until_crashes(&fuzzer, &out, "150000", "5", &["--stop-on-crash"]);
    let crashes = crashes_by_input(&out);
    let mut expected = vec![0u8; 256];
    for (at, byte) in [(200, 0x7f), (17, 0x31), (90, 0xc4), (250, 0x08)] {
        expected[at] = byte;
    }
    assert!(crashes.contains_key(&expected), "{crashes:?}");
    // The check can fail: without input-to-state the same budget does not find it.
    let plain = dir.join("plain");
    fuzz_finding_nothing(&fuzzer, &plain, "150000", "5", &["--cmplog", "0"]);
}

#[test]
fn a_run_of_magic_words_is_found_with_comparison_progress() {
    let dir = scratch("c-magic-words");
    let fuzzer = build_planted(&dir, "magic_words_in_a_row.c", &[]);
    let out = dir.join("out");
    fuzz_until_crashes(
        &fuzzer,
        &out,
        "1000000",
        "1",
        &["--stop-on-crash", "--cmp-progress", "1"],
    );
    let crashes = crashes_by_input(&out);
    let magic_words = 0x7a3c_91e5_u32.to_ne_bytes().repeat(4);
    assert!(crashes.contains_key(&magic_words), "{crashes:?}");
}

/// Fuzzes `magic.c`'s `fuzzer` into `out` with CmpLog off (the operands are not copied into
/// the input, only compared), stopping at the first crash; the run and its crashes.
fn fuzz_magic_without_cmplog(
    fuzzer: &Path,
    out: &Path,
    flags: &[&str],
) -> (
    std::process::Output,
    std::collections::BTreeMap<Vec<u8>, (String, String)>,
) {
    let mut args = vec![
        "-seed=3",
        "--cmplog",
        "0",
        "--stop-on-crash",
        "-max_total_time=300",
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(flags);
    let result = run(fuzzer, &args);
    (result, crashes_by_input(out))
}

#[test]
fn a_thousand_equal_bytes_are_written_by_a_long_run() {
    let dir = scratch("c-long-run");
    let fuzzer = build_planted(&dir, "long_run.c", &[]);
    let on = dir.join("on");
    fuzz_until_crashes(&fuzzer, &on, "100000", "4", &["--long-runs", "1"]);
    let crashes = crashes_by_input(&on);
    let inputs: Vec<&[u8]> = crashes.keys().map(Vec::as_slice).collect();
    assert_eq!(inputs, vec![&[0u8; 1000][..]], "shrunk to the simplest");
    // The check can fail: without long runs the same budget finds nothing.
    fuzz_finding_nothing(&fuzzer, &dir.join("off"), "100000", "4", &[]);
}

#[test]
fn comparison_progress_starts_by_default_once_edges_stall() {
    let dir = scratch("c-magic-stall");
    let fuzzer = build_planted(&dir, "magic.c", &[]);
    let magic = 0x5a7c_31e9_u32.to_ne_bytes();
    let fuzz =
        |name: &str, flags: &[&str]| fuzz_magic_without_cmplog(&fuzzer, &dir.join(name), flags);
    // Edges stop growing at once; the switch comes after the fewest quiet executions
    // (500 000), and comparison progress then reaches the magic number as it does from the
    // start (below, within 3 000 000).
    let (stalled, crashes) = fuzz("default", &["-runs=4000000"]);
    let stderr = String::from_utf8_lossy(&stalled.stderr);
    assert_eq!(stalled.status.code(), Some(77), "{stderr}");
    assert!(crashes.contains_key(magic.as_slice()), "{crashes:?}");
    // Quiet runs say nothing of the switch; the output directory has it.
    assert!(dir.join("default/edges-stalled").exists(), "{stderr}");
    // The check can fail: never switching, the same budget finds nothing.
    let (never, _) = fuzz("never", &["-runs=4000000", "--cmp-progress", "0"]);
    assert_eq!(
        never.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&never.stderr)
    );
}

#[test]
fn a_resumed_run_keeps_the_stall_and_the_inputs_comparison_progress_kept() {
    let dir = scratch("c-magic-resume");
    let fuzzer = build_planted(&dir, "magic.c", &[]);
    let out = dir.join("out");
    // Just past the switch (the fewest quiet executions, 500 000, looked at every 20 000).
    // Comparison progress may already reach the magic number in the executions after the
    // switch (the schedule follows the clock), so a crash is as good an end as the budget.
    let (stalled, _) = fuzz_magic_without_cmplog(&fuzzer, &out, &["-runs=560000"]);
    assert!(
        matches!(stalled.status.code(), Some(0 | 77)),
        "{}",
        String::from_utf8_lossy(&stalled.stderr)
    );
    let marked_at: u64 = std::fs::read_to_string(out.join("edges-stalled"))
        .expect("the stall is marked in the output directory")
        .trim()
        .parse()
        .unwrap();
    assert!((500_000..560_000).contains(&marked_at), "{marked_at}");
    // Two copies of the stalled run, resumed with and without comparison progress.
    let off = dir.join("resumed-off");
    copy_tree(&out, &off);
    let resume = |out: &Path, flags: &[&str]| {
        let mut args = vec!["--cmplog", "0", "-runs=1", "-o", out.to_str().unwrap()];
        args.extend_from_slice(flags);
        let resumed = run(&fuzzer, &args);
        // One execution from a corpus this close may hit the magic number again.
        assert!(matches!(resumed.status.code(), Some(0 | 77)), "{resumed:?}");
        std::fs::read_dir(out.join("corpus")).unwrap().count()
    };
    let kept_on = resume(&out, &[]);
    // The check can fail: resumed with comparison progress off, the inputs kept for it go.
    let kept_off = resume(&off, &["--cmp-progress", "0"]);
    assert!(
        kept_on > kept_off,
        "{kept_on} with the stall, {kept_off} without"
    );
}

/// Copies the files under `from` to `to`, directories and all.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn comparison_labels_reach_a_magic_number_that_edges_alone_do_not() {
    let dir = scratch("c-magic");
    let fuzzer = build_planted(&dir, "magic.c", &[]);
    let magic = 0x5a7c_31e9_u32.to_ne_bytes();
    let fuzz =
        |name: &str, flags: &[&str]| fuzz_magic_without_cmplog(&fuzzer, &dir.join(name), flags);
    let (edges_alone, _) = fuzz("edges", &["-runs=1000000", "--cmp-progress", "0"]);
    assert_eq!(
        edges_alone.status.code(),
        Some(0),
        "edges alone do not find it"
    );
    // Comparison progress: the distance to the magic number halves step by step.
    let (progress, crashes) = fuzz("progress", &["-runs=3000000", "--cmp-progress", "1"]);
    assert_eq!(
        progress.status.code(),
        Some(77),
        "{}",
        String::from_utf8_lossy(&progress.stderr)
    );
    assert!(crashes.contains_key(magic.as_slice()), "{crashes:?}");
    // libFuzzer's value profile: the matching bits grow one by one.
    let (profiled, crashes) = fuzz("profiled", &["-use_value_profile=1", "-runs=20000000"]);
    assert_eq!(
        profiled.status.code(),
        Some(77),
        "{}",
        String::from_utf8_lossy(&profiled.stderr)
    );
    assert!(crashes.contains_key(magic.as_slice()), "{crashes:?}");
}

#[test]
fn a_timeout_that_fires_inside_malloc_is_reported_not_deadlocked() {
    let dir = scratch("c-alloc-hang");
    let fuzzer = build_planted(&dir, "alloc_hang.c", &[]);
    let seeds = dir.join("seeds");
    std::fs::create_dir_all(&seeds).unwrap();
    std::fs::write(seeds.join("hang"), b"Hang").unwrap();
    let out = dir.join("out");
    // Every execution of an `H` input hangs inside the allocator; each timeout restarts the
    // process, and none may leave the fuzzer waiting on the allocator's lock.
    let result = common::run_bounded(
        &fuzzer,
        &[
            "-o",
            out.to_str().unwrap(),
            "--timeout",
            "100",
            "--runs",
            "3000",
            "--max-time",
            "60",
            "--seed",
            "1",
            seeds.to_str().unwrap(),
        ],
        std::time::Duration::from_secs(150),
    );
    assert_eq!(
        result.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let crashes = crashes_by_input(&out);
    let (kind, _) = crashes.get(b"H".as_slice()).expect("the minimal hang");
    assert_eq!(kind, "timeout");
}
