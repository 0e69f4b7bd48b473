//! Building a fuzz target of an unmodified cargo-fuzz crate against labelfuzz.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::project::FuzzProject;
use crate::{BuildOptions, Error};

/// labelfuzz's source tree: `LABELFUZZ_HOME`, else the checkout this tool was built from (it
/// is installed with `cargo install --path cargo-labelfuzz`, and reads the build script and the
/// libfuzzer-sys stand-in from there).
pub fn labelfuzz_home() -> PathBuf {
    std::env::var_os("LABELFUZZ_HOME").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join(".."),
        PathBuf::from,
    )
}

/// Puts a file back as it was when dropped: the patched build rewrites `fuzz/Cargo.lock`, and
/// the project must stay exactly as cargo-fuzz left it.
struct RestoreOnDrop {
    path: PathBuf,
    contents: Option<Vec<u8>>,
}

impl RestoreOnDrop {
    fn new(path: PathBuf) -> Self {
        let contents = std::fs::read(&path).ok();
        Self { path, contents }
    }
}

impl Drop for RestoreOnDrop {
    fn drop(&mut self) {
        let restored = match &self.contents {
            Some(contents) => std::fs::write(&self.path, contents),
            None => match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                other => other,
            },
        };
        if let Err(e) = restored {
            eprintln!(
                "cargo labelfuzz: warning: could not restore {}: {e}",
                self.path.display()
            );
        }
    }
}

/// Builds `target` and returns the fuzzer's path.
pub fn build(
    project: &FuzzProject,
    target: &str,
    options: &BuildOptions,
) -> Result<PathBuf, Error> {
    build_as(project, target, options, false)
}

/// Builds `target` with source-based coverage instead of SanitizerCoverage (for `coverage`).
pub fn build_for_coverage(
    project: &FuzzProject,
    target: &str,
    options: &BuildOptions,
) -> Result<PathBuf, Error> {
    build_as(project, target, options, true)
}

fn build_as(
    project: &FuzzProject,
    target: &str,
    options: &BuildOptions,
    coverage: bool,
) -> Result<PathBuf, Error> {
    project.check_target(target)?;
    let home = labelfuzz_home();
    let script = home.join("scripts/build-fuzzer.sh");
    let stand_in = home.join("compat/libfuzzer-sys");
    if !script.is_file() || !stand_in.join("Cargo.toml").is_file() {
        return Err(Error::new(format!(
            "labelfuzz's sources are not at {} (set LABELFUZZ_HOME to a labelfuzz checkout)",
            home.display()
        )));
    }
    let stand_in = stand_in
        .canonicalize()
        .map_err(|e| Error::io("resolve", &stand_in, &e))?;
    let mut command = Command::new("bash");
    command
        .arg(&script)
        .arg(&project.dir)
        .env("LABELFUZZ_BIN", target)
        .env(
            "LABELFUZZ_CARGO_CONFIG",
            format!(
                "patch.crates-io.libfuzzer-sys.path=\"{}\"",
                stand_in.display()
            ),
        );
    if coverage {
        command.env("LABELFUZZ_COVERAGE", "1");
    }
    match options.sanitizer.as_str() {
        "none" => {}
        "address" => {
            let nightly = Command::new("rustup")
                .args(["run", "nightly", "rustc", "-V"])
                .output()
                .is_ok_and(|o| o.status.success());
            if !nightly {
                return Err(Error::new(
                    "--sanitizer address needs a nightly toolchain (rustup toolchain install \
                     nightly)",
                ));
            }
            let flags = std::env::var("RUSTFLAGS").unwrap_or_default();
            command
                .env("RUSTUP_TOOLCHAIN", "nightly")
                .env("RUSTFLAGS", format!("{flags} -Zsanitizer=address"))
                .env(
                    "LABELFUZZ_TARGET_DIR",
                    project.dir.join("target/labelfuzz-asan"),
                );
        }
        other => {
            return Err(Error::new(format!(
                "--sanitizer {other}: use none or address"
            )))
        }
    }
    let lock = RestoreOnDrop::new(project.dir.join("Cargo.lock"));
    let output = command
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| Error::io("run", &script, &e))?;
    drop(lock);
    if !output.status.success() {
        return Err(Error::new(format!(
            "building fuzz target '{target}' failed"
        )));
    }
    let exe = String::from_utf8_lossy(&output.stdout).trim().to_string();
    Ok(PathBuf::from(exe))
}
