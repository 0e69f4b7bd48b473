//! A cargo-fuzz project: where its fuzz crate is, which targets it has, and creating one.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Error, Location};

/// The `fuzz/` crate of a cargo-fuzz project.
#[derive(Debug, Clone)]
pub struct FuzzProject {
    /// The directory holding the fuzz crate's Cargo.toml.
    pub dir: PathBuf,
}

/// Whether `manifest` is a cargo-fuzz crate (`[package.metadata] cargo-fuzz = true`).
fn is_fuzz_manifest(manifest: &Path) -> bool {
    std::fs::read_to_string(manifest).is_ok_and(|text| {
        text.lines()
            .any(|line| line.replace(' ', "").starts_with("cargo-fuzz=true"))
    })
}

/// `cargo metadata --no-deps` of the crate at `manifest`.
fn metadata(manifest: &Path) -> Result<serde_json::Value, Error> {
    let output = Command::new("cargo")
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(manifest)
        .output()
        .map_err(|e| Error::io("run cargo metadata on", manifest, &e))?;
    if !output.status.success() {
        return Err(Error::new(format!(
            "cargo metadata failed on {}:\n{}",
            manifest.display(),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    serde_json::from_slice(&output.stdout)
        .map_err(|e| Error::new(format!("cargo metadata printed no JSON: {e}")))
}

impl FuzzProject {
    /// Finds the fuzz crate: `--fuzz-dir`, else `fuzz/` (or a cargo-fuzz crate itself) in the
    /// current directory or the nearest parent that has one.
    pub fn find(location: &Location) -> Result<Self, Error> {
        if let Some(dir) = &location.fuzz_dir {
            if !dir.join("Cargo.toml").is_file() {
                return Err(Error::new(format!(
                    "--fuzz-dir {}: no Cargo.toml there",
                    dir.display()
                )));
            }
            return Ok(Self { dir: dir.clone() });
        }
        let cwd = std::env::current_dir()
            .map_err(|e| Error::io("read", Path::new("the current directory"), &e))?;
        for dir in cwd.ancestors() {
            if dir.join("fuzz/Cargo.toml").is_file() {
                return Ok(Self {
                    dir: dir.join("fuzz"),
                });
            }
            if is_fuzz_manifest(&dir.join("Cargo.toml")) {
                return Ok(Self {
                    dir: dir.to_path_buf(),
                });
            }
        }
        Err(Error::new(
            "no fuzz/ directory here or above (create one with `cargo labelfuzz init`, or pass \
             --fuzz-dir)",
        ))
    }

    /// The fuzz crate's manifest.
    pub fn manifest(&self) -> PathBuf {
        self.dir.join("Cargo.toml")
    }

    /// The names of the fuzz crate's binaries: its fuzz targets.
    pub fn targets(&self) -> Result<Vec<String>, Error> {
        let meta = metadata(&self.manifest())?;
        let mut names: Vec<String> = meta["packages"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|package| package["targets"].as_array().into_iter().flatten())
            .filter(|target| {
                target["kind"]
                    .as_array()
                    .is_some_and(|kinds| kinds.iter().any(|k| k == "bin"))
            })
            .filter_map(|target| target["name"].as_str().map(str::to_string))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Checks that `target` is one of the project's targets.
    pub fn check_target(&self, target: &str) -> Result<(), Error> {
        let targets = self.targets()?;
        if targets.iter().any(|t| t == target) {
            Ok(())
        } else {
            Err(Error::new(format!(
                "no fuzz target '{target}' in {} (targets: {})",
                self.dir.display(),
                targets.join(", ")
            )))
        }
    }

    /// `fuzz/corpus/TARGET`, as cargo-fuzz lays it out.
    pub fn corpus_dir(&self, target: &str) -> PathBuf {
        self.dir.join("corpus").join(target)
    }

    /// `fuzz/artifacts/TARGET`.
    pub fn artifacts_dir(&self, target: &str) -> PathBuf {
        self.dir.join("artifacts").join(target)
    }

    /// Where labelfuzz keeps builds and run state: `fuzz/target/labelfuzz/`, which
    /// cargo-fuzz's `fuzz/.gitignore` (`target`) already covers.
    pub fn work_dir(&self) -> PathBuf {
        self.dir.join("target").join("labelfuzz")
    }

    /// labelfuzz's own output directory for `target` (its table, summary and time series):
    /// `fuzz/target/labelfuzz/state/TARGET/`.
    pub fn state_dir(&self, target: &str) -> PathBuf {
        self.work_dir().join("state").join(target)
    }

    /// Adds a bytes target named `target`: its source file and its `[[bin]]` entry.
    pub fn add_target(&self, target: &str) -> Result<(), Error> {
        check_name(target)?;
        if self.targets()?.iter().any(|t| t == target) {
            return Err(Error::new(format!("fuzz target '{target}' already exists")));
        }
        let package = self.fuzzed_crate()?;
        let source = self.dir.join("fuzz_targets").join(format!("{target}.rs"));
        write_new(&source, &target_source(&package))?;
        let manifest = self.manifest();
        let mut text =
            std::fs::read_to_string(&manifest).map_err(|e| Error::io("read", &manifest, &e))?;
        text.push_str(&bin_entry(target));
        std::fs::write(&manifest, text).map_err(|e| Error::io("write", &manifest, &e))?;
        println!("added fuzz target {}", source.display());
        Ok(())
    }

    /// The crate under test, as the fuzz crate's first path dependency names it (for `use`).
    fn fuzzed_crate(&self) -> Result<String, Error> {
        let meta = metadata(&self.manifest())?;
        let name = meta["packages"][0]["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|dep| dep["path"].is_string())
            .and_then(|dep| dep["name"].as_str())
            .unwrap_or("my_crate");
        Ok(name.replace('-', "_"))
    }
}

/// A target name cargo accepts as a binary name.
fn check_name(name: &str) -> Result<(), Error> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(Error::new(format!(
            "'{name}' is not a usable target name (letters, digits, _ and - only)"
        )))
    }
}

/// Writes `text` to a file that must not exist yet (creating its directory).
fn write_new(path: &Path, text: &str) -> Result<(), Error> {
    if path.exists() {
        return Err(Error::new(format!("{} already exists", path.display())));
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, &e))?;
    }
    std::fs::write(path, text).map_err(|e| Error::io("write", path, &e))
}

fn target_source(crate_name: &str) -> String {
    format!(
        "#![no_main]\n\nuse libfuzzer_sys::fuzz_target;\n\nfuzz_target!(|data: &[u8]| {{\n    \
         // Call the code under test with `data`, e.g. `let _ = {crate_name}::parse(data);`\n    \
         let _ = data;\n}});\n"
    )
}

fn bin_entry(target: &str) -> String {
    format!(
        "\n[[bin]]\nname = \"{target}\"\npath = \"fuzz_targets/{target}.rs\"\ntest = false\n\
         doc = false\nbench = false\n"
    )
}

/// Creates `fuzz/` next to the Cargo.toml of the current directory, with one target, in the
/// layout cargo-fuzz uses (so `cargo fuzz` works on it too).
pub fn init(location: &Location, target: &str) -> Result<(), Error> {
    check_name(target)?;
    let cwd = std::env::current_dir()
        .map_err(|e| Error::io("read", Path::new("the current directory"), &e))?;
    let dir = location
        .fuzz_dir
        .clone()
        .unwrap_or_else(|| cwd.join("fuzz"));
    let root_manifest = cwd.join("Cargo.toml");
    let meta = metadata(&root_manifest)?;
    let package = meta["packages"][0]["name"]
        .as_str()
        .ok_or_else(|| Error::new(format!("{} has no package", root_manifest.display())))?
        .to_string();
    let manifest = format!(
        "[package]\nname = \"{package}-fuzz\"\nversion = \"0.0.0\"\npublish = false\n\
         edition = \"2021\"\n\n[package.metadata]\ncargo-fuzz = true\n\n[dependencies]\n\
         libfuzzer-sys = \"0.4\"\n\n[dependencies.{package}]\npath = \"..\"\n\n\
         # A workspace of its own, apart from the crate under test.\n[workspace]\n\
         members = [\".\"]\n{}",
        bin_entry(target)
    );
    write_new(&dir.join("Cargo.toml"), &manifest)?;
    write_new(
        &dir.join(".gitignore"),
        "target\ncorpus\nartifacts\ncoverage\n",
    )?;
    write_new(
        &dir.join("fuzz_targets").join(format!("{target}.rs")),
        &target_source(&package.replace('-', "_")),
    )?;
    println!("created {}", dir.display());
    Ok(())
}
