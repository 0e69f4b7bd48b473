//! End to end: the HTML report of a real run, opened in headless Chromium.

mod common;

use std::path::Path;
use std::process::Command;

use common::{build_fuzzer, run, scratch, summary};

/// Chromium's command (Debian names it `chromium`; scripts/bootstrap.sh installs it).
fn chromium() -> &'static str {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return name;
        }
    }
    panic!("no chromium: run scripts/bootstrap.sh (it installs Debian's chromium)");
}

/// Runs headless Chromium on `page` with `args`; returns its stdout.
fn headless(page: &Path, args: &[&str]) -> String {
    let url = format!("file://{}", page.display());
    let output = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--window-size=1200,2400",
        ])
        .args(args)
        .arg(&url)
        .output()
        .expect("chromium starts");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn the_report_of_a_run_renders_its_plots_crashes_and_corpus_in_a_browser() {
    let fuzzer = build_fuzzer("planted");
    let out = scratch("report");
    let fuzzing = run(
        &fuzzer,
        &[
            "-o",
            out.to_str().unwrap(),
            "--max-time",
            "7",
            "--seed",
            "1",
        ],
    );
    assert_eq!(fuzzing.status.code(), Some(1), "the planted bugs are found");
    let written = Command::new(&fuzzer)
        .args(["report", out.to_str().unwrap()])
        .output()
        .expect("the report command runs");
    assert!(written.status.success());
    let page = out.join("report.html");
    assert_eq!(
        String::from_utf8_lossy(&written.stdout).trim(),
        page.to_str().unwrap()
    );

    // The DOM after Chromium has laid the page out: the figures of this run, one drawn line per
    // plotted series, one crash row per crash label of summary.json, the corpus table.
    let dom = headless(&page, &["--dump-dom"]);
    let figures = summary(&out);
    let executions = figures["executions"].as_u64().unwrap();
    assert!(
        dom.contains(&format!("<td class=\"executions\">{executions}</td>")),
        "{dom}"
    );
    for plot in ["<svg id=\"growth\"", "<svg id=\"speed\""] {
        assert!(dom.contains(plot), "{plot} missing");
    }
    assert!(
        dom.matches("<polyline").count() >= 4,
        "three growth lines and one speed line"
    );
    let crashes = figures["crashes"].as_array().unwrap();
    assert_eq!(dom.matches("<tr class=\"crash\">").count(), crashes.len());
    for crash in crashes {
        assert!(dom.contains(crash["input"].as_str().unwrap()));
    }
    assert!(
        dom.contains("<code>FUZZ</code>"),
        "the magic word's reproducer as text"
    );
    assert!(dom.contains("<table id=\"corpus\">"));
    assert!(
        dom.contains("<code class=\"pattern\">B ? \\xff *</code>"),
        "the tag bug's pattern"
    );

    // A screenshot for people: the page really paints (a blank page is a few KB).
    let shot = out.join("report.png");
    headless(&page, &[&format!("--screenshot={}", shot.display())]);
    let size = std::fs::metadata(&shot).expect("screenshot written").len();
    assert!(size > 50_000, "{size} bytes");
}

#[test]
fn the_report_of_a_directory_without_a_run_is_a_clear_error() {
    let fuzzer = build_fuzzer("planted");
    let empty = scratch("report-empty");
    let result = Command::new(&fuzzer)
        .args(["report", empty.to_str().unwrap()])
        .output()
        .expect("the report command runs");
    assert_eq!(result.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&result.stderr).contains("summary.json"));
}

/// The line number of the first line of `file` containing `needle`.
fn line_of(file: &Path, needle: &str) -> u64 {
    let text = std::fs::read_to_string(file).expect("source");
    let index = text
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle} not in {}", file.display()));
    u64::try_from(index).unwrap() + 1
}

#[test]
fn source_coverage_of_a_run_names_the_planted_lines_it_reached() {
    let fuzzer = build_fuzzer("planted");
    let out = scratch("coverage");
    let fuzzing = run(
        &fuzzer,
        &[
            "-o",
            out.to_str().unwrap(),
            "--max-time",
            "5",
            "--seed",
            "2",
        ],
    );
    assert_eq!(fuzzing.status.code(), Some(1));
    // The same target built with source-based coverage instead of SanitizerCoverage.
    let coverage_build = common::build_fuzzer_as("planted", labelfuzz_build::Mode::Coverage);
    let measured = Command::new(&coverage_build)
        .args(["coverage", out.to_str().unwrap()])
        .output()
        .expect("the coverage command runs");
    let stdout = String::from_utf8_lossy(&measured.stdout);
    assert!(
        measured.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&measured.stderr)
    );
    assert!(stdout.contains("lines: "), "{stdout}");
    assert!(out.join("coverage/index.html").is_file(), "llvm-cov's HTML");

    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("coverage/summary.json")).unwrap()).unwrap();
    let source = common::root().join("fuzzers/planted/src/lib.rs");
    let file = summary["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["file"]
                .as_str()
                .is_some_and(|p| p.ends_with("fuzzers/planted/src/lib.rs"))
        })
        .unwrap_or_else(|| panic!("the planted library is measured: {summary}"));
    let reached: Vec<u64> = file["lines_reached"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(serde_json::Value::as_u64)
        .collect();
    // Each bug the run found is a reached line: the panics' own lines.
    for planted in [
        "panic!(\"planted: magic word\")",
        "TABLE[index]",
        "return a + b;",
    ] {
        let line = line_of(&source, planted);
        assert!(
            reached.contains(&line),
            "line {line} ({planted}) not reached: {reached:?}"
        );
    }
    assert!(summary["lines"]["covered"].as_u64().unwrap() > 10);
    // Only the target's code is counted, not labelfuzz's own.
    assert!(summary["files"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| !f["file"].as_str().unwrap().contains("/src/engine")));

    // The run's report shows the summary and links the line-by-line report.
    let written = Command::new(&fuzzer)
        .args(["report", out.to_str().unwrap()])
        .output()
        .expect("the report command runs");
    assert!(written.status.success());
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(page.contains("<table id=\"coverage\">"));
    assert!(page.contains("href=\"coverage/index.html\""));
}

#[test]
fn on_a_terminal_the_status_is_redrawn_in_place_and_a_pipe_gets_plain_lines() {
    let fuzzer = build_fuzzer("planted");
    let out = scratch("status");
    let command = format!(
        "{} -o {} --max-time 5 --seed 1",
        fuzzer.display(),
        out.display()
    );
    // `script` (util-linux) runs the fuzzer on a pseudo-terminal.
    let on_terminal = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("script runs");
    let screen = String::from_utf8_lossy(&on_terminal.stdout);
    assert!(screen.contains("\x1b[3A"), "redrawn in place: {screen}");
    assert!(screen.contains("last new label"), "{screen}");
    assert!(screen.contains("crash labels 3: 3 panic"), "{screen}");

    let piped = Command::new(&fuzzer)
        .args([
            "-o",
            scratch("status-piped").to_str().unwrap(),
            "--max-time",
            "3",
        ])
        .output()
        .expect("the fuzzer runs");
    let log = String::from_utf8_lossy(&piped.stderr);
    assert!(!log.contains('\x1b'), "no escape codes in a log: {log}");
    assert!(log.contains("labels: "), "{log}");
}
