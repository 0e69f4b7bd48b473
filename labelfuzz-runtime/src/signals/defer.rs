//! Signals that must not land inside the allocator or the unwinder.
//!
//! LibAFL saves a timeout's input from inside its SIGALRM handler, and that allocates. When the
//! timer fires while the target is inside `malloc` or `free`, the allocator's lock is held by
//! the interrupted code, and the handler waits on it forever: the fuzzing process hangs (seen
//! on SQLite, whose slow inputs free a lot). The same holds for the memory watcher's SIGABRT.
//! Finding out where the target was means walking its stack with libgcc's unwinder, which is not
//! reentrant: when the signal lands while the target itself unwinds (a panic on its way to
//! `catch_unwind`, a backtrace being captured), the nested walk corrupts the unwinder's cache
//! of loaded objects and the handler faults (seen on the planted target, whose known panics
//! run thousands of times a second, when LibAFL's batched timer ticked during one).
//! Both signals are asynchronous, so they can wait: a guard in front of LibAFL's SIGALRM handler
//! re-arms a short timer and returns while the interrupted code is in the allocator or the
//! unwinder, and the site recorder drops a memory interrupt there (the watcher sends it again).

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Entry points of the C allocator: a frame in one of them means its lock may be held.
const ALLOCATOR_FUNCTIONS: [&str; 14] = [
    "malloc",
    "free",
    "realloc",
    "calloc",
    "cfree",
    "memalign",
    "aligned_alloc",
    "posix_memalign",
    "valloc",
    "pvalloc",
    "__libc_malloc",
    "__libc_free",
    "__libc_realloc",
    "__libc_calloc",
];

/// How many innermost frames of the interrupted code are looked at.
const FRAMES_LOOKED_AT: usize = 24;
/// How long a deferred timeout waits before it is tried again.
const RETRY_MICROS: u64 = 2_000;
/// After this many retries in one execution the timeout is delivered whatever the target does
/// (a target stuck inside its allocator for good is a hang too).
const MAX_RETRIES: u32 = 2_500;

/// LibAFL's SIGALRM handler, which the guard hands timeouts to.
static PREVIOUS_ALARM: OnceLock<libc::sigaction> = OnceLock::new();
/// The execution a deferred timeout belongs to (`target_entries` then), and the retries so far.
static DEFERRED_FOR: AtomicU64 = AtomicU64::new(0);
static RETRIES: AtomicU32 = AtomicU32::new(0);

/// Where the unwinder is loaded (libgcc_s), when that is not the executable itself (a static
/// build): 0 until [`install_alarm_guard`] looks it up.
static UNWINDER_OBJECT: AtomicUsize = AtomicUsize::new(0);

extern "C" {
    // Only its address is taken, to find the object the unwinder lives in.
    fn _Unwind_Backtrace();
}

/// The base address of the loaded object that holds `address`, 0 if none.
fn object_base(address: usize) -> usize {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables; `info` is a valid out-parameter.
    if unsafe { libc::dladdr(address as *const c_void, &raw mut info) } == 0 {
        return 0;
    }
    info.dli_fbase as usize
}

/// Looks up, once, which loaded object holds the unwinder.
fn find_unwinder_object() {
    let unwinder = object_base(_Unwind_Backtrace as *const () as usize);
    let executable = object_base(find_unwinder_object as *const () as usize);
    if unwinder != executable {
        UNWINDER_OBJECT.store(unwinder, Ordering::Relaxed);
    }
}

/// Whether saving must wait: the code the signal interrupted (at `pc`) is unwinding (the target
/// panicked, or `pc` is inside the unwinder), where walking its stack would corrupt the
/// unwinder, or inside the C allocator, whose lock saving would wait on.
pub(super) fn saving_must_wait(pc: usize) -> bool {
    if super::target_unwinding() {
        return true;
    }
    let unwinder = UNWINDER_OBJECT.load(Ordering::Relaxed);
    if unwinder != 0 && object_base(pc) == unwinder {
        return true;
    }
    interrupted_in_allocator(pc)
}

/// Whether the code the signal interrupted is inside the C allocator: walks its innermost
/// frames (the unwinder crosses the signal frame) and names each with `dladdr`.
fn interrupted_in_allocator(pc: usize) -> bool {
    let mut frames = [0usize; 64];
    let mut count = 0;
    // SAFETY: the unsynchronized walk is what the site recorder already does in a handler.
    unsafe {
        backtrace::trace_unsynchronized(|frame| {
            frames[count] = frame.ip() as usize;
            count += 1;
            count < frames.len()
        });
    }
    let start = frames[..count].iter().position(|&ip| ip == pc).unwrap_or(0);
    frames[start..count]
        .iter()
        .take(FRAMES_LOOKED_AT)
        .any(|&ip| in_allocator_function(ip))
}

fn in_allocator_function(ip: usize) -> bool {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables; `info` is a valid out-parameter.
    if unsafe { libc::dladdr(ip as *const c_void, &raw mut info) } == 0 || info.dli_sname.is_null()
    {
        return false;
    }
    // SAFETY: dladdr returned a NUL-terminated symbol name.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_sname) }.to_bytes();
    ALLOCATOR_FUNCTIONS.iter().any(|f| f.as_bytes() == name)
}

/// Arms the process's real-time interval timer once, `micros` from now (SIGALRM again).
fn arm_retry(micros: u64) {
    let timer = libc::itimerval {
        it_interval: libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
        it_value: libc::timeval {
            tv_sec: (micros / 1_000_000) as libc::time_t,
            tv_usec: (micros % 1_000_000) as libc::suseconds_t,
        },
    };
    // SAFETY: setitimer with a valid value; ITIMER_REAL is not LibAFL's timer (a POSIX timer).
    unsafe { libc::setitimer(libc::ITIMER_REAL, &raw const timer, std::ptr::null_mut()) };
}

/// Sends a timer's `signal` on to the fuzzing thread when it landed on another one; returns
/// whether it did. Both timers signal the process, not a thread: while the fuzzing thread has
/// a signal pending, the kernel hands the next one to any other thread (one the target
/// started). There the fuzzing thread's scheduler statistics miss the wait it is in the middle
/// of, so a starved execution looked like a hang, and LibAFL would save a timeout beside a
/// target that is still running. A signal sent to a thread (`raise`, `tgkill`) stays there.
fn forwarded_to_fuzzing_thread(signal: libc::c_int, code: libc::c_int) -> bool {
    if code != libc::SI_TIMER && code != libc::SI_KERNEL {
        return false;
    }
    let fuzzing = super::starved::fuzzing_thread();
    // SAFETY: gettid has no preconditions.
    if fuzzing == 0 || unsafe { libc::gettid() } == fuzzing {
        return false;
    }
    // SAFETY: tgkill with this process's id; a thread id that is not ours (a child the target
    // forked keeps the parent's) fails with ESRCH and the signal is handled here.
    unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), fuzzing, signal) == 0 }
}

/// Keeps the timeout signals off the calling thread (a helper thread of the fuzzer), so that
/// the kernel never hands it one meant for the fuzzing thread.
pub(crate) fn keep_timeouts_off_this_thread() {
    // SAFETY: the set is built here; pthread_sigmask changes only the calling thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::sigaddset(&raw mut set, libc::SIGALRM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &raw const set, std::ptr::null_mut());
    }
}

extern "C" fn guard_alarm(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    // SAFETY: the kernel passes a valid siginfo to SA_SIGINFO handlers.
    let code = if info.is_null() {
        0
    } else {
        unsafe { (*info).si_code }
    };
    if forwarded_to_fuzzing_thread(signal, code) {
        return;
    }
    let execution = super::target_entries();
    // LibAFL's timer is a POSIX timer (SI_TIMER); the retry timer is the interval timer. One
    // forwarded from another thread (SI_TKILL) no longer says which it was, and two forwarded
    // while the first is pending merge into one: it is taken as the retry when one is armed
    // for this execution (deciding a little early), else as LibAFL's timer.
    let retry = match code {
        libc::SI_KERNEL => true,
        libc::SI_TKILL => execution != 0 && DEFERRED_FOR.load(Ordering::Relaxed) == execution,
        _ => false,
    };
    if retry {
        if DEFERRED_FOR.swap(0, Ordering::Relaxed) != execution || !super::target_running() {
            return; // armed for an execution that has ended since: nothing to time out
        }
    } else {
        if DEFERRED_FOR.load(Ordering::Relaxed) == execution && super::target_running() {
            return; // a retry is armed for this execution: it decides
        }
        RETRIES.store(0, Ordering::Relaxed);
    }
    if super::target_running() {
        if let super::starved::Verdict::WatchFor(nanos) = super::starved::verdict(execution) {
            DEFERRED_FOR.store(execution, Ordering::Relaxed);
            arm_retry(nanos / 1_000);
            return;
        }
    }
    if super::target_running() && RETRIES.load(Ordering::Relaxed) < MAX_RETRIES {
        // SAFETY: the kernel passes a valid context to SA_SIGINFO handlers.
        let (pc, _) = unsafe { super::handler::interrupted_pc_sp(context) };
        if saving_must_wait(pc) {
            RETRIES.fetch_add(1, Ordering::Relaxed);
            DEFERRED_FOR.store(execution, Ordering::Relaxed);
            arm_retry(RETRY_MICROS);
            return;
        }
    }
    if let Some(previous) = PREVIOUS_ALARM.get() {
        if previous.sa_flags & libc::SA_SIGINFO != 0 {
            // SAFETY: LibAFL's handler, installed with SA_SIGINFO, takes these arguments.
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut c_void) =
                unsafe { std::mem::transmute(previous.sa_sigaction) };
            // Saving a timeout serializes the whole state, and the target may hold most of the
            // memory limit: the watcher's interrupt must not land in the middle of that (LibAFL
            // would take it for a crash of its own and wait on stdin for good).
            let saving = super::begin_crash_handling();
            handler(signal, info, context);
            super::end_crash_handling(saving);
        }
    }
}

/// Puts the allocator guard in front of the current SIGALRM handler (call after the executor
/// is built, so that LibAFL's timeout handler is the one guarded, on the fuzzing thread), with
/// the executions' `timeout`.
pub fn install_alarm_guard(timeout: std::time::Duration) {
    find_unwinder_object();
    super::starved::set_up(timeout);
    // SAFETY: plain sigaction calls at start-up.
    unsafe {
        let mut previous: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGALRM, std::ptr::null(), &raw mut previous) != 0 {
            return;
        }
        if previous.sa_sigaction == guard_alarm as *const () as usize
            || previous.sa_flags & libc::SA_SIGINFO == 0
        {
            return; // already guarded, or not LibAFL's handler
        }
        let _ = PREVIOUS_ALARM.set(previous);
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = guard_alarm as *const () as usize;
        action.sa_flags = previous.sa_flags;
        action.sa_mask = previous.sa_mask;
        libc::sigaction(libc::SIGALRM, &raw const action, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU8;

    /// What the stand-in for LibAFL's timeout handler saw: 0 not run, 1 memory interrupts
    /// allowed, 2 memory interrupts held off.
    static SEEN_WHILE_SAVING: AtomicU8 = AtomicU8::new(0);

    extern "C" fn save_timeout(_: libc::c_int, _: *mut libc::siginfo_t, _: *mut c_void) {
        let held_off = super::super::HANDLING_CRASH.load(Ordering::SeqCst);
        SEEN_WHILE_SAVING.store(if held_off { 2 } else { 1 }, Ordering::SeqCst);
    }

    #[inline(never)]
    fn an_ordinary_function() -> usize {
        std::hint::black_box(an_ordinary_function as *const () as usize)
    }

    #[test]
    fn saving_waits_while_the_target_unwinds_or_the_unwinder_runs() {
        find_unwinder_object();
        let ordinary = an_ordinary_function() + 1;
        assert!(
            !saving_must_wait(ordinary),
            "a plain function can be walked"
        );
        // Inside the unwinder (libgcc_s here): say, halfway through installing a landing pad.
        assert!(saving_must_wait(
            _Unwind_Backtrace as *const () as usize + 1
        ));
        super::super::TARGET_UNWINDING.store(true, Ordering::Relaxed);
        let while_unwinding = saving_must_wait(ordinary);
        super::super::TARGET_UNWINDING.store(false, Ordering::Relaxed);
        assert!(while_unwinding, "a panicking target is not walked");
    }

    #[test]
    fn memory_interrupts_are_held_off_while_a_timeout_is_saved() {
        // SAFETY: installs a handler for SIGALRM, which no other unit test uses.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = save_timeout as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&raw mut action.sa_mask);
            assert_eq!(
                libc::sigaction(libc::SIGALRM, &raw const action, std::ptr::null_mut()),
                0
            );
        }
        install_alarm_guard(std::time::Duration::from_secs(3600));
        // SAFETY: the handler above runs on this thread before raise returns.
        assert_eq!(unsafe { libc::raise(libc::SIGALRM) }, 0);
        assert_eq!(SEEN_WHILE_SAVING.load(Ordering::SeqCst), 2);
        assert!(
            !super::super::HANDLING_CRASH.load(Ordering::SeqCst),
            "a timeout handler that returns lets memory interrupts through again"
        );
    }
}
