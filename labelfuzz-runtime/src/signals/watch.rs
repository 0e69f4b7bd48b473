//! Signal handlers the target replaces.
//!
//! A target that installs its own SIGSEGV handler (a runtime with its own crash reporter, a
//! server that ignores SIGALRM) takes crashes and timeouts away from the fuzzer: a fault then
//! loops in the target's handler or ends the process unseen, and a hang is never interrupted.
//! The fuzzer's handlers are noted once they are all installed; after the target's 1st, 2nd,
//! 4th, 8th... execution (installers run at the first call or in initialisation, and checking
//! every execution would cost a system call per signal each time) the handlers are compared,
//! and any the target replaced is put back and reported, once per signal in a run. The memory
//! watcher's thread also checks, for a target that replaces a handler and faults or hangs in
//! the same execution.

use std::sync::Mutex;

/// The signals whose handlers fuzzing depends on: crashes, aborts and timeouts.
const WATCHED: [(libc::c_int, &str); 6] = [
    (libc::SIGSEGV, "SIGSEGV"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGILL, "SIGILL"),
    (libc::SIGFPE, "SIGFPE"),
    (libc::SIGABRT, "SIGABRT"),
    (libc::SIGALRM, "SIGALRM"),
];

/// The fuzzer's handlers, as noted by [`note_handlers`], with the signals' names.
static NOTED: Mutex<Vec<(libc::c_int, &str, libc::sigaction)>> = Mutex::new(Vec::new());
/// Notes the handlers now installed for the watched signals (call once all of the fuzzer's
/// handlers are in place).
pub fn note_handlers() {
    note_handlers_of(&WATCHED);
}

fn note_handlers_of(signals: &[(libc::c_int, &'static str)]) {
    let mut noted = Vec::new();
    for &(signal, name) in signals {
        // SAFETY: sigaction with a null new action only reads the current one.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &raw mut action) == 0 {
                noted.push((signal, name, action));
            }
        }
    }
    if let Ok(mut slot) = NOTED.lock() {
        *slot = noted;
    }
}

/// Puts back every watched handler that differs from the noted one, reporting each signal
/// the first time; returns the names of the signals put back.
pub fn restore_replaced() -> Vec<&'static str> {
    let Ok(noted) = NOTED.lock() else {
        return Vec::new();
    };
    let mut restored = Vec::new();
    for &(signal, name, ref ours) in noted.iter() {
        // SAFETY: reads the current action, and writes back one this process installed.
        unsafe {
            let mut now: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &raw mut now) != 0
                || now.sa_sigaction == ours.sa_sigaction
            {
                continue;
            }
            libc::sigaction(signal, ours, std::ptr::null_mut());
        }
        restored.push(name);
        if crate::interference::first_report(crate::interference::Interference::ReplacedHandler(
            signal,
        )) {
            crate::say!(
                "labelfuzz: the target replaced the {name} handler; labelfuzz put its own back, \
                 since with the target's a {what} would go unseen. If the target needs its \
                 handler, install it only outside fuzzing builds (#[cfg(not(fuzzing))], or \
                 #ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION)",
                what = if signal == libc::SIGALRM {
                    "hang"
                } else {
                    "crash"
                },
            );
        }
    }
    restored
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn stand_in(_: libc::c_int) {}

    #[test]
    fn a_replaced_handler_is_put_back() {
        // SIGFPE: no other unit test of this crate handles it.
        // SAFETY: installs plain handlers for SIGFPE in a test process.
        unsafe {
            libc::signal(libc::SIGFPE, libc::SIG_DFL);
        }
        // Only SIGFPE is noted: other tests of this binary install SIGALRM handlers.
        note_handlers_of(&[(libc::SIGFPE, "SIGFPE")]);
        assert!(restore_replaced().is_empty(), "nothing replaced yet");
        // SAFETY: as above.
        unsafe {
            libc::signal(libc::SIGFPE, stand_in as *const () as libc::sighandler_t);
        }
        assert!(restore_replaced().contains(&"SIGFPE"));
        // SAFETY: reads the current action.
        let now = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGFPE, std::ptr::null(), &raw mut action);
            action.sa_sigaction
        };
        assert_eq!(now, libc::SIG_DFL, "ours is back");
    }
}
