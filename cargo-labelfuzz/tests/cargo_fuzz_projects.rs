//! End to end: an unmodified cargo-fuzz project (`tests/data/cargo-fuzz-project`, written the
//! way the cargo-fuzz book writes targets) built and fuzzed with `cargo labelfuzz`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// The commands below build into the same target directory and binary names: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fresh copy of the test project (the tests write corpora, artifacts and lock files).
fn project_copy(name: &str) -> PathBuf {
    let dir = repo()
        .join("target/test-scratch/cargo-labelfuzz")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let status = Command::new("cp")
        .arg("-r")
        .arg(repo().join("tests/data/cargo-fuzz-project/."))
        .arg(&dir)
        .status()
        .expect("cp runs");
    assert!(status.success());
    dir
}

/// `cargo labelfuzz ARGS` in `dir`, as cargo runs it (the subcommand name comes first).
fn cargo_labelfuzz(dir: &Path, args: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_cargo-labelfuzz"))
        .arg("labelfuzz")
        .args(args)
        .current_dir(dir)
        .env("LABELFUZZ_HOME", repo())
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
    assert_eq!(parse.status.code(), Some(1), "a crash was found");
    assert_eq!(crash_artifacts(&dir, "parse"), vec![b"p9+".to_vec()]);
    assert!(!files(&dir.join("fuzz/corpus/parse")).is_empty());

    // `|ops: Vec<FuzzOp>|` with a derived `Arbitrary`: the overflow in `Add`, printed with Debug.
    let ops = run_target(&dir, "ops");
    assert_eq!(ops.status.code(), Some(1));
    assert_eq!(crash_artifacts(&dir, "ops").len(), 1);
    let stdout = String::from_utf8_lossy(&ops.stdout);
    assert!(stdout.contains("Output of `std::fmt::Debug`"), "{stdout}");
    assert!(stdout.contains("Add"), "{stdout}");

    // `init: { ... }`: the bug exists only in the mode the initializer turns on.
    let strict = run_target(&dir, "strict_header");
    assert_eq!(strict.status.code(), Some(1));
    assert_eq!(crash_artifacts(&dir, "strict_header"), vec![b"!!".to_vec()]);

    // `-> Corpus` with `Corpus::Reject`: the parser's bug is found behind the accepted prefix,
    // and no rejected input enters the corpus (the empty input itself is rejected). This target
    // also reaches `execute`, so some runs find its overflow too: a second, distinct bug, which
    // must sit behind the prefix as well.
    let comments = run_target(&dir, "comments_only");
    assert_eq!(comments.status.code(), Some(1));
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
        .join("fuzz/labelfuzz/comments_only/report.html")
        .is_file());

    // The project is as cargo-fuzz left it: no lock file written, the manifest untouched.
    assert!(!dir.join("fuzz/Cargo.lock").exists());
    assert_eq!(
        std::fs::read(dir.join("fuzz/Cargo.toml")).unwrap(),
        manifest_before
    );
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
    assert!(dir.join("fuzz/labelfuzz/second/summary.json").is_file());
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
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
}
