//! What a target does to the process around it that would break fuzzing, put back and reported
//! once per run.
//!
//! The target runs inside the fuzzing process, so whatever it changes there the fuzzer lives
//! with: signal handlers it replaces (see `signals::watch`), standard descriptors it closes
//! (the fuzzer's messages would vanish), resource limits it lowers (a lowered file-size limit
//! kills the process with SIGXFSZ when the next reproducer is written; a lowered descriptor
//! limit makes every save fail), and children it forks, which inherit the fuzzer's crash
//! handlers and must not record crashes of their own. Each is checked after the target's 1st,
//! 2nd, 4th... execution, before a reproducer or any other file is written, and when a crash is
//! being saved from a signal; what was changed is put back and said once, and `summary.json`
//! lists it under `target_interference`.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::OnceLock;

/// Something the target did to the fuzzing process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interference {
    /// It installed its own handler for this signal.
    ReplacedHandler(libc::c_int),
    /// It closed this standard descriptor (0, 1 or 2).
    ClosedDescriptor(libc::c_int),
    /// It lowered this resource limit (an index into [`LIMITS`]).
    LoweredLimit(usize),
    /// A process it forked crashed (with the fuzzer's handlers still installed).
    CrashInForkedChild,
}

/// The resource limits fuzzing depends on: the descriptors and file sizes saving takes, and
/// the memory the fuzzer allocates.
pub const LIMITS: [(libc::__rlimit_resource_t, &str, &str); 4] = [
    (libc::RLIMIT_NOFILE, "RLIMIT_NOFILE", "open files"),
    (libc::RLIMIT_FSIZE, "RLIMIT_FSIZE", "file size"),
    (libc::RLIMIT_AS, "RLIMIT_AS", "address space"),
    (libc::RLIMIT_DATA, "RLIMIT_DATA", "data segment"),
];

const STANDARD_NAMES: [&str; 3] = ["stdin", "stdout", "stderr"];

impl Interference {
    /// Its bit in the reported set: signals 1–31, descriptors 32–34, limits 40–43, 48.
    fn bit(self) -> u64 {
        let index = match self {
            Interference::ReplacedHandler(signal) => signal.unsigned_abs() % 32,
            Interference::ClosedDescriptor(fd) => 32 + fd.unsigned_abs() % 3,
            Interference::LoweredLimit(index) => 40 + (index as u32) % 8,
            Interference::CrashInForkedChild => 48,
        };
        1u64 << index
    }

    /// What the target did, as `summary.json` and the report say it.
    #[must_use]
    pub fn describe(self) -> String {
        match self {
            Interference::ReplacedHandler(signal) => {
                format!("replaced the {} handler", signal_name(signal))
            }
            Interference::ClosedDescriptor(fd) => format!(
                "closed descriptor {fd} ({})",
                STANDARD_NAMES[fd.unsigned_abs() as usize % 3]
            ),
            Interference::LoweredLimit(index) => {
                format!("lowered {}", LIMITS[index % LIMITS.len()].1)
            }
            Interference::CrashInForkedChild => "crashed in a process it forked".to_string(),
        }
    }

    fn every() -> impl Iterator<Item = Interference> {
        (1..32)
            .map(Interference::ReplacedHandler)
            .chain((0..3).map(Interference::ClosedDescriptor))
            .chain((0..LIMITS.len()).map(Interference::LoweredLimit))
            .chain([Interference::CrashInForkedChild])
    }
}

/// A signal's name as labels and messages give it: `SIGSEGV`, or `signal 34`.
#[must_use]
pub fn signal_name(signal: libc::c_int) -> String {
    match signal {
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGILL => "SIGILL".into(),
        libc::SIGFPE => "SIGFPE".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGALRM => "SIGALRM".into(),
        libc::SIGTRAP => "SIGTRAP".into(),
        other => format!("signal {other}"),
    }
}

/// What was reported in this process.
static REPORTED_HERE: AtomicU64 = AtomicU64::new(0);
/// The same bits in memory shared by every process of the run (see [`share_reports`]).
static REPORTED_IN_RUN: OnceLock<&'static AtomicU64> = OnceLock::new();

/// Makes reports once per run rather than once per process: call it in the run's first
/// process, before it forks the fuzzing processes (a crash restarts one).
pub fn share_reports() {
    let Some(page) = crate::process::shared_page() else {
        return;
    };
    // SAFETY: the page is never unmapped, and zeroed, page-aligned memory is a valid AtomicU64.
    let shared = unsafe { page.cast::<AtomicU64>().as_ref() };
    let _ = REPORTED_IN_RUN.set(shared);
}

fn reported_set() -> &'static AtomicU64 {
    REPORTED_IN_RUN.get().copied().unwrap_or(&REPORTED_HERE)
}

/// Marks `what` reported; whether it was not before. Async-signal-safe.
pub fn first_report(what: Interference) -> bool {
    let bit = what.bit();
    reported_set().fetch_or(bit, Ordering::Relaxed) & bit == 0
}

/// Everything reported so far in the run, for `summary.json`.
#[must_use]
pub fn reported() -> Vec<String> {
    let bits = reported_set().load(Ordering::Relaxed);
    Interference::every()
        .filter(|what| bits & what.bit() != 0)
        .map(Interference::describe)
        .collect()
}

/// The fuzzing process (its children are not).
static FUZZING_PROCESS: AtomicI32 = AtomicI32::new(0);
/// Copies of the standard descriptors as the fuzzer left them (-1: none), to put back.
static STANDARD_COPIES: [AtomicI32; 3] = [const { AtomicI32::new(-1) }; 3];
/// The soft limits noted, by [`LIMITS`] index (0: not noted; `RLIM_INFINITY` is `u64::MAX`).
static NOTED_LIMITS: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];
static NOTED: AtomicBool = AtomicBool::new(false);

/// Notes this process as the fuzzing process, copies its standard descriptors and notes its
/// resource limits: call once the fuzzer has set them up (after `-close_fd_mask`).
pub fn note_surroundings() {
    // SAFETY: getpid, fcntl and getrlimit on this process's own descriptors and limits.
    unsafe {
        FUZZING_PROCESS.store(libc::getpid(), Ordering::SeqCst);
        for (fd, copy) in (0..).zip(&STANDARD_COPIES) {
            if copy.load(Ordering::SeqCst) >= 0 {
                continue;
            }
            let duplicate = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 100);
            copy.store(duplicate, Ordering::SeqCst);
        }
        for ((resource, _, _), noted) in LIMITS.iter().zip(&NOTED_LIMITS) {
            let mut limit: libc::rlimit = std::mem::zeroed();
            if libc::getrlimit(*resource, &raw mut limit) == 0 {
                noted.store(limit.rlim_cur, Ordering::SeqCst);
            }
        }
    }
    NOTED.store(true, Ordering::SeqCst);
}

/// Whether this is a process the target forked from the fuzzing process: its crashes and
/// exits are its own, not an execution's.
#[must_use]
pub fn in_forked_child() -> bool {
    let fuzzing = FUZZING_PROCESS.load(Ordering::Relaxed);
    // SAFETY: getpid has no preconditions and is async-signal-safe.
    fuzzing != 0 && fuzzing != unsafe { libc::getpid() }
}

/// Puts back the standard descriptors the target closed and the resource limits it lowered,
/// saying so the first time in the run. Async-signal-safe: it allocates nothing and writes its
/// messages with `write`.
pub fn put_back() {
    if !NOTED.load(Ordering::Relaxed) || in_forked_child() {
        return;
    }
    put_back_descriptors();
    put_back_limits();
}

fn put_back_descriptors() {
    // All are opened again before any is reported: the report goes to descriptor 2.
    let mut reopened = [false; 3];
    for ((fd, copy), reopened) in (0..).zip(&STANDARD_COPIES).zip(&mut reopened) {
        let copy = copy.load(Ordering::Relaxed);
        // SAFETY: fcntl(F_GETFD) only asks whether the descriptor is open; dup2 re-opens it on
        // the fuzzer's own copy.
        let closed = copy >= 0
            && unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF);
        *reopened = closed && unsafe { libc::dup2(copy, fd) } >= 0;
    }
    for (fd, reopened) in (0..).zip(reopened) {
        if !reopened || !first_report(Interference::ClosedDescriptor(fd)) {
            continue;
        }
        crate::console::say_from_signal_handler(&[
            b"labelfuzz: the target closed descriptor ",
            crate::console::decimal(fd.unsigned_abs()).as_bytes(),
            b" (",
            STANDARD_NAMES[fd.unsigned_abs() as usize].as_bytes(),
            b"); labelfuzz opened it again where it pointed, so that the run's messages and \
              the target's own are not lost. To silence the target, run with -close_fd_mask=3 \
              instead",
        ]);
    }
}

fn put_back_limits() {
    // All are put back before any is reported: the report itself writes, and stderr may be
    // a file the lowered file-size limit applies to.
    let mut lowered: [Option<(u64, bool)>; LIMITS.len()] = [None; LIMITS.len()];
    for (((resource, _, _), noted), slot) in LIMITS.iter().zip(&NOTED_LIMITS).zip(&mut lowered) {
        let noted = noted.load(Ordering::Relaxed);
        // SAFETY: getrlimit and setrlimit on this process's own limits.
        unsafe {
            let mut limit: libc::rlimit = std::mem::zeroed();
            if noted == 0
                || libc::getrlimit(*resource, &raw mut limit) != 0
                || limit.rlim_cur >= noted
            {
                continue;
            }
            let lowered_to = limit.rlim_cur;
            limit.rlim_cur = noted.min(limit.rlim_max);
            let raised =
                libc::setrlimit(*resource, &raw const limit) == 0 && limit.rlim_cur == noted;
            *slot = Some((lowered_to, raised));
        }
    }
    for (index, ((_, name, what), lowered)) in LIMITS.iter().zip(lowered).enumerate() {
        let Some((lowered_to, raised)) = lowered else {
            continue;
        };
        if !first_report(Interference::LoweredLimit(index)) {
            continue;
        }
        crate::console::say_from_signal_handler(&[
            b"labelfuzz: the target lowered ",
            name.as_bytes(),
            b" (",
            what.as_bytes(),
            b") to ",
            crate::console::decimal(u32::try_from(lowered_to).unwrap_or(u32::MAX)).as_bytes(),
            if raised {
                b"; labelfuzz put it back, since the fuzzer must write reproducers and \
                  allocate under the limit it started with. Lower it only outside fuzzing \
                  builds"
            } else {
                b", with its hard limit too, which labelfuzz cannot raise again: saving \
                  reproducers may fail from now on. Lower it only outside fuzzing builds"
            },
        ]);
    }
}

/// In a process the target forked, a crash signal: the fuzzer's handlers must not save it as
/// the execution's (the child would write files and talk to the broker as if it were the
/// fuzzing process). The signal takes its default action, as it would without the fuzzer;
/// said once per run. Async-signal-safe.
///
/// # Safety
/// Call only from the handler of `signal`.
pub unsafe fn crash_in_forked_child(signal: libc::c_int) {
    if first_report(Interference::CrashInForkedChild) {
        crate::console::say_from_signal_handler(&[
            b"labelfuzz: a process the target forked got signal ",
            crate::console::decimal(signal.unsigned_abs()).as_bytes(),
            b"; only the fuzzing process's own crashes are recorded, so it takes its default \
              action",
        ]);
    }
    // SAFETY: signal, sigprocmask and raise are async-signal-safe; the default action ends
    // the child (a fault re-executes and faults again once the handler returns).
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        let mut unblock: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut unblock);
        libc::sigaddset(&raw mut unblock, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &raw const unblock, std::ptr::null_mut());
        libc::raise(signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_interference_has_its_own_bit_and_a_name() {
        let all: Vec<Interference> = Interference::every().collect();
        let mut bits: Vec<u64> = all.iter().map(|what| what.bit()).collect();
        bits.sort_unstable();
        bits.dedup();
        assert_eq!(bits.len(), all.len());
        assert_eq!(
            Interference::ReplacedHandler(libc::SIGSEGV).describe(),
            "replaced the SIGSEGV handler"
        );
        assert_eq!(
            Interference::ClosedDescriptor(2).describe(),
            "closed descriptor 2 (stderr)"
        );
        assert_eq!(
            Interference::LoweredLimit(1).describe(),
            "lowered RLIMIT_FSIZE"
        );
    }

    #[test]
    fn a_lowered_limit_is_put_back() {
        // RLIMIT_FSIZE: nothing else in the unit tests changes it.
        // SAFETY: getrlimit/setrlimit on the test process.
        let original = unsafe {
            let mut limit: libc::rlimit = std::mem::zeroed();
            libc::getrlimit(libc::RLIMIT_FSIZE, &raw mut limit);
            limit
        };
        note_surroundings();
        let lowered = libc::rlimit {
            rlim_cur: 1 << 20,
            rlim_max: original.rlim_max,
        };
        // SAFETY: as above.
        unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &raw const lowered) };
        put_back();
        // SAFETY: as above.
        let now = unsafe {
            let mut limit: libc::rlimit = std::mem::zeroed();
            libc::getrlimit(libc::RLIMIT_FSIZE, &raw mut limit);
            limit
        };
        assert_eq!(now.rlim_cur, original.rlim_cur);
        assert!(reported().contains(&"lowered RLIMIT_FSIZE".to_string()));
    }
}
