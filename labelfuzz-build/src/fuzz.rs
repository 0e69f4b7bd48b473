//! Building a fuzz crate: the user's crates instrumented by the wrapper, the runtime linked by
//! `labelfuzz-sys`, and for cargo-fuzz projects crates.io's `libfuzzer-sys` replaced by the
//! stand-in, with the project's files left as they were.

use std::path::{Path, PathBuf};
use std::process::Command;

use cargo_metadata::{Message, MetadataCommand, TargetKind};

use crate::glue::{stand_in_patch, Glue, LibfuzzerSys};
use crate::lockfile::LockGuard;
use crate::runtime::Runtime;
use crate::BuildError;

/// Which build of the target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// SanitizerCoverage: the fuzzer.
    #[default]
    Fuzz,
    /// rustc's source-based coverage: the build `FUZZER coverage OUT` replays through.
    Coverage,
    /// Function entries and loads recorded: the build `FUZZER mine` mines a grammar with.
    Mine,
}

/// Which sanitizer the target's crates are built with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sanitizer {
    /// None (stable Rust).
    #[default]
    None,
    /// AddressSanitizer (`-Zsanitizer=address`, nightly).
    Address,
}

impl std::str::FromStr for Sanitizer {
    type Err = BuildError;

    fn from_str(name: &str) -> Result<Self, BuildError> {
        match name {
            "none" => Ok(Self::None),
            "address" => Ok(Self::Address),
            other => Err(BuildError::Project(format!(
                "--sanitizer {other}: labelfuzz builds with `none` or `address` (memory, thread \
                 and leak sanitizers report through runtimes labelfuzz does not read)"
            ))),
        }
    }
}

/// How to build a fuzz crate (cargo-fuzz's build options, where they apply).
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// The binaries to build; empty for all of them.
    pub bins: Vec<String>,
    /// The fuzz build or the coverage build.
    pub mode: Mode,
    /// `LABELFUZZ_INSTRUMENT`: the crates to instrument besides local ones (`None`: every crate).
    pub instrument: Option<String>,
    /// `--features`.
    pub features: Vec<String>,
    /// `--all-features`.
    pub all_features: bool,
    /// `--no-default-features`.
    pub no_default_features: bool,
    /// Release profile (cargo-fuzz's default, `-O`); `false` is `--dev`.
    pub release: bool,
    /// The sanitizer.
    pub sanitizer: Sanitizer,
    /// The directory under which each build variant (fuzz or coverage build, sanitizer,
    /// profile, instrument list) gets its own cargo target directory (default: `labelfuzz/`
    /// inside the crate's own target directory, where the project's ignore rules already cover
    /// it).
    pub target_root: Option<PathBuf>,
    /// Keeps the compiler's folding of conditions (`LABELFUZZ_FOLDED_CONDITIONS=1`, which the
    /// environment can also set): a build of its own, for measuring what splitting them buys.
    pub keep_folded_conditions: bool,
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self {
            bins: Vec::new(),
            mode: Mode::Fuzz,
            instrument: None,
            features: Vec::new(),
            all_features: false,
            no_default_features: false,
            release: true,
            sanitizer: Sanitizer::None,
            target_root: None,
            keep_folded_conditions: false,
        }
    }
}

/// A built fuzz target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Built {
    /// The binary's name.
    pub name: String,
    /// Its path.
    pub path: PathBuf,
}

/// What `cargo metadata --no-deps` says of the crate to build.
struct CrateFacts {
    workspace_root: PathBuf,
    target_directory: PathBuf,
    /// Its `libfuzzer-sys` dependency (a cargo-fuzz crate): what it asks for, and from where.
    libfuzzer_sys: Option<LibfuzzerSys>,
}

fn crate_facts(manifest: &Path) -> Result<CrateFacts, BuildError> {
    let metadata = MetadataCommand::new()
        .manifest_path(manifest)
        .no_deps()
        .current_dir(manifest.parent().unwrap_or(Path::new(".")))
        .exec()
        .map_err(|e| BuildError::Metadata(e.to_string()))?;
    let package = metadata
        .packages
        .iter()
        .find(|p| p.manifest_path.as_std_path() == manifest)
        .ok_or_else(|| {
            BuildError::Metadata(format!("no package with manifest {}", manifest.display()))
        })?;
    let libfuzzer_sys = package
        .dependencies
        .iter()
        .filter(|dep| dep.name == "libfuzzer-sys")
        .find_map(LibfuzzerSys::from_dependency);
    Ok(CrateFacts {
        workspace_root: metadata.workspace_root.into_std_path_buf(),
        target_directory: metadata.target_directory.into_std_path_buf(),
        libfuzzer_sys,
    })
}

/// The host triple of the toolchain that builds in `dir` (its `rust-toolchain.toml` counts).
fn host_triple(dir: &Path, toolchain: Option<&str>) -> Result<String, BuildError> {
    let mut command = Command::new("rustc");
    command.current_dir(dir).arg("-vV");
    if let Some(toolchain) = toolchain {
        command.env("RUSTUP_TOOLCHAIN", toolchain);
    }
    let out = crate::error::run(&mut command, "rustc -vV")?;
    String::from_utf8_lossy(&out)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .map(str::to_string)
        .ok_or_else(|| BuildError::tool("rustc -vV", "no host line"))
}

fn nightly_available(dir: &Path) -> bool {
    Command::new("rustc")
        .current_dir(dir)
        .env("RUSTUP_TOOLCHAIN", "nightly")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The target-directory name of a build variant: each has its own, since what the wrapper adds
/// is not part of cargo's fingerprint.
fn variant(options: &BuildOptions) -> String {
    let mut name = String::from(match options.mode {
        Mode::Fuzz => "fuzz",
        Mode::Coverage => "coverage",
        Mode::Mine => "mine",
    });
    if options.sanitizer == Sanitizer::Address {
        name.push_str("-asan");
    }
    if !options.release {
        name.push_str("-dev");
    }
    if options.keep_folded_conditions {
        name.push_str("-folded");
    }
    if let Some(list) = options
        .instrument
        .as_deref()
        .filter(|l| !l.is_empty() && *l != "all")
    {
        name.push('-');
        name.extend(list.chars().map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        }));
    }
    name
}

/// What one cargo build made.
#[derive(Default)]
struct Outcome {
    /// The binaries.
    built: Vec<Built>,
    /// The crates' libraries (rlibs), whose instrumented code the binaries link.
    libraries: Vec<PathBuf>,
    /// Whether a libfuzzer-sys other than the stand-in was compiled.
    foreign_libfuzzer: bool,
}

/// One fuzz build, worked out before cargo runs: where, with which toolchain, for which host,
/// and with which stand-in patched in.
struct Plan<'a> {
    manifest: &'a Path,
    dir: PathBuf,
    options: &'a BuildOptions,
    glue: Glue,
    runtime: Runtime,
    facts: CrateFacts,
    target_dir: PathBuf,
    toolchain: Option<&'static str>,
    host: String,
    /// The stand-in's directory and the `--config` value that patches it in.
    stand_in: Option<(PathBuf, String)>,
}

impl<'a> Plan<'a> {
    fn new(manifest: &'a Path, options: &'a BuildOptions) -> Result<Self, BuildError> {
        let dir = manifest.parent().unwrap_or(Path::new(".")).to_path_buf();
        let glue = Glue::ensure()?;
        let runtime = Runtime::ensure()?;
        let facts = crate_facts(manifest)?;
        let target_dir = options
            .target_root
            .clone()
            .unwrap_or_else(|| facts.target_directory.join("labelfuzz"))
            .join(variant(options));
        let toolchain = match options.sanitizer {
            Sanitizer::Address if !nightly_available(&dir) => {
                return Err(BuildError::Project(
                    "--sanitizer address needs a nightly toolchain (rustup toolchain install \
                     nightly)"
                        .into(),
                ))
            }
            Sanitizer::Address => Some("nightly"),
            Sanitizer::None => None,
        };
        let host = host_triple(&dir, toolchain)?;
        let stand_in = match &facts.libfuzzer_sys {
            None => None,
            Some(dependency) => Some(stand_in_patch(&glue, dependency)?),
        };
        Ok(Self {
            manifest,
            dir,
            options,
            glue,
            runtime,
            facts,
            target_dir,
            toolchain,
            host,
            stand_in,
        })
    }

    /// A cargo command in the crate's directory, for its manifest, with the patch and toolchain.
    fn cargo(&self, subcommand: &str) -> Command {
        let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        command
            .current_dir(&self.dir)
            .arg(subcommand)
            .arg("--manifest-path")
            .arg(self.manifest);
        if let Some((_, patch)) = &self.stand_in {
            command.args(["--config", patch]);
        }
        if let Some(toolchain) = self.toolchain {
            command.env("RUSTUP_TOOLCHAIN", toolchain);
        }
        command
    }

    /// The project's lock file may pin crates.io's (or a git repository's) libfuzzer-sys, which
    /// would keep the patch out of the graph: re-resolve that one package.
    fn resolve_stand_in(&self, lock_path: &Path) -> Result<(), BuildError> {
        if self.stand_in.is_some() && LockGuard::mentions(lock_path, "libfuzzer-sys") {
            let mut update = self.cargo("update");
            update.args(["-q", "-p", "libfuzzer-sys"]);
            crate::error::run(
                &mut update,
                "resolving the libfuzzer-sys stand-in (cargo update)",
            )?;
        }
        Ok(())
    }

    /// `cargo build` with the options, the wrapper and the runtime.
    fn build_command(&self) -> Command {
        let options = self.options;
        let mut command = self.cargo("build");
        command
            .args([
                "--message-format=json-render-diagnostics",
                "--target",
                &self.host,
            ])
            .arg("--target-dir")
            .arg(&self.target_dir);
        if options.release {
            command.arg("--release");
        }
        if options.bins.is_empty() {
            command.arg("--bins");
        }
        for bin in &options.bins {
            command.args(["--bin", bin]);
        }
        if !options.features.is_empty() {
            command.args(["--features", &options.features.join(",")]);
        }
        if options.all_features {
            command.arg("--all-features");
        }
        if options.no_default_features {
            command.arg("--no-default-features");
        }
        let mut rustflags = std::env::var("RUSTFLAGS").unwrap_or_default();
        // Cargo does not fingerprint the wrapper: a cfg naming the sources' version does, so a
        // new instrumentation rule rebuilds every crate once.
        rustflags.push_str(&format!(
            " --cfg labelfuzz_build_{}",
            crate::sources::KEY.replace(['.', '-'], "_")
        ));
        if options.sanitizer == Sanitizer::Address {
            rustflags.push_str(" -Zsanitizer=address");
        }
        let mode = match options.mode {
            Mode::Fuzz => "sancov",
            Mode::Coverage => "coverage",
            Mode::Mine => "mine",
        };
        command
            .env("RUSTFLAGS", rustflags.trim())
            .env("RUSTC_WRAPPER", &self.glue.wrapper)
            .env("LABELFUZZ_RUNTIME", &self.runtime.dir)
            .env("LABELFUZZ_MODE", mode)
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_TARGET_DIR");
        match &options.instrument {
            Some(list) => command.env("LABELFUZZ_INSTRUMENT", list),
            None => command.env_remove("LABELFUZZ_INSTRUMENT"),
        };
        if options.keep_folded_conditions {
            command.env("LABELFUZZ_FOLDED_CONDITIONS", "1");
        }
        command
    }

    /// Runs `command`, passing cargo's diagnostics on; what it built.
    fn run(&self, command: Command) -> Result<Outcome, BuildError> {
        let mut outcome = Outcome::default();
        let status = crate::cargo_messages::stream(command, "cargo build", |message| {
            if let Message::CompilerArtifact(artifact) = message {
                if artifact.target.name == "libfuzzer_sys" {
                    let manifest = artifact.manifest_path.as_std_path();
                    outcome.foreign_libfuzzer |= self
                        .stand_in
                        .as_ref()
                        .is_none_or(|(dir, _)| !manifest.starts_with(dir));
                }
                let rlibs = artifact
                    .filenames
                    .iter()
                    .filter(|file| file.extension() == Some("rlib"));
                outcome
                    .libraries
                    .extend(rlibs.map(|file| file.clone().into_std_path_buf()));
                let is_bin = artifact.target.kind.contains(&TargetKind::Bin);
                if let Some(path) = artifact.executable.as_ref().filter(|_| is_bin) {
                    outcome.built.push(Built {
                        name: artifact.target.name.clone(),
                        path: path.clone().into_std_path_buf(),
                    });
                }
            }
            false
        })?;
        if !status.success() {
            return Err(BuildError::tool(
                format!("building {}", self.manifest.display()),
                format!("cargo exited with {status} (its messages are above)"),
            ));
        }
        Ok(outcome)
    }
}

/// Builds the fuzz crate whose manifest is `manifest` and returns its fuzz binaries.
pub fn build(manifest: &Path, options: &BuildOptions) -> Result<Vec<Built>, BuildError> {
    if !manifest.is_file() {
        return Err(BuildError::Project(format!(
            "{} does not exist",
            manifest.display()
        )));
    }
    let manifest = &manifest
        .canonicalize()
        .map_err(|e| BuildError::io("resolve", manifest, e))?;
    let plan = Plan::new(manifest, options)?;
    // The patched build may rewrite the project's lock file: it is put back byte for byte.
    let lock_path = plan.facts.workspace_root.join("Cargo.lock");
    let _guard = LockGuard::take(&lock_path, &plan.target_dir.join("Cargo.lock.saved"))?;
    plan.resolve_stand_in(&lock_path)?;
    let Outcome {
        built,
        libraries,
        foreign_libfuzzer,
    } = plan.run(plan.build_command())?;
    if foreign_libfuzzer {
        // Never hand back a libFuzzer binary as if it were ours.
        return Err(BuildError::Project(
            "the build used a libfuzzer-sys other than labelfuzz's stand-in (is it vendored, or \
             patched by the project itself?): nothing was built for labelfuzz"
                .into(),
        ));
    }
    if built.is_empty() {
        return Err(BuildError::Project(format!(
            "{} built no binary (a fuzz crate has a bin per target, each using fuzz_target!)",
            manifest.display()
        )));
    }
    if options.mode == Mode::Fuzz {
        crate::dictionary::embed(&built, &libraries);
    }
    Ok(built)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_build_variant_has_its_own_target_directory() {
        let mut options = BuildOptions::default();
        assert_eq!(variant(&options), "fuzz");
        options.mode = Mode::Coverage;
        assert_eq!(variant(&options), "coverage");
        options.mode = Mode::Fuzz;
        options.sanitizer = Sanitizer::Address;
        options.release = false;
        options.instrument = Some("a-b,c".into());
        assert_eq!(variant(&options), "fuzz-asan-dev-a_b_c");
        options.instrument = Some("all".into());
        assert_eq!(variant(&options), "fuzz-asan-dev");
        options.keep_folded_conditions = true;
        assert_eq!(variant(&options), "fuzz-asan-dev-folded");
    }

    #[test]
    fn sanitizer_names_are_checked() {
        assert_eq!("none".parse::<Sanitizer>().unwrap(), Sanitizer::None);
        assert_eq!("address".parse::<Sanitizer>().unwrap(), Sanitizer::Address);
        let error = "memory".parse::<Sanitizer>().unwrap_err().to_string();
        assert!(error.contains("--sanitizer memory"), "{error}");
    }
}
