//! Building a fuzz target of an unmodified cargo-fuzz crate against labelfuzz (through
//! `labelfuzz-build`, which the benchmark and the tests use too).

use std::path::PathBuf;

use labelfuzz_build::{BuildOptions as Options, Mode};

use crate::project::FuzzProject;
use crate::{BuildOptions, Error};

impl From<labelfuzz_build::BuildError> for Error {
    fn from(e: labelfuzz_build::BuildError) -> Self {
        Error::new(e.to_string())
    }
}

/// The library's options for `options`, refusing what labelfuzz cannot honour.
fn library_options(
    project: &FuzzProject,
    targets: Vec<String>,
    options: &BuildOptions,
    mode: Mode,
) -> Result<Options, Error> {
    if options.build_std {
        return Err(Error::new(
            "--build-std is not supported: the labelfuzz runtime is built once with the standard \
             library as shipped, and only the target's crates are compiled per project",
        ));
    }
    Ok(Options {
        bins: targets,
        mode,
        instrument: std::env::var("LABELFUZZ_INSTRUMENT").ok(),
        keep_folded_conditions: std::env::var("LABELFUZZ_FOLDED_CONDITIONS")
            .is_ok_and(|v| !v.is_empty() && v != "0"),
        features: options.features.clone(),
        all_features: options.all_features,
        no_default_features: options.no_default_features,
        release: !options.dev,
        sanitizer: options.sanitizer.parse()?,
        // Each build variant gets its own directory under it (the library names them).
        target_root: Some(
            options
                .target_dir
                .clone()
                .unwrap_or_else(|| project.work_dir()),
        ),
    })
}

fn build_as(
    project: &FuzzProject,
    targets: Vec<String>,
    options: &BuildOptions,
    mode: Mode,
) -> Result<Vec<PathBuf>, Error> {
    for target in &targets {
        project.check_target(target)?;
    }
    let options = library_options(project, targets, options, mode)?;
    let built = labelfuzz_build::build(&project.manifest(), &options)?;
    Ok(built.into_iter().map(|b| b.path).collect())
}

/// Builds every target of the project (or the named ones) as `mode` asks, and returns the
/// fuzzers' paths.
pub fn build_all(
    project: &FuzzProject,
    targets: Vec<String>,
    options: &BuildOptions,
    mode: Mode,
) -> Result<Vec<PathBuf>, Error> {
    build_as(project, targets, options, mode)
}

/// Builds `target` and returns the fuzzer's path.
pub fn build(
    project: &FuzzProject,
    target: &str,
    options: &BuildOptions,
) -> Result<PathBuf, Error> {
    one(
        build_as(project, vec![target.into()], options, Mode::Fuzz)?,
        target,
    )
}

/// Builds `target` as another kind of build than the fuzzer (`coverage`, `mine`).
pub fn build_for(
    project: &FuzzProject,
    target: &str,
    options: &BuildOptions,
    mode: Mode,
) -> Result<PathBuf, Error> {
    one(
        build_as(project, vec![target.into()], options, mode)?,
        target,
    )
}

fn one(mut built: Vec<PathBuf>, target: &str) -> Result<PathBuf, Error> {
    built.pop().ok_or_else(|| {
        Error::new(format!(
            "building fuzz target '{target}' produced no binary"
        ))
    })
}
