//! Keeping the project's `Cargo.lock` exactly as it was while the patched build resolves.
//!
//! The build may rewrite the lock file (the stand-in replaces crates.io's `libfuzzer-sys`); the
//! guard puts the original bytes back when dropped. A copy also waits in the build's target
//! directory until then, so that a build killed in between is undone by the next one.

use std::path::{Path, PathBuf};

use crate::BuildError;

/// Restores a lock file (or its absence) when dropped.
pub struct LockGuard {
    path: PathBuf,
    saved: PathBuf,
    original: Option<Vec<u8>>,
}

impl LockGuard {
    /// Remembers `path` as it is now (first undoing a killed build's change, from `saved`).
    pub fn take(path: &Path, saved: &Path) -> Result<Self, BuildError> {
        if let Ok(bytes) = std::fs::read(saved) {
            restore(path, decode(&bytes).as_deref())?;
        }
        let original = match std::fs::read(path) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(BuildError::io("read", path, e)),
        };
        crate::cache::write_atomically(saved, &encode(original.as_deref()))?;
        Ok(Self {
            path: path.to_path_buf(),
            saved: saved.to_path_buf(),
            original,
        })
    }

    /// Whether the lock file at `path` has a package named `name`.
    #[must_use]
    pub fn mentions(path: &Path, name: &str) -> bool {
        std::fs::read_to_string(path).is_ok_and(|text| {
            text.lines()
                .any(|line| line.trim() == format!("name = \"{name}\""))
        })
    }
}

/// The saved form: a marker byte (absent or present) and the contents.
fn encode(original: Option<&[u8]>) -> Vec<u8> {
    match original {
        None => vec![0],
        Some(bytes) => {
            let mut out = vec![1];
            out.extend_from_slice(bytes);
            out
        }
    }
}

fn decode(saved: &[u8]) -> Option<Vec<u8>> {
    match saved.split_first() {
        Some((1, rest)) => Some(rest.to_vec()),
        _ => None,
    }
}

/// Puts `path` back as `original` had it: those bytes (written only if they differ), or no file.
fn restore(path: &Path, original: Option<&[u8]>) -> Result<(), BuildError> {
    match original {
        Some(bytes) if std::fs::read(path).ok().as_deref() != Some(bytes) => {
            std::fs::write(path, bytes).map_err(|e| BuildError::io("restore", path, e))
        }
        Some(_) => Ok(()),
        None => match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(BuildError::io("remove", path, e))
            }
            _ => Ok(()),
        },
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        match restore(&self.path, self.original.as_deref()) {
            Ok(()) => {
                let _ = std::fs::remove_file(&self.saved);
            }
            Err(e) => eprintln!(
                "labelfuzz: warning: {e} (the original is in {})",
                self.saved.display()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("labelfuzz-lockfile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_lock_file_comes_back_byte_for_byte() {
        let dir = scratch("bytes");
        let lock = dir.join("Cargo.lock");
        std::fs::write(
            &lock,
            b"version = 4\n\n[[package]]\nname = \"libfuzzer-sys\"\n",
        )
        .unwrap();
        {
            let _guard = LockGuard::take(&lock, &dir.join("saved")).unwrap();
            assert!(LockGuard::mentions(&lock, "libfuzzer-sys"));
            std::fs::write(&lock, b"rewritten").unwrap();
        }
        assert_eq!(
            std::fs::read(&lock).unwrap(),
            b"version = 4\n\n[[package]]\nname = \"libfuzzer-sys\"\n"
        );
        assert!(!dir.join("saved").exists());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_lock_file_that_was_absent_is_removed_and_a_killed_build_is_undone() {
        let dir = scratch("absent");
        let lock = dir.join("Cargo.lock");
        {
            let _guard = LockGuard::take(&lock, &dir.join("saved")).unwrap();
            std::fs::write(&lock, b"generated").unwrap();
        }
        assert!(!lock.exists());

        std::fs::write(&lock, b"original").unwrap();
        let guard = LockGuard::take(&lock, &dir.join("saved")).unwrap();
        std::fs::write(&lock, b"patched").unwrap();
        std::mem::forget(guard); // killed before it could restore
        let next = LockGuard::take(&lock, &dir.join("saved")).unwrap();
        assert_eq!(std::fs::read(&lock).unwrap(), b"original");
        drop(next);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
