//! `cargo labelfuzz`: runs an existing cargo-fuzz project with labelfuzz, without editing it.
//!
//! The project's `fuzz/` crate is built unmodified: cargo's `--config` patches crates.io's
//! `libfuzzer-sys` with labelfuzz's stand-in (written into the tool's cache), which provides the same
//! `fuzz_target!` and a `main` that runs labelfuzz. Every crate but the engine gets
//! SanitizerCoverage, `--cfg fuzzing`, debug assertions and overflow checks, as with cargo-fuzz.

mod build;
mod commands;
mod project;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// What went wrong, worded for the user, with the exit status it maps to.
#[derive(Debug)]
pub struct Error {
    message: String,
}

impl Error {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// An I/O failure on `path` while doing `what`.
    pub fn io(what: &str, path: &std::path::Path, e: &std::io::Error) -> Self {
        Self::new(format!("cannot {what} {}: {e}", path.display()))
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Cargo runs `cargo-labelfuzz labelfuzz ARGS`: the first argument names the subcommand.
#[derive(Parser, Debug)]
#[command(name = "cargo", bin_name = "cargo")]
enum Cargo {
    /// Fuzz a cargo-fuzz project with labelfuzz.
    #[command(version, name = "labelfuzz")]
    Labelfuzz(Cli),
}

#[derive(Args, Debug)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where the fuzz crate is: `--fuzz-dir`, or `fuzz/` in this directory or a parent.
#[derive(Args, Debug, Clone)]
pub struct Location {
    /// The cargo-fuzz crate (default: the nearest `fuzz/` directory with a Cargo.toml).
    #[arg(long, value_name = "DIR", global = true)]
    fuzz_dir: Option<PathBuf>,
}

/// How to build a fuzz target: cargo-fuzz's build options, where they apply.
#[derive(Args, Debug, Clone)]
pub struct BuildOptions {
    /// `none` (default) or `address`: AddressSanitizer for Rust, which needs a nightly
    /// toolchain (`rustup toolchain install nightly`).
    #[arg(long, short = 's', value_name = "SANITIZER", default_value = "none")]
    sanitizer: String,
    /// Features of the fuzz crate to enable (comma-separated, as cargo's `--features`).
    #[arg(long = "features", value_name = "FEATURES", value_delimiter = ',')]
    features: Vec<String>,
    /// Build with the fuzz crate's default features off.
    #[arg(long)]
    no_default_features: bool,
    /// Build with every feature of the fuzz crate on.
    #[arg(long)]
    all_features: bool,
    /// The dev profile instead of release (`-O`/`--release`, the default, is accepted).
    #[arg(long, short = 'D')]
    dev: bool,
    /// Release profile (the default; accepted for cargo-fuzz's command lines).
    #[arg(long, short = 'O', conflicts_with = "dev")]
    release: bool,
    /// Debug assertions and overflow checks: always on in labelfuzz builds of the target's
    /// crates (accepted for cargo-fuzz's command lines).
    #[arg(long, short = 'a')]
    debug_assertions: bool,
    /// Where the fuzz builds go, one cargo target directory for each kind of build under it
    /// (default `fuzz/target/labelfuzz`).
    #[arg(long, value_name = "DIR")]
    target_dir: Option<PathBuf>,
    /// Not supported (the runtime is built once with the shipped standard library); refused
    /// with the reason.
    #[arg(long)]
    build_std: bool,
}

/// The fuzz target a command works on, and how to build it.
#[derive(Args, Debug, Clone)]
pub struct TargetArgs {
    #[command(flatten)]
    location: Location,
    #[command(flatten)]
    build: BuildOptions,
    /// The fuzz target (a binary of the fuzz crate).
    target: String,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the fuzz targets.
    List(Location),
    /// Create `fuzz/` with one target, as `cargo fuzz init` does.
    Init {
        #[command(flatten)]
        location: Location,
        /// The first target's name.
        #[arg(long, short = 't', default_value = "fuzz_target_1")]
        target: String,
    },
    /// Add a new fuzz target to `fuzz/`.
    Add {
        #[command(flatten)]
        location: Location,
        /// The new target's name.
        target: String,
    },
    /// Build one fuzz target, or all of them.
    Build {
        #[command(flatten)]
        location: Location,
        #[command(flatten)]
        build: BuildOptions,
        /// The source-based coverage build instead of the fuzz build (what `coverage` runs).
        #[arg(long, conflicts_with = "mine")]
        coverage: bool,
        /// The mining build instead of the fuzz build (what `mine` runs).
        #[arg(long)]
        mine: bool,
        /// The target (default: every target).
        target: Option<String>,
    },
    /// Fuzz a target. Corpus in `fuzz/corpus/TARGET/` (grown in place), reproducers in
    /// `fuzz/artifacts/TARGET/`, labelfuzz's own state in `fuzz/target/labelfuzz/state/TARGET/`.
    Run {
        #[command(flatten)]
        target: TargetArgs,
        /// Corpus directories (default `fuzz/corpus/TARGET`).
        corpus: Vec<PathBuf>,
        /// Flags for the fuzzer after `--`: labelfuzz's or libFuzzer's (`-runs=N`, `-dict=F`, ...).
        #[arg(last = true)]
        fuzzer_args: Vec<OsString>,
    },
    /// Shrink a crashing input to the smallest one that still fails the same way.
    Tmin {
        #[command(flatten)]
        target: TargetArgs,
        /// The crashing input.
        file: PathBuf,
    },
    /// Minimize a corpus in place: keep the simplest input of every label.
    Cmin {
        #[command(flatten)]
        target: TargetArgs,
        /// The corpus (default `fuzz/corpus/TARGET`).
        corpus: Option<PathBuf>,
    },
    /// Write `fuzz/target/labelfuzz/state/TARGET/report.html`: plots, crash labels and corpus of the run.
    Report {
        #[command(flatten)]
        target: TargetArgs,
    },
    /// Source coverage of a run: build the target with source-based coverage, replay
    /// `fuzz/target/labelfuzz/state/TARGET/` (corpus and reproducers) and write llvm-cov's HTML report and a
    /// summary into its `coverage/`.
    Coverage {
        #[command(flatten)]
        target: TargetArgs,
    },
    /// Mine a grammar from the target's parser: build it with function-entry and load
    /// callbacks, replay the run's corpus (`fuzz/target/labelfuzz/state/TARGET/`) and write
    /// the grammar to `mined.json` there; `run TARGET -- --grammar mined` then fuzzes with it.
    Mine {
        #[command(flatten)]
        target: TargetArgs,
        /// Flags for `FUZZER mine` after `--` (`--error FUNCTION`: inputs that reach it are
        /// invalid; `-o FILE`; `--precision N`).
        #[arg(last = true)]
        miner_args: Vec<OsString>,
    },
    /// Print an input as the target sees it (its `Debug` form for an `Arbitrary` target).
    Fmt {
        #[command(flatten)]
        target: TargetArgs,
        /// The input file.
        file: PathBuf,
    },
}

fn run(command: Command) -> Result<ExitCode, Error> {
    match command {
        Command::List(location) => {
            for target in project::FuzzProject::find(&location)?.targets()? {
                println!("{target}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Init { location, target } => {
            project::init(&location, &target)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Add { location, target } => {
            project::FuzzProject::find(&location)?.add_target(&target)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Build {
            location,
            build,
            coverage,
            mine,
            target,
        } => {
            let project = project::FuzzProject::find(&location)?;
            let targets: Vec<String> = target.into_iter().collect();
            let mode = match (coverage, mine) {
                (true, _) => labelfuzz_build::Mode::Coverage,
                (_, true) => labelfuzz_build::Mode::Mine,
                _ => labelfuzz_build::Mode::Fuzz,
            };
            for exe in build::build_all(&project, targets, &build, mode)? {
                println!("{}", exe.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Run {
            target,
            corpus,
            fuzzer_args,
        } => commands::run(&target, corpus, &fuzzer_args),
        Command::Tmin { target, file } => commands::tmin(&target, &file),
        Command::Cmin { target, corpus } => commands::cmin(&target, corpus),
        Command::Coverage { target } => commands::coverage(&target),
        Command::Report { target } => commands::report(&target),
        Command::Mine { target, miner_args } => commands::mine(&target, &miner_args),
        Command::Fmt { target, file } => commands::fmt(&target, &file),
    }
}

fn main() -> ExitCode {
    let Cargo::Labelfuzz(cli) = Cargo::parse();
    match run(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("cargo labelfuzz: error: {e}");
            ExitCode::from(2)
        }
    }
}
