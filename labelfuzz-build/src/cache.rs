//! The tool's cache: the runtime, the rustc wrapper and the glue crates, built once per version
//! of labelfuzz's sources and shared by every project on the machine.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::BuildError;

/// The cache's root: `LABELFUZZ_CACHE`, else `$XDG_CACHE_HOME/labelfuzz`, else
/// `~/.cache/labelfuzz`; created, and in canonical form (cargo reports the paths under it that
/// way, and builds compare them).
pub fn root() -> Result<PathBuf, BuildError> {
    let chosen = if let Some(dir) = std::env::var_os("LABELFUZZ_CACHE").filter(|d| !d.is_empty()) {
        PathBuf::from(dir)
    } else if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        PathBuf::from(dir).join("labelfuzz")
    } else if let Some(home) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        PathBuf::from(home).join(".cache/labelfuzz")
    } else {
        return Err(BuildError::Project(
            "no cache directory: set LABELFUZZ_CACHE (or HOME)".into(),
        ));
    };
    std::fs::create_dir_all(&chosen).map_err(|e| BuildError::io("create", &chosen, e))?;
    chosen
        .canonicalize()
        .map_err(|e| BuildError::io("resolve", &chosen, e))
}

/// The directory of this version of the sources inside the cache.
pub fn versioned() -> Result<PathBuf, BuildError> {
    Ok(root()?.join(crate::sources::KEY))
}

/// An exclusive lock on a file, held until dropped: two builds on one machine (two projects,
/// two test threads) then build the runtime once, one after the other.
pub struct Lock {
    _file: File,
}

impl Lock {
    /// Waits for and takes the lock at `path` (created if missing).
    pub fn take(path: &Path) -> Result<Self, BuildError> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| BuildError::io("create", parent, e))?;
        }
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| BuildError::io("open", path, e))?;
        file.lock().map_err(|e| BuildError::io("lock", path, e))?;
        Ok(Self { _file: file })
    }
}

/// Writes `contents` to `path`, creating its directory.
pub fn write_file(path: &Path, contents: &[u8]) -> Result<(), BuildError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| BuildError::io("create", parent, e))?;
    }
    std::fs::write(path, contents).map_err(|e| BuildError::io("write", path, e))
}

/// Runs `build` once for `dir`: unless `dir/complete` says an earlier call finished, it runs
/// under the cache-wide lock `lock_name` (two builds on one machine wait for each other, and
/// the second finds the first's work), then marks `dir` complete.
pub fn build_once(
    dir: &Path,
    lock_name: &str,
    build: impl FnOnce() -> Result<(), BuildError>,
) -> Result<(), BuildError> {
    let marker = dir.join("complete");
    if marker.is_file() {
        return Ok(());
    }
    let _lock = Lock::take(&root()?.join(lock_name))?;
    if marker.is_file() {
        return Ok(());
    }
    build()?;
    write_atomically(&marker, b"")
}

/// Writes `contents` to `path` through a temporary file and a rename, so that a reader never
/// sees half a file and a killed build leaves none.
pub fn write_atomically(path: &Path, contents: &[u8]) -> Result<(), BuildError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| BuildError::io("create", parent, e))?;
    }
    let temporary = path.with_extension("partial");
    std::fs::write(&temporary, contents).map_err(|e| BuildError::io("write", &temporary, e))?;
    std::fs::rename(&temporary, path).map_err(|e| BuildError::io("rename", &temporary, e))
}
