//! The lock a run holds on its output directory.

use std::fs;
use std::path::Path;

use crate::error::LabelfuzzError;

/// Held for as long as a run writes to its output directory (its processes inherit it): a
/// second run on the same directory is refused instead of interleaving its files with the
/// first one's. The lock is the kernel's (`flock`), so a run killed with SIGKILL leaves none.
#[derive(Debug)]
pub struct RunLock {
    _file: fs::File,
}

/// The lock file's name in an output directory.
const LOCK_FILE: &str = ".labelfuzz.lock";
/// How long a run waits for another run's lock before it gives up.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(3);

impl RunLock {
    /// Takes `dir`'s lock (creating the directory's lock file), or says which run holds it.
    pub fn acquire(dir: &Path) -> Result<RunLock, LabelfuzzError> {
        use std::io::{Read as _, Seek as _, Write as _};
        let path = dir.join(LOCK_FILE);
        let mut file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| LabelfuzzError::io("open", &path, e))?;
        // A run killed a moment ago may still hold the lock while its processes die: it gets
        // a little while to let go.
        let deadline = std::time::Instant::now() + LOCK_PATIENCE;
        while let Err(error) = file.try_lock() {
            if let fs::TryLockError::Error(error) = error {
                return Err(LabelfuzzError::io("lock", &path, error));
            }
            if std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(50));
                continue;
            }
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            return Err(LabelfuzzError::OutputInUse {
                dir: dir.to_path_buf(),
                holder: text.trim().parse().ok(),
            });
        }
        // Who holds it, for the message a second run prints; the lock itself is the kernel's,
        // so a full disk (nothing can be written) does not stop the run here.
        let pid = std::process::id().to_string();
        let _ = file
            .set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(pid.as_bytes()));
        Ok(RunLock { _file: file })
    }
}
