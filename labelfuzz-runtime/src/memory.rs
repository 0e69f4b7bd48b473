//! The memory limit: an execution that grows the process past `--rss-limit-mb` is an `oom`
//! crash label with its reproducer, as in libFuzzer.
//!
//! A watcher thread reads the resident set size every few milliseconds. When it is over the
//! limit while the target runs, the watcher marks the execution as out of memory and interrupts
//! the fuzzing thread with SIGABRT: LibAFL's handler saves the input, and the restarting event
//! manager starts a fresh process, which is the only sure way to give the memory back.
//!
//! The same thread puts back what the target took away (see `interference`), every few polls.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How often the watcher looks.
const POLL: Duration = Duration::from_millis(20);

/// Every how many polls the watcher also puts back what the target took away (signal
/// handlers, descriptors, limits).
const HANDLER_CHECK_POLLS: u32 = 10;

static PEAK_RSS_MB: AtomicUsize = AtomicUsize::new(0);

/// Puts back what the target took away (see `interference` and `signals::watch`). The fuzzing thread
/// checks after executions; this catches a target that replaces a handler and then faults or
/// hangs in the same execution, which never returns to be checked. A timeout the target's
/// SIGALRM handler swallowed is sent again, now to the fuzzer's handler.
fn handlers_back(fuzzing_thread: libc::pthread_t) {
    crate::interference::put_back();
    let restored = crate::signals::restore_replaced_handlers();
    if restored.contains(&"SIGALRM") && crate::signals::target_running() {
        // SAFETY: signals a thread of this process that lives as long as the process.
        unsafe { libc::pthread_kill(fuzzing_thread, libc::SIGALRM) };
    }
}

/// Gives the pages of the allocator's free memory back to the system. A target that allocates
/// and frees its own memory on every execution, between the fuzzer's longer-lived allocations,
/// leaves holes in the heap that stay resident, which looks like growth over a long run (SQLite
/// in grammar mode). Called between executions, every report.
pub fn return_free_pages() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: glibc's malloc_trim takes the allocator's locks itself; no memory in use moves.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The resident set size of this process in MiB, from `/proc/self/statm` (0 if unreadable).
#[must_use]
pub fn resident_mb() -> usize {
    let Ok(statm) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|field| field.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page_size = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    pages.saturating_mul(page_size) >> 20
}

/// The largest resident set size the watcher saw in this process, in MiB.
#[must_use]
pub fn peak_rss_mb() -> usize {
    PEAK_RSS_MB.load(Ordering::Relaxed).max(resident_mb())
}

/// Starts watching this process's memory (`limit_mb == 0`: only the peak is recorded). Call it
/// from the thread that runs the target.
pub fn start_watch(limit_mb: usize) {
    // SAFETY: pthread_self has no preconditions.
    let fuzzing_thread = unsafe { libc::pthread_self() };
    let spawned = std::thread::Builder::new()
        .name("labelfuzz-rss".into())
        .spawn(move || {
            crate::signals::keep_timeouts_off_this_thread();
            // Saving the reproducer can take longer than a poll on a loaded machine, with the
            // memory still held: one interrupt per execution, never a second into the handler.
            let mut interrupted = None;
            let mut polls = 0u32;
            // The last poll's (execution, resident MiB), and the resident size at the last
            // poll of an execution before the current one.
            let mut last_poll: Option<(u64, usize)> = None;
            let mut before_this_execution = 0usize;
            loop {
                std::thread::sleep(POLL);
                polls = polls.wrapping_add(1);
                if polls.is_multiple_of(HANDLER_CHECK_POLLS) {
                    handlers_back(fuzzing_thread);
                }
                let rss = resident_mb();
                PEAK_RSS_MB.fetch_max(rss, Ordering::Relaxed);
                let execution = crate::signals::target_entries();
                if let Some((polled, resident)) = last_poll {
                    if polled != execution {
                        before_this_execution = resident;
                    }
                }
                last_poll = Some((execution, rss));
                if crate::signals::take_dropped_memory_interrupt() {
                    interrupted = None;
                }
                if limit_mb > 0
                    && rss > limit_mb
                    && crate::signals::target_running()
                    && interrupted != Some(execution)
                {
                    interrupted = Some(execution);
                    // Within a tenth of the limit before this execution: it did not get there
                    // alone.
                    let grew_across = before_this_execution * 10 >= limit_mb * 9;
                    crate::signals::interrupt_for_memory(fuzzing_thread, grew_across);
                }
            }
        });
    if let Err(e) = spawned {
        crate::say!("labelfuzz: warning: no memory watcher ({e}); --rss-limit-mb is not enforced");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_size_grows_with_touched_memory() {
        let before = resident_mb();
        assert!(before > 0, "/proc/self/statm is readable");
        let block = vec![1u8; 64 << 20];
        std::hint::black_box(&block);
        assert!(
            resident_mb() >= before + 32,
            "64 MiB touched shows up in the RSS"
        );
    }
}
