//! Reading inputs back: seed directories, and what an earlier run left in the output directory.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::LabelfuzzError;

/// Whether a file named `name` in an input or output directory is an input: not a hidden or
/// temporary file, nor what labelfuzz writes beside a crash reproducer (`.rendered` sentence,
/// `.pattern`).
#[must_use]
pub fn is_input_file(name: &str) -> bool {
    !(name.starts_with('.') || name.ends_with(".rendered") || name.ends_with(".pattern"))
}

/// Reads the inputs in `dir`, sorted by file name: every regular file except hidden ones
/// (temporary files), `.rendered` sentences and `.pattern` files. A file over `max_len` bytes is skipped with a
/// warning (it could not be shrunk below the limit anyway), as is an unreadable one; an
/// unreadable directory is an error.
pub fn read_inputs(dir: &Path, max_len: usize) -> Result<Vec<Vec<u8>>, LabelfuzzError> {
    let mut paths = Vec::new();
    list_files(dir, &mut paths, &mut std::collections::HashSet::new())?;
    paths.sort();
    let mut inputs = Vec::with_capacity(paths.len());
    for (path, len) in paths {
        if len > max_len as u64 {
            crate::say!(
                "labelfuzz: warning: skipping {} ({len} bytes > --max-len {max_len})",
                path.display()
            );
            continue;
        }
        match fs::read(&path) {
            Ok(bytes) => inputs.push(bytes),
            Err(e) => crate::say!("labelfuzz: warning: cannot read {}: {e}", path.display()),
        }
    }
    Ok(inputs)
}

/// The input files under `dir` with their sizes, subdirectories included (as libFuzzer reads a
/// corpus); hidden files and grammar renderings are not inputs. What cannot be listed or read is
/// named in a warning and skipped; only an unreadable `dir` itself is an error. `visited` holds
/// the directories (device, inode) already listed, so that a symbolic link back up the tree
/// is not followed around.
fn list_files(
    dir: &Path,
    paths: &mut Vec<(PathBuf, u64)>,
    visited: &mut std::collections::HashSet<(u64, u64)>,
) -> Result<(), LabelfuzzError> {
    use std::os::unix::fs::MetadataExt;
    let meta = fs::metadata(dir).map_err(|e| LabelfuzzError::io("read directory", dir, e))?;
    if !visited.insert((meta.dev(), meta.ino())) {
        return Ok(());
    }
    let entries = fs::read_dir(dir).map_err(|e| LabelfuzzError::io("read directory", dir, e))?;
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                crate::say!("labelfuzz: warning: cannot list {}: {e}", dir.display());
                continue;
            }
        };
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !is_input_file(&name) {
            continue;
        }
        // Follows symbolic links, as reading the file would.
        match fs::metadata(&path) {
            Ok(meta) if meta.is_file() => paths.push((path, meta.len())),
            Ok(meta) if meta.is_dir() => {
                if let Err(e) = list_files(&path, paths, visited) {
                    crate::say!("labelfuzz: warning: skipping {e}");
                }
            }
            // A FIFO or a device would block or never end.
            Ok(_) => crate::say!(
                "labelfuzz: warning: skipping {}: not a regular file",
                path.display()
            ),
            Err(e) => crate::say!("labelfuzz: warning: cannot read {}: {e}", path.display()),
        }
    }
    Ok(())
}

/// The inputs an earlier run left in the output directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreviousRun {
    /// Its crash reproducers.
    pub crashes: Vec<Vec<u8>>,
    /// Its corpus: the best input of every label it had.
    pub corpus: Vec<Vec<u8>>,
}
