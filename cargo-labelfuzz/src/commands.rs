//! The commands that run a built fuzz target: run, tmin, cmin and fmt.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use labelfuzz_build::Mode;

use crate::project::FuzzProject;
use crate::{build, Error, TargetArgs};

/// A scratch directory removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(what: &str) -> Result<Self, Error> {
        let dir = std::env::temp_dir().join(format!(
            "cargo-labelfuzz-{what}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, &e))?;
        Ok(Self(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn create_dir(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, &e))
}

/// The exit status of a fuzzer run, passed on (a signal becomes 2).
fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    ExitCode::from(
        status
            .code()
            .and_then(|c| u8::try_from(c).ok())
            .unwrap_or(2),
    )
}

/// A crash reproducer listed in an output directory's `summary.json`.
struct CrashFile {
    path: PathBuf,
    /// Its pattern on the `Debug` form, for a typed target.
    typed_pattern: Option<String>,
}

/// The reproducers listed in an output directory's `summary.json`.
fn crash_files(output: &Path) -> Vec<CrashFile> {
    let Ok(text) = std::fs::read_to_string(output.join("summary.json")) else {
        return Vec::new();
    };
    let Ok(summary) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Vec::new();
    };
    summary["crashes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|crash| {
            Some(CrashFile {
                path: output.join(crash["input"].as_str()?),
                typed_pattern: crash["typed_pattern"].as_str().map(str::to_owned),
            })
        })
        .collect()
}

/// The `Debug` form of `file` as an `Arbitrary` target reads it, or `None` for a bytes target
/// (which ignores `RUST_LIBFUZZER_DEBUG_PATH`).
fn debug_form(exe: &Path, file: &Path) -> Result<Option<String>, Error> {
    let scratch = Scratch::new("fmt")?;
    let debug_path = scratch.0.join("debug.txt");
    let status = Command::new(exe)
        .arg("-q")
        .arg("-o")
        .arg(scratch.0.join("out"))
        .arg(file)
        .env("RUST_LIBFUZZER_DEBUG_PATH", &debug_path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| Error::io("run", exe, &e))?;
    let _ = status;
    Ok(std::fs::read_to_string(&debug_path).ok())
}

/// Whether the user's fuzzer flags set one of `names` (`-name=V`, `--name V` or `-name V`).
fn sets_flag(args: &[OsString], names: &[&str]) -> bool {
    args.iter().filter_map(|a| a.to_str()).any(|arg| {
        names
            .iter()
            .any(|name| arg == *name || arg.starts_with(&format!("{name}=")))
    })
}

/// `cargo labelfuzz run`: builds the target and fuzzes it, in cargo-fuzz's layout.
pub fn run(
    args: &TargetArgs,
    corpus: Vec<PathBuf>,
    fuzzer_args: &[OsString],
) -> Result<ExitCode, Error> {
    let (project, target) = (FuzzProject::find(&args.location)?, args.target.as_str());
    let exe = build::build(&project, target, &args.build)?;
    let corpus = if corpus.is_empty() {
        vec![project.corpus_dir(target)]
    } else {
        corpus
    };
    // As with cargo-fuzz, the arguments go to the fuzzer as they are: a directory is a corpus, a
    // file an input to run (`cargo labelfuzz run T fuzz/artifacts/T/crash-…` reproduces it).
    // Only a corpus directory that is missing is made.
    if !corpus[0].is_file() {
        create_dir(&corpus[0])?;
    }
    let mut args: Vec<OsString> = Vec::new();
    let own_output = !sets_flag(fuzzer_args, &["-o", "--output"]);
    let state = project.state_dir(target);
    if own_output {
        args.extend(["-o".into(), state.clone().into(), "--grow-corpus".into()]);
    }
    if !sets_flag(
        fuzzer_args,
        &[
            "-artifact_prefix",
            "-exact_artifact_path",
            "--artifact-prefix",
        ],
    ) {
        let artifacts = project.artifacts_dir(target);
        create_dir(&artifacts)?;
        args.push(format!("-artifact_prefix={}/", artifacts.display()).into());
    }
    args.extend(corpus.into_iter().map(OsString::from));
    args.extend(fuzzer_args.iter().cloned());
    let status = Command::new(&exe)
        .args(&args)
        .status()
        .map_err(|e| Error::io("run", &exe, &e))?;
    if own_output {
        for file in crash_files(&state) {
            if let Some(text) = debug_form(&exe, &file.path)? {
                println!(
                    "\nReproducer {}\nOutput of `std::fmt::Debug`:\n\n{text}",
                    file.path.display()
                );
                if let Some(pattern) = file.typed_pattern {
                    println!("Pattern (`_`: any value fails alike, `..`: more may follow):\n\n{pattern}\n");
                }
            }
        }
    }
    Ok(exit_code(status))
}

/// `cargo labelfuzz tmin`: shrinks a crashing input with labelfuzz's reducer and writes it to
/// `fuzz/artifacts/TARGET/minimized-from-NAME`.
pub fn tmin(args: &TargetArgs, file: &Path) -> Result<ExitCode, Error> {
    let (project, target) = (FuzzProject::find(&args.location)?, args.target.as_str());
    if !file.is_file() {
        return Err(Error::new(format!("{}: no such file", file.display())));
    }
    let exe = build::build(&project, target, &args.build)?;
    let scratch = Scratch::new("tmin")?;
    let status = Command::new(&exe)
        .arg("reduce")
        .arg("-o")
        .arg(&scratch.0)
        .arg(file)
        .status()
        .map_err(|e| Error::io("run", &exe, &e))?;
    let reduced = crash_files(&scratch.0);
    let Some(smallest) = reduced
        .iter()
        .filter_map(|file| Some((std::fs::read(&file.path).ok()?, &file.path)))
        .min_by(|a, b| (a.0.len(), &a.0).cmp(&(b.0.len(), &b.0)))
    else {
        eprintln!(
            "cargo labelfuzz: {} does not make '{target}' fail: nothing to minimize",
            file.display()
        );
        return Ok(exit_code(status));
    };
    let artifacts = project.artifacts_dir(target);
    create_dir(&artifacts)?;
    let name = file
        .file_name()
        .map_or_else(|| "input".into(), |n| n.to_string_lossy().into_owned());
    let destination = artifacts.join(format!("minimized-from-{name}"));
    std::fs::write(&destination, &smallest.0).map_err(|e| Error::io("write", &destination, &e))?;
    println!(
        "minimized {} bytes to {}: {}",
        std::fs::metadata(file).map_or(0, |m| m.len()),
        smallest.0.len(),
        destination.display()
    );
    if let Some(text) = debug_form(&exe, &destination)? {
        println!("Output of `std::fmt::Debug`:\n\n{text}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The regular files of `dir`.
fn count_files(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .filter(|e| e.path().is_file())
            .count()
    })
}

/// `cargo labelfuzz cmin`: replaces a corpus by the simplest input of each of its labels.
pub fn cmin(args: &TargetArgs, corpus: Option<PathBuf>) -> Result<ExitCode, Error> {
    let (project, target) = (FuzzProject::find(&args.location)?, args.target.as_str());
    let corpus = corpus.unwrap_or_else(|| project.corpus_dir(target));
    if !corpus.is_dir() {
        return Err(Error::new(format!(
            "{}: no such corpus directory",
            corpus.display()
        )));
    }
    let exe = build::build(&project, target, &args.build)?;
    let mut minimized = corpus.clone().into_os_string();
    minimized.push(".cmin");
    let minimized = PathBuf::from(minimized);
    let _ = std::fs::remove_dir_all(&minimized);
    create_dir(&minimized)?;
    let status = Command::new(&exe)
        .arg("-merge=1")
        .arg(&minimized)
        .arg(&corpus)
        .status()
        .map_err(|e| Error::io("run", &exe, &e))?;
    // A crash in the corpus ends a merge with status 1; anything else is a failed merge, and
    // the corpus is left alone.
    if !matches!(status.code(), Some(0 | 1)) {
        return Err(Error::new(format!(
            "the merge failed ({status}); {} is unchanged",
            corpus.display()
        )));
    }
    let before = count_files(&corpus);
    let mut old = corpus.clone().into_os_string();
    old.push(".cmin-old");
    let old = PathBuf::from(old);
    std::fs::rename(&corpus, &old).map_err(|e| Error::io("move aside", &corpus, &e))?;
    std::fs::rename(&minimized, &corpus).map_err(|e| Error::io("replace", &corpus, &e))?;
    std::fs::remove_dir_all(&old).map_err(|e| Error::io("remove", &old, &e))?;
    println!(
        "minimized {}: {before} inputs to {}",
        corpus.display(),
        count_files(&corpus)
    );
    Ok(ExitCode::SUCCESS)
}

/// Runs the built fuzzer's `subcommand` (`report`, `coverage` or `mine`) on the target's run in
/// `fuzz/target/labelfuzz/state/TARGET/`, with the build `mode` (and `extra` arguments after
/// the run's directory).
fn on_the_run(
    args: &TargetArgs,
    subcommand: &str,
    mode: Mode,
    extra: &[OsString],
) -> Result<ExitCode, Error> {
    let (project, target) = (FuzzProject::find(&args.location)?, args.target.as_str());
    let state = project.state_dir(target);
    if !state.join("summary.json").is_file() {
        return Err(Error::new(format!(
            "no run of '{target}' in {} (cargo labelfuzz run {target} first)",
            state.display()
        )));
    }
    let exe = build::build_for(&project, target, &args.build, mode)?;
    let status = Command::new(&exe)
        .arg(subcommand)
        .arg(&state)
        .args(extra)
        .status()
        .map_err(|e| Error::io("run", &exe, &e))?;
    Ok(exit_code(status))
}

/// `cargo labelfuzz report`: the run's `report.html`.
pub fn report(args: &TargetArgs) -> Result<ExitCode, Error> {
    on_the_run(args, "report", Mode::Fuzz, &[])
}

/// `cargo labelfuzz coverage`: the coverage build replays the run's inputs into
/// `fuzz/target/labelfuzz/state/TARGET/coverage/`.
pub fn coverage(args: &TargetArgs) -> Result<ExitCode, Error> {
    on_the_run(args, "coverage", Mode::Coverage, &[])
}

/// `cargo labelfuzz mine`: the mining build replays the run's corpus and writes the grammar it
/// mined to `fuzz/target/labelfuzz/state/TARGET/mined.json`, which `run TARGET -- --grammar
/// mined` fuzzes with. `miner_args` go to `FUZZER mine` (`--error FUNCTION`, `-o FILE`, ...).
pub fn mine(args: &TargetArgs, miner_args: &[OsString]) -> Result<ExitCode, Error> {
    on_the_run(args, "mine", Mode::Mine, miner_args)
}

/// `cargo labelfuzz fmt`: prints an input as the target sees it.
pub fn fmt(args: &TargetArgs, file: &Path) -> Result<ExitCode, Error> {
    let (project, target) = (FuzzProject::find(&args.location)?, args.target.as_str());
    let bytes = std::fs::read(file).map_err(|e| Error::io("read", file, &e))?;
    let exe = build::build(&project, target, &args.build)?;
    match debug_form(&exe, file)? {
        Some(text) => print!("{text}"),
        // A bytes target sees the bytes themselves.
        None => println!("{}", bytes.escape_ascii()),
    }
    Ok(ExitCode::SUCCESS)
}
