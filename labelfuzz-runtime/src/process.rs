//! Other processes as Linux's `/proc/<pid>/stat` shows them: whether one still runs, and
//! which process is its parent; memory this process shares with the ones it forks; and how
//! many fuzzing processes a supervisor started, and why.
//!
//! A process that exited stays a zombie until its parent reaps it, and an orphan's new parent
//! (PID 1 in many containers) may never do so: `/proc/<pid>` existing does not mean running.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// What `/proc/<pid>/stat` says about a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessStatus {
    /// The state letter (`R` running, `S` sleeping, `Z` zombie, `X` dead, ...).
    pub state: char,
    /// The parent's process id.
    pub parent: u32,
}

impl ProcessStatus {
    /// Whether the process still runs (anything but a zombie or a dead entry).
    #[must_use]
    pub fn is_running(self) -> bool {
        !matches!(self.state, 'Z' | 'X')
    }
}

/// The status of process `pid`, or `None` if there is no such process.
#[must_use]
pub fn status(pid: u32) -> Option<ProcessStatus> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The state and the parent follow the command name, which is in parentheses and may hold
    // anything, spaces and parentheses included.
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some(ProcessStatus { state, parent })
}

/// The running children of process `pid`.
#[must_use]
pub fn children(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&child| status(child).is_some_and(|s| s.parent == pid && s.is_running()))
        .collect()
}

/// Whether process `pid` exists and is not a zombie.
#[must_use]
pub fn is_running(pid: u32) -> bool {
    status(pid).is_some_and(ProcessStatus::is_running)
}

/// A zeroed page of memory shared with every process this one forks from now on (a run's
/// fuzzing processes), never unmapped; `None` if the system refuses one.
#[must_use]
pub fn shared_page() -> Option<std::ptr::NonNull<std::ffi::c_void>> {
    // SAFETY: a fresh anonymous mapping, which touches no existing memory.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if page == libc::MAP_FAILED {
        None
    } else {
        std::ptr::NonNull::new(page)
    }
}

/// Fuzzing processes this supervisor started, shared with them.
static STARTS: OnceLock<&'static AtomicU64> = OnceLock::new();

/// In a supervisor, before it starts its first fuzzing process: shares the count of starts.
pub fn share_start_count() {
    if let Some(page) = crate::process::shared_page() {
        // SAFETY: the page is never unmapped, and zeroed, aligned memory is a valid AtomicU64.
        let _ = STARTS.set(unsafe { page.cast::<AtomicU64>().as_ref() });
    }
}

/// How a fuzzing process came to start (see `launch::respawn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// The supervisor's first process.
    First,
    /// After a crash or timeout: the state it saved was handed over.
    Restored,
    /// After its predecessor was killed without saving any state (the `n`th such start).
    AfterKill(u64),
}

/// What started this fuzzing process, given whether it was handed a state; counts the start.
pub fn this_start(restored: bool) -> Start {
    let Some(starts) = STARTS.get() else {
        return if restored {
            Start::Restored
        } else {
            Start::First
        };
    };
    // The high half counts starts, the low half the starts after kills.
    let before = starts.fetch_add(1 << 32, Ordering::SeqCst);
    if restored {
        Start::Restored
    } else if before >> 32 == 0 {
        Start::First
    } else {
        Start::AfterKill((starts.fetch_add(1, Ordering::SeqCst) & 0xffff_ffff) + 1)
    }
}

/// How many fuzzing processes this one's supervisor started after a kill (0 outside a run).
#[must_use]
pub fn restarts_after_kill() -> usize {
    STARTS.get().map_or(0, |starts| {
        usize::try_from(starts.load(Ordering::Relaxed) & 0xffff_ffff).unwrap_or(usize::MAX)
    })
}

/// Held by the unit tests that start child processes: another test's child would be counted
/// as one's own.
#[cfg(test)]
pub(crate) static TEST_CHILDREN: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn this_process_runs_under_its_parent() {
        let me = status(std::process::id()).unwrap();
        assert!(me.is_running());
        assert_eq!(me.parent, std::os::unix::process::parent_id());
    }

    #[test]
    fn a_zombie_process_is_not_running() {
        let _children = TEST_CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
        // A child that exited and was not waited for yet is a zombie until it is reaped.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while is_running(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(
            Path::new(&format!("/proc/{pid}")).exists(),
            "not reaped yet"
        );
        assert!(!is_running(pid));
        assert_eq!(status(pid).map(|s| s.state), Some('Z'));
        child.wait().unwrap();
        assert_eq!(status(pid), None);
    }
}
