//! Stopping cleanly on Ctrl-C (SIGINT) and SIGTERM: the run ends at the next execution, writes
//! its final corpus and `summary.json`, and exits as after `--max-time`.
//!
//! The fuzzing process is a child of a supervising parent (the restarting event manager). The
//! stop request lives in a page shared by both, created before the fork, so a SIGTERM sent to
//! the parent (what `kill PID`, `timeout` and service managers do) reaches the child, and Ctrl-C
//! (sent to both; LibAFL's parent ignores it) is seen by the child directly. A second signal
//! ends the child at once with LibAFL's Ctrl-C exit code, which the parent treats as shutdown.
//!
//! The same page says whether a fuzzing process stopped on an error, so that its supervisor
//! (and the launching process of a multi-core run) ends with a failure status too.

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// The shared stop flag (null until [`install`]).
static STOP: AtomicPtr<AtomicBool> = AtomicPtr::new(std::ptr::null_mut());

/// Whether this process has seen a stop signal before. Not shared: one Ctrl-C reaches every
/// process of a multi-core run, and that must not count as a second one in any of them.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn request_stop(_signal: libc::c_int) {
    request_stop_all();
    if SIGNALLED.swap(true, Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(libafl_bolts::os::CTRL_C_EXIT) };
    }
}

fn set_handler(signal: libc::c_int) {
    // SAFETY: installs a handler that only touches an atomic (or calls _exit).
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = request_stop as *const () as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&raw mut action.sa_mask);
        libc::sigaction(signal, &raw const action, std::ptr::null_mut());
    }
}

/// Creates the shared stop flag and handles SIGTERM. Call once, before the event manager forks.
pub fn install() {
    if !STOP.load(Ordering::Relaxed).is_null() {
        return;
    }
    // Zeroed memory is a valid `AtomicBool` (false).
    let Some(page) = crate::process::shared_page() else {
        eprintln!("labelfuzz: warning: no shared stop flag; SIGTERM ends the run abruptly");
        return;
    };
    STOP.store(page.as_ptr().cast(), Ordering::Relaxed);
    set_handler(libc::SIGTERM);
}

/// Handles SIGINT and SIGTERM in the fuzzing process (after LibAFL has set up its own handlers,
/// which end the process at once).
pub fn install_in_fuzzer() {
    if STOP.load(Ordering::Relaxed).is_null() {
        return;
    }
    set_handler(libc::SIGINT);
    set_handler(libc::SIGTERM);
}

/// A flag in the shared page after the stop flag: set when a fuzzing process stopped on an error.
fn failed_flag() -> Option<&'static AtomicBool> {
    let stop = STOP.load(Ordering::Relaxed);
    // SAFETY: the page is one mapped, zeroed page that lives as long as the process; the byte
    // after the stop flag is within it and a valid `AtomicBool`.
    (!stop.is_null()).then(|| unsafe { &*stop.add(1) })
}

/// Records that this run failed (whoever failed prints why) and stops every process of it.
pub fn mark_failed() {
    if let Some(flag) = failed_flag() {
        flag.store(true, Ordering::SeqCst);
    }
    request_stop_all();
}

/// Asks every process of this run to stop, as Ctrl-C does.
pub fn request_stop_all() {
    let flag = STOP.load(Ordering::Relaxed);
    if !flag.is_null() {
        // SAFETY: the page is mapped for the life of the process; atomics are signal-safe.
        unsafe { (*flag).store(true, Ordering::SeqCst) };
    }
}

/// Whether a fuzzing process of this run stopped on an error.
#[must_use]
pub fn failed() -> bool {
    failed_flag().is_some_and(|flag| flag.load(Ordering::SeqCst))
}

/// Whether a stop was requested.
#[must_use]
pub fn requested() -> bool {
    let flag = STOP.load(Ordering::Relaxed);
    // SAFETY: see `request_stop`.
    !flag.is_null() && unsafe { (*flag).load(Ordering::Relaxed) }
}
