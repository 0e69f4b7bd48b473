//! The benchmark's targets and the five builds of each: labelfuzz, libFuzzer, AFL++ (plain and
//! CmpLog) and the source-based coverage build every corpus is measured on.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::ablation::Lever;
use crate::util::{check, host_triple, root, BuildLock};

/// How a target is built.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A C library built from registry sources by `fuzzers/<name>/build.sh`.
    Native,
    /// A Rust crate under `bench/libfuzzer` (its labelfuzz twin in `fuzzers/<name>`).
    Rust,
}

/// One benchmark target.
pub struct Target {
    /// Name under `fuzzers/`.
    pub name: &'static str,
    pub kind: Kind,
    /// Whether all three fuzzers start from the seeds the labelfuzz build leaves beside it
    /// (formats whose checksummed headers no fuzzer gets through from nothing in minutes).
    pub needs_seeds: bool,
    /// Path fragments of the harness's own sources: the yardstick counts library code only.
    pub harness: &'static [&'static str],
}

/// Every target of `cargo make bench`, in table order.
pub const TARGETS: &[Target] = &[
    Target {
        name: "zlib",
        kind: Kind::Native,
        needs_seeds: false,
        harness: &["/fuzzers/zlib/"],
    },
    Target {
        name: "libpng",
        kind: Kind::Native,
        needs_seeds: true,
        harness: &["/fuzzers/libpng/"],
    },
    Target {
        name: "sqlite",
        kind: Kind::Native,
        needs_seeds: false,
        harness: &["/fuzzers/sqlite/"],
    },
    Target {
        name: "lcms",
        kind: Kind::Native,
        needs_seeds: true,
        harness: &["/fuzzers/lcms/"],
    },
    Target {
        name: "json",
        kind: Kind::Rust,
        needs_seeds: false,
        harness: &["/bench/libfuzzer/", "/libfuzzer-sys-"],
    },
    Target {
        name: "lz4",
        kind: Kind::Native,
        needs_seeds: false,
        harness: &["/ossfuzz/"],
    },
    Target {
        name: "xz",
        kind: Kind::Native,
        needs_seeds: false,
        harness: &["/tests/ossfuzz/"],
    },
    Target {
        name: "libdeflate",
        kind: Kind::Native,
        needs_seeds: false,
        harness: &["/scripts/libFuzzer/"],
    },
];

/// The binaries of one target.
pub struct Builds {
    pub labelfuzz: PathBuf,
    pub libfuzzer: PathBuf,
    pub afl: PathBuf,
    pub afl_cmplog: PathBuf,
    /// Source-based coverage build, linked with `bench/coverage/replay_main.c`.
    pub coverage: PathBuf,
    /// Seed files all three fuzzers start from (empty: from nothing).
    pub seeds: Vec<PathBuf>,
    /// AFL++'s directory (afl-fuzz).
    pub aflpp: PathBuf,
    /// labelfuzz built with a build-time lever flipped ([`Lever::build_variable`]), for the
    /// ablation runs that ask for it.
    pub labelfuzz_flipped: Vec<(Lever, PathBuf)>,
}

impl Builds {
    /// The labelfuzz binary `lever` runs (the standard one for a lever that is a flag).
    pub fn labelfuzz_for(&self, lever: Option<Lever>) -> &Path {
        self.labelfuzz_flipped
            .iter()
            .find(|(l, _)| Some(*l) == lever)
            .map_or(&self.labelfuzz, |(_, path)| path)
    }
}

impl Target {
    /// Builds all five binaries (each build script skips what is up to date), one bench at a
    /// time, and labelfuzz once more for each of `levers` that is part of the build.
    pub fn build(&self, levers: &[Lever]) -> Builds {
        let _one_at_a_time = BuildLock::acquire();
        eprintln!("bench: building {} five ways", self.name);
        let builds = match self.kind {
            Kind::Native => Builds {
                labelfuzz: build_native(self.name, None),
                libfuzzer: build_native(self.name, Some("libfuzzer")),
                afl: build_native(self.name, Some("afl")),
                afl_cmplog: build_native(self.name, Some("afl-cmplog")),
                coverage: self.coverage_build(),
                seeds: Vec::new(),
                aflpp: install_aflpp(),
                labelfuzz_flipped: Vec::new(),
            },
            Kind::Rust => Builds {
                labelfuzz: build_labelfuzz(self.name, None),
                libfuzzer: build_rust_twin(RustBuild::Libfuzzer).join(self.name),
                afl: build_rust_twin(RustBuild::Afl { cmplog: false }).join(self.name),
                afl_cmplog: build_rust_twin(RustBuild::Afl { cmplog: true }).join(self.name),
                coverage: self.coverage_build(),
                seeds: Vec::new(),
                aflpp: install_aflpp(),
                labelfuzz_flipped: Vec::new(),
            },
        };
        let labelfuzz_flipped = levers
            .iter()
            .filter_map(|&lever| {
                let variable = lever.build_variable()?;
                let path = match self.kind {
                    Kind::Native => build_native_with(self.name, None, Some(variable)),
                    Kind::Rust => build_with(
                        self.name,
                        labelfuzz_build::BuildOptions {
                            keep_folded_conditions: true,
                            ..labelfuzz_build::BuildOptions::default()
                        },
                    ),
                };
                Some((lever, path))
            })
            .collect();
        let seeds = if self.needs_seeds {
            let dir = builds.labelfuzz.with_file_name("seeds");
            let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .flatten()
                .map(|e| e.path())
                .collect();
            files.sort();
            files
        } else {
            Vec::new()
        };
        Builds {
            seeds,
            labelfuzz_flipped,
            ..builds
        }
    }

    /// Builds the source-based coverage build alone (the caller holds the [`BuildLock`]).
    pub fn coverage_build(&self) -> PathBuf {
        match self.kind {
            Kind::Native => build_native(self.name, Some("coverage")),
            Kind::Rust => build_rust_twin(RustBuild::Coverage).join(self.name),
        }
    }

    /// Whether a source file belongs to the harness rather than the library.
    pub fn is_harness(&self, file: &str) -> bool {
        file.contains("/bench/coverage/") || self.harness.iter().any(|h| file.contains(h))
    }
}

/// Builds a labelfuzz fuzzer from `fuzzers/<name>` (through `labelfuzz-build`, as `cargo
/// labelfuzz build` does), into the shared `target/fuzz`.
pub fn build_labelfuzz(name: &str, instrument: Option<&str>) -> PathBuf {
    build_with(
        name,
        labelfuzz_build::BuildOptions {
            instrument: instrument.map(str::to_string),
            ..labelfuzz_build::BuildOptions::default()
        },
    )
}

/// Builds `fuzzers/<name>` the way `cargo labelfuzz build` does in `mode` (a mining build with
/// [`labelfuzz_build::Mode::Mine`]); returns the binary.
pub fn build_labelfuzz_as(name: &str, mode: labelfuzz_build::Mode) -> PathBuf {
    build_with(
        name,
        labelfuzz_build::BuildOptions {
            mode,
            ..labelfuzz_build::BuildOptions::default()
        },
    )
}

fn build_with(name: &str, options: labelfuzz_build::BuildOptions) -> PathBuf {
    let _one_at_a_time = BuildLock::acquire();
    let options = labelfuzz_build::BuildOptions {
        target_root: Some(root().join("target/fuzz")),
        ..options
    };
    let manifest = root().join("fuzzers").join(name).join("Cargo.toml");
    match labelfuzz_build::build(&manifest, &options) {
        Ok(mut built) => built.pop().expect("a fuzz crate builds a binary").path,
        Err(e) => panic!("building labelfuzz {name}: {e}"),
    }
}

/// Builds a native C target with `fuzzers/<name>/build.sh` for labelfuzz (`None`) or a
/// baseline (`NATIVE_BASELINE`); returns the binary.
pub fn build_native(name: &str, baseline: Option<&str>) -> PathBuf {
    build_native_with(name, baseline, None)
}

/// As [`build_native`], with `variable` set to 1 in the build's environment if given.
fn build_native_with(name: &str, baseline: Option<&str>, variable: Option<&str>) -> PathBuf {
    let _one_at_a_time = BuildLock::acquire();
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("fuzzers").join(name).join("build.sh"))
        .stderr(Stdio::inherit());
    if let Some(baseline) = baseline {
        cmd.env("NATIVE_BASELINE", baseline);
    }
    if let Some(variable) = variable {
        cmd.env(variable, "1");
    }
    let out = cmd.output().expect("bash runs");
    let what = format!("building {name} ({})", baseline.unwrap_or("labelfuzz"));
    check(out.status, &what);
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// The ways `bench/libfuzzer` (the Rust targets' twins) is built.
#[derive(Clone, Copy)]
pub enum RustBuild {
    /// cargo-fuzz's instrumentation with libFuzzer linked in.
    Libfuzzer,
    /// cargo-afl's instrumentation (pc-guard edges; with `cmplog`, comparisons too, which
    /// afl-compiler-rt logs when afl-fuzz runs the binary as its CmpLog child) linked with
    /// AFL++'s runtime and libFuzzer driver.
    Afl { cmplog: bool },
    /// `-C instrument-coverage`, linked with the replayer.
    Coverage,
}

/// Builds the Rust twins one way; returns the directory holding the binaries.
pub fn build_rust_twin(how: RustBuild) -> PathBuf {
    let _one_at_a_time = BuildLock::acquire();
    let common = ["--cfg fuzzing", "-Cdebug-assertions", "-Coverflow-checks"].join(" ");
    let (dir, flags, default_features) = match how {
        RustBuild::Libfuzzer => (
            "bench-libfuzzer",
            format!(
                "{common} -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
                 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
                 -Cllvm-args=-sanitizer-coverage-pc-table \
                 -Cllvm-args=-sanitizer-coverage-trace-compares"
            ),
            true,
        ),
        RustBuild::Afl { cmplog } => {
            let afl = install_aflpp();
            let compares = if cmplog {
                " -Cllvm-args=-sanitizer-coverage-trace-compares"
            } else {
                ""
            };
            (
                if cmplog {
                    "bench-afl-cmplog"
                } else {
                    "bench-afl"
                },
                format!(
                    "{common} -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=3 \
                     -Cllvm-args=-sanitizer-coverage-trace-pc-guard \
                     -Cllvm-args=-sanitizer-coverage-prune-blocks=0{compares} \
                     -Clink-arg={0}/libAFLDriver.a -Clink-arg={0}/afl-compiler-rt.o",
                    afl.display()
                ),
                false,
            )
        }
        RustBuild::Coverage => {
            let object = root().join("target/bench-replay_main.o");
            let status = Command::new("/usr/lib/llvm-19/bin/clang")
                .args(["-O1", "-c"])
                .arg(root().join("bench/coverage/replay_main.c"))
                .arg("-o")
                .arg(&object)
                .status()
                .expect("clang-19 runs");
            check(status, "compiling the coverage replayer");
            (
                "bench-coverage",
                format!(
                    "{common} -Cinstrument-coverage -Clink-arg={}",
                    object.display()
                ),
                false,
            )
        }
    };
    let target_dir = root().join("target").join(dir);
    let host = host_triple();
    let mut cmd = Command::new("cargo");
    // With an explicit --target, RUSTFLAGS stay off build scripts and proc-macros (as in
    // cargo-fuzz), which must not be instrumented.
    cmd.args(["build", "--release", "--bins", "-j2", "--target", &host])
        .current_dir(root().join("bench/libfuzzer"))
        .env("RUSTFLAGS", flags)
        .env("CARGO_TARGET_DIR", &target_dir)
        .env_remove("RUSTC_WRAPPER");
    if !default_features {
        cmd.arg("--no-default-features");
    }
    if Path::new("/usr/bin/clang++-19").exists() {
        cmd.env("CXX", "clang++-19").env("CC", "clang-19");
    }
    check(cmd.status().expect("cargo runs"), "building the Rust twins");
    target_dir.join(host).join("release")
}

/// AFL++ 4.40c built from registry sources (`scripts/install-aflpp.sh`); its directory.
pub fn install_aflpp() -> PathBuf {
    let _one_at_a_time = BuildLock::acquire();
    let out = Command::new("bash")
        .arg(root().join("scripts/install-aflpp.sh"))
        .stderr(Stdio::inherit())
        .output()
        .expect("bash runs");
    check(out.status, "building AFL++");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}
