//! The output directory: `corpus/`, `crashes/` and `summary.json`.
//!
//! Every file is written under a temporary name and renamed into place, so a fuzzer killed at
//! any moment leaves either the old file or the new one, never half of one.

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

mod inputs;
mod lock;
mod stall_mark;

pub use inputs::{is_input_file, read_inputs, PreviousRun};
pub use lock::RunLock;

use crate::error::LabelfuzzError;
use crate::labels::short_digest;

/// A function from an input to what the target saw.
pub type RenderFn = dyn Fn(&[u8]) -> Vec<u8> + Send + Sync;

/// Turns an input into what the target saw, for people (e.g. a choice sequence into its
/// grammar sentence).
#[derive(Clone)]
pub struct Rendering(pub std::sync::Arc<RenderFn>);

impl std::fmt::Debug for Rendering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Rendering")
    }
}

/// Writes `bytes` to `path` through a temporary file beside it and a rename, so that no reader
/// (and no kill) ever sees half a file.
fn atomic_write(path: &Path, bytes: &[u8]) -> Result<(), LabelfuzzError> {
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{file_name}.tmp.{}", std::process::id()));
    // A target that lowered the file-size or descriptor limit would make this write kill the
    // process (SIGXFSZ) or fail.
    crate::interference::put_back();
    let write = || -> std::io::Result<()> {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_data()?;
        fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = fs::remove_file(&tmp);
        LabelfuzzError::io("write", path, e)
    })
}

/// The fuzzer's output directory.
#[derive(Clone, Debug)]
pub struct OutputDir {
    root: PathBuf,
    rendering: Option<Rendering>,
    artifacts: Option<Artifacts>,
    /// A corpus directory given without `-o`, which new corpus inputs are added to as libFuzzer
    /// adds them to its first corpus directory (never removing a file from it), with the
    /// digests of what it holds (added only once, whatever a file's name).
    mirror: Option<(PathBuf, std::sync::Arc<std::sync::Mutex<BTreeSet<String>>>)>,
}

/// Where copies of crash reproducers go besides `crashes/`, as libFuzzer users expect them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Artifacts {
    /// `-artifact_prefix=`: `<prefix><file name>`, e.g. `artifacts/crash-…`.
    Prefix(String),
    /// `-exact_artifact_path=`: always this one file.
    ExactPath(PathBuf),
}

impl Artifacts {
    /// Where the copy of the reproducer `relative` (e.g. `crashes/crash-…`) goes: the prefix and
    /// its file name, or the exact path.
    #[must_use]
    pub fn path_for(&self, relative: &Path) -> Option<PathBuf> {
        match self {
            Artifacts::ExactPath(path) => Some(path.clone()),
            Artifacts::Prefix(prefix) => relative
                .file_name()
                .map(|name| PathBuf::from(format!("{prefix}{}", name.to_string_lossy()))),
        }
    }
}

impl OutputDir {
    /// Opens (creating as needed) `root` with its `corpus/` and `crashes/` subdirectories.
    pub fn create(root: &Path) -> Result<Self, LabelfuzzError> {
        // Absolute, so that a target that changes its working directory (a server changing to
        // `/`, a tool to its data directory) does not send the fuzzer's files elsewhere.
        let root = &std::path::absolute(root)
            .map_err(|e| LabelfuzzError::io("find the directory of", root, e))?;
        for dir in [
            root.to_path_buf(),
            root.join("corpus"),
            root.join("crashes"),
        ] {
            fs::create_dir_all(&dir)
                .map_err(|e| LabelfuzzError::io("create directory", &dir, e))?;
        }
        let out = OutputDir {
            root: root.to_path_buf(),
            rendering: None,
            artifacts: None,
            mirror: None,
        };
        // Fail now, not at the first crash, if the directory is not writable.
        out.write_atomic(Path::new(".labelfuzz-write-test"), b"")?;
        let probe = root.join(".labelfuzz-write-test");
        fs::remove_file(&probe).map_err(|e| LabelfuzzError::io("remove", &probe, e))?;
        Ok(out)
    }

    /// What an earlier run left here, to resume from: the crash reproducers and the corpus,
    /// each sorted by file name. Temporary files of a run that was killed mid-write are removed;
    /// files over `max_len` bytes and unreadable files are skipped with a warning.
    pub fn previous_run(&self, max_len: usize) -> Result<PreviousRun, LabelfuzzError> {
        self.remove_stale_temporaries();
        Ok(PreviousRun {
            crashes: read_inputs(&self.root.join("crashes"), max_len)?,
            corpus: read_inputs(&self.root.join("corpus"), max_len)?,
        })
    }

    /// Removes the temporary files (`.<name>.tmp.<pid>`) that a process killed between write
    /// and rename left in the output directory, `corpus/` and `crashes/`: those of processes
    /// that no longer run.
    fn remove_stale_temporaries(&self) {
        for dir in [
            self.root.clone(),
            self.root.join("corpus"),
            self.root.join("crashes"),
        ] {
            for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                let Some((_, pid)) = name.rsplit_once(".tmp.") else {
                    continue;
                };
                let alive = pid.parse::<u32>().is_ok_and(crate::process::is_running);
                if name.starts_with('.') && !alive {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
    }

    /// Also writes, next to every crash reproducer, what the target saw (`<file>.rendered`).
    /// Renderings an interrupted write left out of step with their reproducer are rewritten,
    /// and renderings of no reproducer removed.
    #[must_use]
    pub fn with_rendering(mut self, rendering: Option<Rendering>) -> Self {
        self.rendering = rendering;
        if let Some(rendering) = &self.rendering {
            let crashes = self.root.join("crashes");
            for entry in fs::read_dir(&crashes).into_iter().flatten().flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') {
                    continue;
                }
                if let Some(reproducer) = name.strip_suffix(".rendered") {
                    if !crashes.join(reproducer).exists() {
                        let _ = fs::remove_file(&path);
                    }
                    continue;
                }
                let Ok(bytes) = fs::read(&path) else {
                    continue;
                };
                let sentence = (rendering.0)(&bytes);
                let rendered = crashes.join(format!("{name}.rendered"));
                if fs::read(&rendered).ok().as_deref() != Some(sentence.as_slice()) {
                    let _ = self.write_atomic(
                        &Path::new("crashes").join(format!("{name}.rendered")),
                        &sentence,
                    );
                }
            }
        }
        self
    }

    /// Also adds every new corpus input to `dir` (libFuzzer's first corpus directory).
    #[must_use]
    pub fn with_corpus_mirror(mut self, dir: Option<PathBuf>) -> Self {
        self.mirror = dir.map(|dir| {
            let dir = std::path::absolute(&dir).unwrap_or(dir);
            let held = fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| fs::read(e.path()).ok())
                .map(|bytes| short_digest(&bytes))
                .collect();
            (dir, std::sync::Arc::new(std::sync::Mutex::new(held)))
        });
        self
    }

    /// Also copies every crash reproducer written to `artifacts`.
    #[must_use]
    pub fn with_artifacts(mut self, artifacts: Option<Artifacts>) -> Self {
        // Absolute, as the output directory is (see `create`).
        self.artifacts = artifacts.map(|artifacts| match artifacts {
            Artifacts::ExactPath(path) => {
                Artifacts::ExactPath(std::path::absolute(&path).unwrap_or(path))
            }
            // The empty prefix (libFuzzer's default) is the working directory at the start too.
            Artifacts::Prefix(prefix) if !prefix.starts_with('/') => {
                match std::env::current_dir() {
                    Ok(dir) => Artifacts::Prefix(format!("{}/{prefix}", dir.display())),
                    Err(_) => Artifacts::Prefix(prefix),
                }
            }
            prefix @ Artifacts::Prefix(_) => prefix,
        });
        self
    }

    /// Writes a crash reproducer atomically, and its rendering if there is one, unless the file
    /// already holds one at least as simple: clients of a multi-core run, and earlier runs in the
    /// same directory, share `crashes/`, and the simplest reproducer of a label must win. A lock
    /// on `.crashes.lock` makes the check and the write one step across processes.
    pub fn write_reproducer(&self, relative: &Path, bytes: &[u8]) -> Result<(), LabelfuzzError> {
        let lock_path = self.root.join(".crashes.lock");
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| LabelfuzzError::io("open", &lock_path, e))?;
        // Released when `lock` is closed.
        lock.lock()
            .map_err(|e| LabelfuzzError::io("lock", &lock_path, e))?;
        if let Ok(existing) = fs::read(self.root.join(relative)) {
            if !crate::order::is_simpler(bytes, &existing) {
                return Ok(());
            }
        }
        self.write_atomic(relative, bytes)?;
        if let Some(rendering) = &self.rendering {
            let mut name = relative.as_os_str().to_owned();
            name.push(".rendered");
            self.write_atomic(Path::new(&name), &(rendering.0)(bytes))?;
        }
        // The copy is a courtesy: the reproducer is safe in crashes/ whatever happens to it.
        let copy = self.artifacts.as_ref().and_then(|a| a.path_for(relative));
        if let Some(path) = copy {
            if let Err(e) = fs::write(&path, bytes) {
                crate::say!(
                    "labelfuzz: warning: cannot write the artifact {}: {e} (the reproducer is in {})",
                    path.display(),
                    self.root.join(relative).display()
                );
            }
        }
        Ok(())
    }

    /// The root directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Writes `bytes` to `relative` (under the root) atomically.
    pub fn write_atomic(&self, relative: &Path, bytes: &[u8]) -> Result<(), LabelfuzzError> {
        atomic_write(&self.root.join(relative), bytes)
    }

    /// Makes `corpus/` hold exactly `inputs`, each in a file named by its digest; returns the
    /// number of files written and removed.
    pub fn sync_corpus<'a>(
        &self,
        inputs: impl Iterator<Item = &'a [u8]>,
    ) -> Result<(usize, usize), LabelfuzzError> {
        let dir = self.root.join("corpus");
        let mut wanted = BTreeSet::new();
        let mut written = 0;
        let mut held = self
            .mirror
            .as_ref()
            .map(|(_, held)| held.lock().unwrap_or_else(|e| e.into_inner()));
        for input in inputs {
            let name = short_digest(input);
            if !dir.join(&name).exists() {
                self.write_atomic(&Path::new("corpus").join(&name), input)?;
                written += 1;
            }
            if let (Some((mirror, _)), Some(held)) = (&self.mirror, held.as_mut()) {
                if held.insert(name.clone()) {
                    atomic_write(&mirror.join(&name), input)?;
                }
            }
            wanted.insert(name);
        }
        let mut removed = 0;
        let entries = fs::read_dir(&dir).map_err(|e| LabelfuzzError::io("read", &dir, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with('.') && !wanted.contains(&name) {
                let _ = fs::remove_file(entry.path());
                removed += 1;
            }
        }
        Ok((written, removed))
    }

    /// Writes `corpus.json`: each corpus input's file, length and how many labels it is best
    /// for (what the report's corpus table shows), from `(input, labels held)` pairs.
    pub fn write_corpus_index<'a>(
        &self,
        entries: impl Iterator<Item = (&'a [u8], u32)>,
    ) -> Result<(), LabelfuzzError> {
        let index: Vec<serde_json::Value> = entries
            .map(|(input, labels)| {
                serde_json::json!({
                    "file": short_digest(input),
                    "len": input.len(),
                    "labels": labels,
                })
            })
            .collect();
        let text = serde_json::to_vec(&index).unwrap_or_default();
        self.write_atomic(Path::new("corpus.json"), &text)
    }

    /// Writes `summary.json`.
    pub fn write_summary<T: Serialize>(&self, summary: &T) -> Result<(), LabelfuzzError> {
        self.write_summary_to(Path::new("summary.json"), summary)
    }

    /// Writes a summary to `relative` (creating its directory).
    pub fn write_summary_to<T: Serialize>(
        &self,
        relative: &Path,
        summary: &T,
    ) -> Result<(), LabelfuzzError> {
        if let Some(dir) = relative.parent().filter(|d| !d.as_os_str().is_empty()) {
            let dir = self.root.join(dir);
            fs::create_dir_all(&dir)
                .map_err(|e| LabelfuzzError::io("create directory", &dir, e))?;
        }
        let json = serde_json::to_vec_pretty(summary).expect("the summary serializes");
        self.write_atomic(relative, &json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("labelfuzz-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn atomic_write_leaves_no_temporary_files() {
        let dir = temp_dir("atomic");
        let out = OutputDir::create(&dir).unwrap();
        out.write_atomic(Path::new("crashes/crash-1"), b"abc")
            .unwrap();
        out.write_atomic(Path::new("crashes/crash-1"), b"ab")
            .unwrap();
        assert_eq!(fs::read(dir.join("crashes/crash-1")).unwrap(), b"ab");
        let names: Vec<_> = fs::read_dir(dir.join("crashes"))
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(names.len(), 1);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_reproducer_is_replaced_only_by_a_simpler_one() {
        let dir = temp_dir("reproducer");
        let out = OutputDir::create(&dir).unwrap();
        let file = Path::new("crashes/crash-1");
        out.write_reproducer(file, b"abc").unwrap();
        out.write_reproducer(file, b"abcd").unwrap();
        out.write_reproducer(file, b"abd").unwrap();
        assert_eq!(fs::read(dir.join(file)).unwrap(), b"abc");
        out.write_reproducer(file, b"abb").unwrap();
        assert_eq!(fs::read(dir.join(file)).unwrap(), b"abb");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn corpus_sync_adds_and_removes() {
        let dir = temp_dir("sync");
        let out = OutputDir::create(&dir).unwrap();
        let a: &[u8] = b"a";
        let b: &[u8] = b"bb";
        assert_eq!(out.sync_corpus([a, b].into_iter()).unwrap(), (2, 0));
        assert_eq!(out.sync_corpus([b].into_iter()).unwrap(), (0, 1));
        let files: Vec<_> = fs::read_dir(dir.join("corpus"))
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(files.len(), 1);
        assert_eq!(fs::read(files[0].path()).unwrap(), b"bb");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_previous_run_is_read_back_without_its_temporary_files() {
        let dir = temp_dir("previous");
        let out = OutputDir::create(&dir).unwrap();
        out.write_atomic(Path::new("corpus/b"), b"bb").unwrap();
        out.write_atomic(Path::new("corpus/a"), b"a").unwrap();
        out.write_atomic(Path::new("corpus/long"), b"too long")
            .unwrap();
        out.write_atomic(Path::new("crashes/crash-1"), b"x")
            .unwrap();
        out.write_atomic(Path::new("crashes/crash-1.rendered"), b"sentence")
            .unwrap();
        // What a run killed between write and rename leaves (pid 0 never runs a fuzzer), and
        // what a live process is writing now.
        fs::write(dir.join("corpus/.c.tmp.0"), b"half").unwrap();
        fs::write(dir.join(".summary.json.tmp.0"), b"half").unwrap();
        let live = format!(".d.tmp.{}", std::process::id());
        fs::write(dir.join("corpus").join(&live), b"busy").unwrap();
        let previous = out.previous_run(4).unwrap();
        assert_eq!(previous.corpus, vec![b"a".to_vec(), b"bb".to_vec()]);
        assert_eq!(previous.crashes, vec![b"x".to_vec()]);
        assert!(!dir.join("corpus/.c.tmp.0").exists());
        assert!(!dir.join(".summary.json.tmp.0").exists());
        assert!(dir.join("corpus").join(&live).exists());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn renderings_out_of_step_with_their_reproducers_are_repaired() {
        let dir = temp_dir("renderings");
        let out = OutputDir::create(&dir).unwrap();
        out.write_atomic(Path::new("crashes/crash-1"), b"new")
            .unwrap();
        // A kill between the two renames: the rendering of an older reproducer.
        out.write_atomic(Path::new("crashes/crash-1.rendered"), b"OLDER")
            .unwrap();
        out.write_atomic(Path::new("crashes/crash-2.rendered"), b"ORPHAN")
            .unwrap();
        let upper = Rendering(std::sync::Arc::new(|b: &[u8]| b.to_ascii_uppercase()));
        let _out = OutputDir::create(&dir).unwrap().with_rendering(Some(upper));
        assert_eq!(
            fs::read(dir.join("crashes/crash-1.rendered")).unwrap(),
            b"NEW"
        );
        assert!(!dir.join("crashes/crash-2.rendered").exists());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn unwritable_output_is_a_clear_error() {
        let err = OutputDir::create(Path::new("/proc/labelfuzz-cannot-exist")).unwrap_err();
        assert!(
            err.to_string().contains("/proc/labelfuzz-cannot-exist"),
            "{err}"
        );
    }
}
