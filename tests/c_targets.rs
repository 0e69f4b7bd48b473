//! End to end: C libFuzzer harnesses built with `labelfuzz-cc`, fuzzed with bounded runs.

mod common;

use std::process::Command;

use common::{crashes_by_input, labelfuzz_cc, root, run, scratch};

#[test]
fn two_crashes_raising_the_same_signal_are_two_labels() {
    let dir = scratch("c-planted");
    let source = root().join("fuzzers/c_planted/planted.c");
    labelfuzz_cc(
        &dir,
        &["-O1", source.to_str().unwrap(), "-o", "planted_fuzzer"],
    );
    let out = dir.join("out");
    let result = run(
        &dir.join("planted_fuzzer"),
        &[
            "-o",
            out.to_str().unwrap(),
            "--runs",
            "400000",
            "--max-time",
            "60",
            "--seed",
            "3",
        ],
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    let crashes = crashes_by_input(&out);
    let inputs: Vec<&[u8]> = crashes.keys().map(Vec::as_slice).collect();
    assert_eq!(inputs, vec![&b"H!"[..], &b"T?"[..]], "{crashes:?}");
    let (header_kind, header_site) = &crashes[&b"H!".to_vec()];
    let (trailer_kind, trailer_site) = &crashes[&b"T?".to_vec()];
    assert_eq!(
        (header_kind.as_str(), trailer_kind.as_str()),
        ("signal", "signal")
    );
    assert!(header_site.starts_with("SIGSEGV at exe+"), "{header_site}");
    assert!(
        trailer_site.starts_with("SIGSEGV at exe+"),
        "{trailer_site}"
    );
    assert_ne!(header_site, trailer_site);
}

#[test]
fn address_sanitizer_reports_are_labels_named_by_bug_type() {
    let dir = scratch("c-heap");
    let source = root().join("fuzzers/c_planted/heap.c");
    labelfuzz_cc(
        &dir,
        &[
            "-O1",
            "-fsanitize=fuzzer,address",
            source.to_str().unwrap(),
            "-o",
            "heap_fuzzer",
        ],
    );
    let out = dir.join("out");
    let result = run(
        &dir.join("heap_fuzzer"),
        &[
            "-o",
            out.to_str().unwrap(),
            "--runs",
            "200000",
            "--max-time",
            "60",
            "--seed",
            "3",
        ],
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    let crashes = crashes_by_input(&out);
    assert_eq!(crashes.len(), 2, "{crashes:?}");
    let (kind, site) = &crashes[&b"OV\0".to_vec()];
    assert_eq!(kind, "sanitizer");
    assert!(
        site.starts_with("AddressSanitizer heap-buffer-overflow at exe+"),
        "{site}"
    );
    let (kind, site) = &crashes[&b"UF".to_vec()];
    assert_eq!(kind, "sanitizer");
    assert!(
        site.starts_with("AddressSanitizer heap-use-after-free at exe+"),
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
    let copy = Command::new("cp")
        .arg("-r")
        .arg(root().join("tests/data/multilib/."))
        .arg(&dir)
        .status()
        .expect("cp runs");
    assert!(copy.success());
    let cc = common::compiler_wrapper_dir().join("labelfuzz-cc");
    let make = Command::new("make")
        .current_dir(&dir)
        .arg(format!("CC={}", cc.display()))
        .output()
        .expect("make runs");
    assert!(
        make.status.success(),
        "{}",
        String::from_utf8_lossy(&make.stderr)
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
    let result = run(
        &fuzzer,
        &[
            "-o",
            out.to_str().unwrap(),
            "--runs",
            "3000000",
            "--max-time",
            "60",
            "--seed",
            "1",
        ],
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    let crashes = crashes_by_input(&out);
    let (kind, site) = &crashes[&b"KW!".to_vec()];
    assert_eq!(kind, "signal");
    assert!(site.starts_with("SIGABRT at exe+"), "{site}");
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
    let source = root().join("fuzzers/c_planted/planted.c");
    labelfuzz_cc(
        &dir,
        &["-O1", source.to_str().unwrap(), "-o", "planted_fuzzer"],
    );
    std::fs::write(dir.join("crash-input"), b"xxT?").unwrap();
    std::fs::write(dir.join("fine-input"), b"fine").unwrap();
    let fuzzer = dir.join("planted_fuzzer");
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
        Some(2),
        "the empty input, then the file: no fuzzing"
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
fn grammar_mode_reproducers_are_minimal_choice_sequences_with_their_sentences() {
    let dir = scratch("c-grammar");
    let source = root().join("fuzzers/c_planted/planted.c");
    labelfuzz_cc(
        &dir,
        &["-O1", source.to_str().unwrap(), "-o", "planted_fuzzer"],
    );
    let grammar = root().join("fuzzers/c_planted/letters.json");
    let out = dir.join("out");
    let result = run(
        &dir.join("planted_fuzzer"),
        &[
            "-o",
            out.to_str().unwrap(),
            "--grammar",
            grammar.to_str().unwrap(),
            "--runs",
            "400000",
            "--max-time",
            "60",
            "--seed",
            "2",
        ],
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
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
    // Choices: 1 = one more character, then its index in A-Z!? ('H' 7, 'T' 19, '!' 26, '?' 27);
    // the exhausted sequence ends the word.
    assert_eq!(
        found,
        vec![
            (vec![1, 7, 1, 26], b"H!".to_vec()),
            (vec![1, 19, 1, 27], b"T?".to_vec())
        ]
    );

    std::fs::write(dir.join("bad.json"), r#"{"<start>": [["<x>"]]}"#).unwrap();
    let bad = run(
        &dir.join("planted_fuzzer"),
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
