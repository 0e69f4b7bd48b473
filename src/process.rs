//! Other processes as Linux's `/proc/<pid>/stat` shows them: whether one still runs, and
//! which process is its parent; and memory this process shares with the ones it forks.
//!
//! A process that exited stays a zombie until its parent reaps it, and an orphan's new parent
//! (PID 1 in many containers) may never do so: `/proc/<pid>` existing does not mean running.

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
