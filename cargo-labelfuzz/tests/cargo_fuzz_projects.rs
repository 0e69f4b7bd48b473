//! End to end: an unmodified cargo-fuzz project (`tests/data/cargo-fuzz-project`, written the
//! way the cargo-fuzz book writes targets) built and fuzzed with `cargo labelfuzz`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use common::{assert_git_clean, repo};

/// The commands below build into the same target directory and binary names: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// A fresh copy of the test project (the tests write corpora, artifacts and lock files), as a
/// committed git checkout.
fn project_copy(name: &str) -> PathBuf {
    copy_of("cargo-fuzz-project", name)
}

/// A fresh copy of `tests/data/<project>`, as a committed git checkout.
fn copy_of(project: &str, name: &str) -> PathBuf {
    let dir = repo()
        .join("target/test-scratch/cargo-labelfuzz")
        .join(name);
    common::project(project, &dir, |_| {});
    dir
}

/// `cargo labelfuzz ARGS` in `dir`, as cargo runs it (the subcommand name comes first).
fn cargo_labelfuzz(dir: &Path, args: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_cargo-labelfuzz"))
        .arg("labelfuzz")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("cargo-labelfuzz starts");
    eprintln!(
        "cargo labelfuzz {args:?}: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
            .lines()
            .filter(|l| !l.contains("Compiling") && !l.starts_with("DEBUG"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    output
}

/// The bounded fuzzing run every target gets.
/// (libFuzzer's flags, as cargo-fuzz users pass them: reports and exit statuses are libFuzzer's.)
const RUN: &[&str] = &["--", "-runs=2000000", "-max_total_time=240", "-seed=1"];

fn run_target(dir: &Path, target: &str) -> Output {
    let mut args = vec!["run", target];
    args.extend_from_slice(RUN);
    cargo_labelfuzz(dir, &args)
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| {
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        std::fs::read(e.path()).unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// The crash reproducers in cargo-fuzz's artifact directory of `target`.
fn crash_artifacts(dir: &Path, target: &str) -> Vec<Vec<u8>> {
    files(&dir.join("fuzz/artifacts").join(target))
        .into_iter()
        .filter(|(name, _)| name.starts_with("crash-"))
        .map(|(_, bytes)| bytes)
        .collect()
}

#[test]
fn every_cargo_fuzz_target_form_finds_its_planted_bug() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = project_copy("forms");
    let manifest_before = std::fs::read(dir.join("fuzz/Cargo.toml")).unwrap();

    // `|data: &[u8]|`: the minimal reproducer of the parser's bug.
    let parse = run_target(&dir, "parse");
    assert_eq!(parse.status.code(), Some(77), "a crash was found");
    assert_eq!(crash_artifacts(&dir, "parse"), vec![b"p9+".to_vec()]);
    assert!(!files(&dir.join("fuzz/corpus/parse")).is_empty());

    // `|ops: Vec<FuzzOp>|` with a derived `Arbitrary`: the overflow in `Add`, printed with Debug.
    let ops = run_target(&dir, "ops");
    assert_eq!(ops.status.code(), Some(77));
    assert_eq!(crash_artifacts(&dir, "ops").len(), 1);
    let stdout = String::from_utf8_lossy(&ops.stdout);
    assert!(stdout.contains("Output of `std::fmt::Debug`"), "{stdout}");
    assert!(stdout.contains("Add"), "{stdout}");
    // Its pattern, on the Debug form: the overflow needs a `Push` of a large value and a `Push`
    // of any other before `Add`, so one of the two values is free and anything may follow.
    let summary: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("fuzz/target/labelfuzz/state/ops/summary.json")).unwrap(),
    )
    .unwrap();
    let typed = summary["crashes"][0]["typed_pattern"]
        .as_str()
        .unwrap_or_else(|| panic!("no typed pattern: {summary}"));
    let elements: Vec<&str> = typed
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or_else(|| panic!("not a list: {typed}"))
        .split(", ")
        .collect();
    assert_eq!(elements.len(), 4, "{typed}");
    assert!(
        elements[..2].iter().all(|e| e.starts_with("Push(")),
        "{typed}"
    );
    assert!(elements[..2].contains(&"Push(_)"), "{typed}");
    assert_eq!(elements[2..], ["Add", ".."], "{typed}");
    assert!(stdout.contains(&format!("\n{typed}\n")), "{stdout}");

    // `init: { ... }`: the bug exists only in the mode the initializer turns on.
    let strict = run_target(&dir, "strict_header");
    assert_eq!(strict.status.code(), Some(77));
    assert_eq!(crash_artifacts(&dir, "strict_header"), vec![b"!!".to_vec()]);

    // `-> Corpus` with `Corpus::Reject`: the parser's bug is found behind the accepted prefix,
    // and no rejected input enters the corpus (the empty input itself is rejected). This target
    // also reaches `execute`, so some runs find its overflow too: a second, distinct bug, which
    // must sit behind the prefix as well.
    let comments = run_target(&dir, "comments_only");
    assert_eq!(comments.status.code(), Some(77));
    let artifacts = crash_artifacts(&dir, "comments_only");
    assert!(artifacts.contains(&b"#p9+".to_vec()), "{artifacts:?}");
    assert!(artifacts.len() <= 2, "one artifact a bug: {artifacts:?}");
    assert!(
        artifacts.iter().all(|a| a.starts_with(b"#p")),
        "{artifacts:?}"
    );
    let corpus = files(&dir.join("fuzz/corpus/comments_only"));
    assert!(!corpus.is_empty());
    for (name, bytes) in &corpus {
        assert_eq!(bytes.first(), Some(&b'#'), "rejected input {name} kept");
    }

    // The run's report, where cargo-fuzz users look.
    let report = cargo_labelfuzz(&dir, &["report", "comments_only"]);
    assert!(report.status.success());
    assert!(dir
        .join("fuzz/target/labelfuzz/state/comments_only/report.html")
        .is_file());

    // The project is as cargo-fuzz left it: no lock file written, the manifest untouched, and
    // nothing the project's ignore rules do not cover.
    assert!(!dir.join("fuzz/Cargo.lock").exists());
    assert_eq!(
        std::fs::read(dir.join("fuzz/Cargo.toml")).unwrap(),
        manifest_before
    );
    assert_git_clean(&dir);
}

#[test]
fn list_tmin_cmin_and_fmt_work_on_a_cargo_fuzz_project() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = project_copy("tools");

    let list = cargo_labelfuzz(&dir, &["list"]);
    assert!(list.status.success());
    assert_eq!(
        String::from_utf8_lossy(&list.stdout)
            .lines()
            .collect::<Vec<_>>(),
        ["comments_only", "ops", "parse", "strict_header"]
    );

    let big = dir.join("big-crash");
    std::fs::write(&big, b"p9+ and a long tail that does not matter").unwrap();
    let tmin = cargo_labelfuzz(&dir, &["tmin", "parse", big.to_str().unwrap()]);
    assert!(tmin.status.success());
    assert_eq!(
        std::fs::read(dir.join("fuzz/artifacts/parse/minimized-from-big-crash")).unwrap(),
        b"p9+"
    );
    // A file among `run`'s arguments is an input to run, as with cargo-fuzz: the crash is
    // reproduced and reported, and the file is left as it is.
    let minimized = dir.join("fuzz/artifacts/parse/minimized-from-big-crash");
    let rerun = cargo_labelfuzz(&dir, &["run", "parse", minimized.to_str().unwrap()]);
    assert_eq!(rerun.status.code(), Some(77));
    let stderr = String::from_utf8_lossy(&rerun.stderr);
    assert!(stderr.contains("panicked at"), "{stderr}");
    assert!(stderr.contains("index out of bounds"), "{stderr}");
    assert_eq!(std::fs::read(&minimized).unwrap(), b"p9+");

    // A corpus with redundant inputs: inputs that take the same paths the same number of times
    // show the same labels, and only the simplest of them survives.
    let corpus = dir.join("fuzz/corpus/parse");
    std::fs::create_dir_all(&corpus).unwrap();
    for (name, bytes) in [
        ("a", &b"p2p1+"[..]),
        ("b", b"p1p2+"),
        ("c", b"p5"),
        ("d", b"p3"),
        ("e", b"p4"),
    ] {
        std::fs::write(corpus.join(name), bytes).unwrap();
    }
    let cmin = cargo_labelfuzz(&dir, &["cmin", "parse"]);
    assert!(cmin.status.success());
    let mut kept: Vec<Vec<u8>> = files(&corpus).into_iter().map(|(_, b)| b).collect();
    kept.sort();
    assert_eq!(kept, [b"p1p2+".to_vec(), b"p3".to_vec()]);
    assert!(!dir.join("fuzz/corpus/parse.cmin").exists());

    // fmt: an `Arbitrary` target prints the value, a bytes target the bytes.
    let input = dir.join("ops-input");
    std::fs::write(&input, [1u8, 0, 7, 1, 0, 7]).unwrap();
    let typed = cargo_labelfuzz(&dir, &["fmt", "ops", input.to_str().unwrap()]);
    assert!(typed.status.success());
    let text = String::from_utf8_lossy(&typed.stdout);
    assert!(text.contains("Push("), "{text}");
    let bytes = cargo_labelfuzz(&dir, &["fmt", "parse", big.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&bytes.stdout).starts_with("p9+ and a long tail"));

    let unknown = cargo_labelfuzz(&dir, &["run", "no_such_target"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no fuzz target 'no_such_target'"));
}

#[test]
fn init_and_add_make_a_project_that_fuzzes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = repo().join("target/test-scratch/cargo-labelfuzz/fresh-crate");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"fresh-crate\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(dir.join("src/lib.rs"), "pub fn f(_: &[u8]) {}\n").unwrap();

    assert!(cargo_labelfuzz(&dir, &["init"]).status.success());
    assert!(cargo_labelfuzz(&dir, &["add", "second"]).status.success());
    let list = cargo_labelfuzz(&dir, &["list"]);
    assert_eq!(
        String::from_utf8_lossy(&list.stdout)
            .lines()
            .collect::<Vec<_>>(),
        ["fuzz_target_1", "second"]
    );
    assert_eq!(
        cargo_labelfuzz(&dir, &["add", "second"]).status.code(),
        Some(2),
        "an existing target is not overwritten"
    );
    let run = cargo_labelfuzz(&dir, &["run", "second", "--", "-runs=20000"]);
    assert_eq!(run.status.code(), Some(0), "no bug in an empty target");
    assert!(dir
        .join("fuzz/target/labelfuzz/state/second/summary.json")
        .is_file());
}

#[test]
fn the_same_project_still_builds_with_cargo_fuzz_where_it_is_installed() {
    let has = |args: &[&str]| {
        Command::new("cargo")
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has(&["fuzz", "--version"]) || !has(&["+nightly", "--version"]) {
        // scripts/bootstrap.sh installs both: in CI their absence is a failure, not a skip.
        assert!(
            std::env::var_os("CI").is_none(),
            "cargo-fuzz or a nightly toolchain is missing (run scripts/bootstrap.sh)"
        );
        eprintln!("skipped: cargo-fuzz or a nightly toolchain is not installed here");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = project_copy("cargo-fuzz");
    assert!(cargo_labelfuzz(&dir, &["build", "parse"]).status.success());
    // After labelfuzz built it, cargo-fuzz builds the untouched directory with libFuzzer.
    let built = Command::new("cargo")
        .args(["+nightly", "fuzz", "build", "parse"])
        .current_dir(&dir)
        .output()
        .expect("cargo fuzz runs");
    // cargo prints every build script's environment before the compiler's message: the end
    // and the lines naming an error are what says why.
    let stderr = String::from_utf8_lossy(&built.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    let telling: Vec<&str> = lines
        .iter()
        .filter(|l| l.contains("error") || l.contains("No space"))
        .chain(lines.iter().rev().take(15).rev())
        .copied()
        .collect();
    assert!(built.status.success(), "{}", telling.join("\n"));
}

#[test]
fn a_project_pinning_the_engines_own_crates_resolves_as_with_cargo_fuzz() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // rustc-demangle =0.1.5 and libc =0.2.100: both are in LibAFL's graph at newer versions,
    // so a build that resolved the engine with the project could not select them. The fuzz
    // crate is a member of the parent's workspace, whose committed Cargo.lock pins crates.io's
    // libfuzzer-sys.
    let dir = copy_of("pinned-project", "pinned");
    let lock_before = std::fs::read(dir.join("Cargo.lock")).unwrap();
    assert!(String::from_utf8_lossy(&lock_before).contains("name = \"libfuzzer-sys\""));

    let run = cargo_labelfuzz(
        &dir,
        &[
            "run",
            "demangle",
            "--",
            "-runs=300000",
            "-max_total_time=120",
            "-seed=1",
        ],
    );
    assert_eq!(
        run.status.code(),
        Some(77),
        "rustc-demangle 0.1.5's bugs are found"
    );
    assert!(!crash_artifacts(&dir, "demangle").is_empty());
    let summary: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("fuzz/target/labelfuzz/state/demangle/summary.json")).unwrap(),
    )
    .unwrap();
    let locations: Vec<&str> = summary["crashes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["location"].as_str())
        .collect();
    assert!(
        locations
            .iter()
            .any(|l| l.contains("rustc-demangle-0.1.5/src/lib.rs:")),
        "{locations:?}"
    );
    assert_eq!(std::fs::read(dir.join("Cargo.lock")).unwrap(), lock_before);
    assert_git_clean(&dir);

    // A second project reuses the runtime: nothing of the engine is compiled again.
    let second = copy_of("pinned-project", "pinned-second");
    let build = cargo_labelfuzz(&second, &["build", "demangle"]);
    assert!(build.status.success());
    let stderr = String::from_utf8_lossy(&build.stderr);
    assert!(
        !stderr.contains("building the labelfuzz runtime"),
        "{stderr}"
    );
    assert!(!stderr.contains("Compiling libafl"), "{stderr}");
    assert!(!stderr.contains("Compiling labelfuzz v"), "{stderr}");

    // The graph that was fuzzed: the pinned versions, the glue, and none of LibAFL's crates.
    // (In the copy: re-resolved with the stand-in as the build does, then listed.)
    let glue = labelfuzz_build::Glue::ensure().unwrap();
    let patch = format!(
        "patch.crates-io.libfuzzer-sys.path={:?}",
        glue.stand_in.display().to_string()
    );
    let cargo = |args: &[&str]| {
        Command::new("cargo")
            .args(args)
            .args(["--config", &patch])
            .current_dir(second.join("fuzz"))
            .output()
            .expect("cargo runs")
    };
    assert!(cargo(&["update", "-q", "-p", "libfuzzer-sys"])
        .status
        .success());
    let tree = cargo(&["tree", "-e", "normal", "--prefix", "none"]);
    let tree = String::from_utf8_lossy(&tree.stdout);
    assert!(tree.contains("rustc-demangle v0.1.5"), "{tree}");
    assert!(tree.contains("libc v0.2.100"), "{tree}");
    assert!(tree.contains("labelfuzz-sys v"), "{tree}");
    assert!(!tree.contains("libafl"), "{tree}");
}

#[test]
fn fuzz_dir_sanitizer_and_coverage_options_work() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = project_copy("options");
    // --fuzz-dir, from a directory that is not the project's.
    let elsewhere = dir.parent().unwrap().to_path_buf();
    let fuzz_dir = dir.join("fuzz");
    let fuzz_dir = fuzz_dir.to_str().unwrap();
    let built = cargo_labelfuzz(&elsewhere, &["build", "--fuzz-dir", fuzz_dir, "parse"]);
    assert!(built.status.success());
    let exe = String::from_utf8_lossy(&built.stdout).trim().to_string();
    assert!(Path::new(&exe).is_file(), "{exe}");
    assert!(
        exe.starts_with(&dir.join("fuzz/target").display().to_string()),
        "{exe}"
    );

    // coverage TARGET: a run's inputs replayed through the source-coverage build.
    let run = cargo_labelfuzz(
        &elsewhere,
        &[
            "run",
            "--fuzz-dir",
            fuzz_dir,
            "parse",
            "--",
            "-runs=200000",
            "-seed=1",
        ],
    );
    assert_eq!(run.status.code(), Some(77));
    let coverage = cargo_labelfuzz(&elsewhere, &["coverage", "--fuzz-dir", fuzz_dir, "parse"]);
    assert!(coverage.status.success());
    let state = dir.join("fuzz/target/labelfuzz/state/parse");
    assert!(state.join("coverage/index.html").is_file());
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(state.join("coverage/summary.json")).unwrap())
            .unwrap();
    assert!(
        summary["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["file"]
                .as_str()
                .is_some_and(|p| p.ends_with("src/lib.rs"))),
        "the library under test is measured: {summary}"
    );

    // --sanitizer address (nightly): the same bug, found in an AddressSanitizer build.
    let asan = cargo_labelfuzz(
        &dir,
        &[
            "run",
            "--sanitizer",
            "address",
            "parse",
            "--",
            "-runs=2000000",
            "-max_total_time=240",
            "-seed=2",
        ],
    );
    assert_eq!(asan.status.code(), Some(77));
    assert!(crash_artifacts(&dir, "parse").contains(&b"p9+".to_vec()));
    let unknown = cargo_labelfuzz(&dir, &["build", "--sanitizer", "memory", "parse"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("--sanitizer memory"));
    assert_git_clean(&dir);
}
