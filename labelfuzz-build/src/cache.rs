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

/// Other versions kept in the cache beside the one in use: each version of labelfuzz's sources
/// builds its runtime and glue once (about 36 MiB), and every upgrade would otherwise leave the
/// earlier ones behind for good.
pub const OTHER_VERSIONS_KEPT: usize = 3;

/// Notes that the version in `versioned` is in use now (the time of its `last-used` file).
pub fn note_use(versioned: &Path) -> Result<(), BuildError> {
    write_file(&versioned.join("last-used"), b"")
}

/// Removes the versions in the cache at `root` other than `current` beyond the
/// [`OTHER_VERSIONS_KEPT`] most recently used; returns the directories removed. Only directories
/// named as versions are (`0.1.0-0123456789abcdef`): the shared build directory and the locks
/// stay. A version removed here is built again if a project still uses it.
pub fn prune_other_versions(root: &Path, current: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut others: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name != current && is_version_name(&name) && entry.path().is_dir()
        })
        .map(|entry| {
            let path = entry.path();
            let used = std::fs::metadata(path.join("last-used"))
                .or_else(|_| std::fs::metadata(&path))
                .and_then(|m| m.modified())
                .unwrap_or(std::time::SystemTime::UNIX_EPOCH);
            (used, path)
        })
        .collect();
    others.sort_by_key(|other| std::cmp::Reverse(other.0));
    others
        .into_iter()
        .skip(OTHER_VERSIONS_KEPT)
        .filter_map(|(_, path)| std::fs::remove_dir_all(&path).ok().map(|()| path))
        .collect()
}

/// Whether `name` is a version's directory: a version, a dash and 16 hexadecimal digits.
fn is_version_name(name: &str) -> bool {
    name.rsplit_once('-').is_some_and(|(version, hash)| {
        hash.len() == 16
            && hash.bytes().all(|b| b.is_ascii_hexdigit())
            && !version.is_empty()
            && version.bytes().all(|b| b.is_ascii_digit() || b == b'.')
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_versions_beyond_the_kept_ones_are_removed_and_nothing_else() {
        let root =
            std::env::temp_dir().join(format!("labelfuzz-cache-prune-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let now = std::time::SystemTime::now();
        let names: Vec<String> = (0..6).map(|i| format!("0.1.0-{i:016x}")).collect();
        for (age, name) in names.iter().enumerate() {
            let dir = root.join(name);
            std::fs::create_dir_all(dir.join("runtime")).unwrap();
            let stamp = File::create(dir.join("last-used")).unwrap();
            stamp
                .set_modified(now - std::time::Duration::from_secs(3600 * age as u64))
                .unwrap();
        }
        std::fs::create_dir_all(root.join("target")).unwrap();
        // The oldest is the one in use: it stays whatever its age.
        let removed = prune_other_versions(&root, &names[5]);
        let mut left: Vec<String> = std::fs::read_dir(&root)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut expected = vec![
            names[0].clone(),
            names[1].clone(),
            names[2].clone(),
            names[5].clone(),
            "target".to_string(),
        ];
        expected.sort();
        assert_eq!(left, expected);
        assert_eq!(removed.len(), 2);
        assert!(!is_version_name("target"));
        assert!(!is_version_name("0.1.0-xyz"));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
