//! Signal crash sites: which signal killed an execution, and where in the target.
//!
//! LibAFL's handler saves the reproducer and restarts the process, but does not say where the
//! fault was. We chain a handler in front of it that records the signal and the top frames of
//! the interrupted code inside the main executable (where the target is linked), as offsets from
//! the executable's load address: stable across runs despite ASLR, so the same bug gets the same
//! label in every process, and two bugs raising the same signal get two labels.

mod defer;
mod handler;
mod names;
mod sanitizer;
mod site;
mod starved;
mod watch;

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::OnceLock;

pub use defer::install_alarm_guard;
pub(crate) use defer::keep_timeouts_off_this_thread;
use names::is_fuzz_target_body;
pub use names::{in_standard_library, is_fuzzer_function, is_standard_library_function};
pub use sanitizer::{record_sanitizer_report, SanitizerReport};
use sanitizer::{SANITIZER_PENDING, SANITIZER_REPORT, SANITIZER_REPORTING};
pub use site::frame_lines;
pub use site::{
    collapse_recursion, current_stack, describe_frames, recursive_cycle, stack_lines, StackLine,
};
pub use watch::{note_handlers, restore_replaced as restore_replaced_handlers};

/// How close to the stack pointer a fault must be to count as a stack overflow.
const STACK_FAULT_DISTANCE: usize = 1 << 20;

/// The signals whose site is recorded.
pub(super) const SIGNALS: [libc::c_int; 6] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
    libc::SIGTRAP,
];

/// Functions that name a site: the faulting one and its nearest callers, recursion collapsed.
pub const SITE_FUNCTIONS: usize = 3;

/// Frames of the target recorded per crash, innermost first: enough to see a recursive parser's
/// whole path back to the entry (the label collapses the recursion) or a stack overflow's cycle.
pub const MAX_FRAMES: usize = 1024;
/// Frames the unwinder may report in all: the signal handler's own come first.
pub(super) const RAW_FRAMES: usize = MAX_FRAMES + 64;

pub(super) static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);
pub(super) static LAST_STACK_OVERFLOW: AtomicBool = AtomicBool::new(false);
/// The target's frames of the last signal (offsets in the executable), innermost first.
pub(super) static LAST_FRAMES: [AtomicUsize; MAX_FRAMES] =
    [const { AtomicUsize::new(0) }; MAX_FRAMES];
pub(super) static LAST_FRAME_COUNT: AtomicUsize = AtomicUsize::new(0);
pub(super) static LAST_FAULT_IN_EXE: AtomicBool = AtomicBool::new(false);
/// The unwinder's raw frames (instruction and stack pointers), static because the handler may
/// run on a small alternate stack.
pub(super) static RAW_IPS: [AtomicUsize; RAW_FRAMES] = [const { AtomicUsize::new(0) }; RAW_FRAMES];
pub(super) static RAW_SPS: [AtomicUsize; RAW_FRAMES] = [const { AtomicUsize::new(0) }; RAW_FRAMES];
pub(super) static EXE_BASE: AtomicUsize = AtomicUsize::new(0);
pub(super) static EXE_END: AtomicUsize = AtomicUsize::new(0);
pub(super) static EXE_START: AtomicUsize = AtomicUsize::new(0);
/// An address in the frame that calls the target: frames at or above it belong to the fuzzer,
/// whose call path (which stage ran the input) must not split one bug into several labels.
pub(super) static TARGET_ENTRY: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The handlers we chain to, by signal number (read lock-free from the handler).
pub(super) static PREVIOUS: [OnceLock<libc::sigaction>; 32] = [const { OnceLock::new() }; 32];

/// Where a signal was raised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignalSite {
    /// The signal number.
    pub signal: i32,
    /// Offsets of the target's frames in the main executable, innermost first: return
    /// addresses, after the faulting instruction when it is in the executable.
    pub frames: Vec<usize>,
    /// True when `frames[0]` is the faulting instruction itself (not a return address: the
    /// fault was in the executable, not in a shared library it called).
    pub faulted_in_executable: bool,
    /// A SIGSEGV whose fault address is next to the stack pointer: the stack ran out.
    pub stack_overflow: bool,
    /// Why the process aborted, when the abort was deliberate.
    pub cause: AbortCause,
}

/// Who raised the signal: the target's own fault, or labelfuzz or a sanitizer on its behalf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AbortCause {
    /// The target faulted (or aborted) by itself.
    Fault,
    /// A sanitizer reported a bug and aborted.
    Sanitizer(SanitizerReport),
    /// The target called `exit()`, which the exit guard turned into an abort.
    Exit,
    /// The memory watcher stopped an execution over `--rss-limit-mb`.
    OutOfMemory,
    /// The same, with the process already near the limit before the execution began: memory
    /// grew across executions (a leak), and the input alone may stay under the limit.
    MemoryGrowth,
}

/// The cause of an abort labelfuzz itself is about to raise (0: none, see [`note_abort`]).
/// Set from the target's entry to its return.
static TARGET_RUNNING: AtomicBool = AtomicBool::new(false);
/// Set from the target's panic until it is back in the fuzzer.
static TARGET_UNWINDING: AtomicBool = AtomicBool::new(false);
/// Counts the target's entries (see [`target_entries`]).
static TARGET_ENTRIES: AtomicU64 = AtomicU64::new(0);
/// Set while this process handles a crash signal (the handler ends the process).
static HANDLING_CRASH: AtomicBool = AtomicBool::new(false);
/// The thread that set `HANDLING_CRASH`.
static HANDLING_THREAD: AtomicI32 = AtomicI32::new(0);
/// Set when a memory interrupt landed in the allocator and was dropped: the watcher sends it
/// again.
static MEMORY_INTERRUPT_DROPPED: AtomicBool = AtomicBool::new(false);

/// Whether the last memory interrupt was dropped (it landed in the allocator); clears it.
#[must_use]
pub fn take_dropped_memory_interrupt() -> bool {
    MEMORY_INTERRUPT_DROPPED.swap(false, Ordering::SeqCst)
}
pub(super) static NOTED_ABORT: AtomicU8 = AtomicU8::new(0);
pub(super) const NOTED_EXIT: u8 = 1;
pub(super) const NOTED_OUT_OF_MEMORY: u8 = 2;
pub(super) const NOTED_MEMORY_GROWTH: u8 = 3;

/// Records why labelfuzz is about to abort the execution (before raising SIGABRT), so the crash
/// label names the cause rather than wherever the target happened to be.
pub fn note_abort(cause: &AbortCause) {
    let code = match cause {
        AbortCause::Exit => NOTED_EXIT,
        AbortCause::OutOfMemory => NOTED_OUT_OF_MEMORY,
        AbortCause::MemoryGrowth => NOTED_MEMORY_GROWTH,
        AbortCause::Fault | AbortCause::Sanitizer(_) => return,
    };
    NOTED_ABORT.store(code, Ordering::SeqCst);
}

extern "C" fn find_executable(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    _data: *mut c_void,
) -> libc::c_int {
    // SAFETY: the loader passes a valid `dl_phdr_info`; the first object is the main program.
    unsafe {
        let info = &*info;
        let (mut lo, mut hi) = (usize::MAX, 0usize);
        for i in 0..usize::from(info.dlpi_phnum) {
            let header = &*info.dlpi_phdr.add(i);
            if header.p_type == libc::PT_LOAD && header.p_flags & libc::PF_X != 0 {
                let start = info.dlpi_addr as usize + header.p_vaddr as usize;
                lo = lo.min(start);
                hi = hi.max(start + header.p_memsz as usize);
            }
        }
        EXE_BASE.store(info.dlpi_addr as usize, Ordering::Relaxed);
        EXE_START.store(lo, Ordering::Relaxed);
        EXE_END.store(hi, Ordering::Relaxed);
    }
    1 // stop after the main program
}

/// Finds where the executable is loaded, once per process (a process that never installed the
/// handlers, such as a supervisor writing reports, needs it to symbolize frames).
pub(super) fn locate_executable() {
    if EXE_END.load(Ordering::Relaxed) == 0 {
        // SAFETY: a plain libc call; the callback only reads the loader's headers.
        unsafe {
            libc::dl_iterate_phdr(Some(find_executable), std::ptr::null_mut());
        }
    }
}

/// Installs the site recorder in front of the current handlers (call after the executor is
/// built, so LibAFL's handlers are the ones chained to).
pub fn install() {
    // SAFETY: plain libc calls at start-up, before any signal of interest can be delivered.
    unsafe {
        libc::dl_iterate_phdr(Some(find_executable), std::ptr::null_mut());
        for signal in SIGNALS {
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &raw mut previous) != 0 {
                continue;
            }
            if previous.sa_sigaction == handler::record_site as *const () as usize {
                continue; // already installed in this process
            }
            let _ = PREVIOUS[signal as usize].set(previous);
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler::record_site as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
            action.sa_mask = previous.sa_mask;
            libc::sigaction(signal, &raw const action, std::ptr::null_mut());
        }
    }
}

/// Marks where the fuzzer calls the target: `frame_address` is the address of a local of the
/// calling function. Only frames below it (called by the target) make a crash site.
pub fn mark_target_entry(frame_address: usize) {
    TARGET_ENTRY.store(frame_address, Ordering::Relaxed);
    TARGET_ENTRIES.fetch_add(1, Ordering::Relaxed);
    starved::execution_starts();
    // Relaxed: read on this thread (its signal handlers) or by the watcher, which tolerates
    // a stale value for a poll; this runs once per execution.
    TARGET_RUNNING.store(true, Ordering::Relaxed);
}

/// Marks that the target returned (or unwound) to the fuzzer.
pub fn mark_target_exit() {
    TARGET_RUNNING.store(false, Ordering::Relaxed);
    TARGET_UNWINDING.store(false, Ordering::Relaxed);
}

/// Marks that the running target panicked: from now until it is back in the fuzzer its stack
/// is being unwound, and asynchronous signals must not walk it (see `defer`).
pub fn mark_target_unwinding() {
    TARGET_UNWINDING.store(true, Ordering::Relaxed);
}

/// Whether the running target is unwinding from a panic (see [`mark_target_unwinding`]).
fn target_unwinding() -> bool {
    TARGET_UNWINDING.load(Ordering::Relaxed)
}

/// Whether the target is running now. A plain atomic, readable from signal handlers, the exit
/// guard and the memory watcher's thread.
#[must_use]
pub fn target_running() -> bool {
    TARGET_RUNNING.load(Ordering::Relaxed)
}

/// How many times the target was entered in this process: names one execution, so that the
/// memory watcher interrupts each at most once.
#[must_use]
pub fn target_entries() -> u64 {
    TARGET_ENTRIES.load(Ordering::Relaxed)
}

/// Marks that this process is saving a crash or timeout, so that memory interrupts are dropped
/// until [`end_crash_handling`]; returns whether it already was (a nested entry leaves the
/// mark to the outer one).
pub(super) fn begin_crash_handling() -> bool {
    let already_handling = HANDLING_CRASH.swap(true, Ordering::SeqCst);
    if !already_handling {
        // SAFETY: gettid has no preconditions and is async-signal-safe.
        HANDLING_THREAD.store(unsafe { libc::gettid() }, Ordering::SeqCst);
    }
    already_handling
}

/// Ends what [`begin_crash_handling`] began, given what it returned.
pub(super) fn end_crash_handling(already_handling: bool) {
    if !already_handling {
        HANDLING_CRASH.store(false, Ordering::SeqCst);
    }
}

/// Interrupts the target's thread because it went over the memory limit (`grew_across_executions`:
/// the process was near the limit before this execution began): notes the cause, then
/// sends SIGABRT, which LibAFL's handler turns into a saved `oom` reproducer and a restart.
///
/// Does nothing while a crash is being saved: naming that crash takes memory of its own (reading
/// debug information), which is the fuzzer's, not the target's.
pub fn interrupt_for_memory(thread: libc::pthread_t, grew_across_executions: bool) {
    if HANDLING_CRASH.load(Ordering::SeqCst) {
        return;
    }
    note_abort(&if grew_across_executions {
        AbortCause::MemoryGrowth
    } else {
        AbortCause::OutOfMemory
    });
    // Queued with a tag, so that the handler tells it from an abort() of the process's own
    // (which a stale note of the watcher's would otherwise have it drop).
    let tag = libc::sigval {
        sival_ptr: MEMORY_INTERRUPT_TAG as *mut libc::c_void,
    };
    // SAFETY: the caller passes a thread that lives as long as the process.
    unsafe {
        if libc::pthread_sigqueue(thread, libc::SIGABRT, tag) != 0 {
            // A full signal queue: untagged, it is taken for the target's own abort.
            libc::pthread_kill(thread, libc::SIGABRT);
        }
    }
}

/// The value the memory watcher's SIGABRT carries.
const MEMORY_INTERRUPT_TAG: usize = 0x006c_666d_656d;

/// Whether `info` describes a SIGABRT this process sent to itself for the memory limit.
unsafe fn is_memory_interrupt(signal: libc::c_int, info: *const libc::siginfo_t) -> bool {
    if signal != libc::SIGABRT || info.is_null() {
        return false;
    }
    // SAFETY: the kernel passes a valid siginfo to SA_SIGINFO handlers; `si_pid` and
    // `si_value` are meaningful for SI_QUEUE, which is what pthread_sigqueue sends.
    unsafe {
        (*info).si_code == libc::SI_QUEUE
            && (*info).si_pid() == libc::getpid()
            && (*info).si_value().sival_ptr as usize == MEMORY_INTERRUPT_TAG
            && matches!(
                NOTED_ABORT.load(Ordering::SeqCst),
                NOTED_OUT_OF_MEMORY | NOTED_MEMORY_GROWTH
            )
    }
}

/// Forgets the last signal (before each execution).
pub fn clear() {
    LAST_SIGNAL.store(0, Ordering::Relaxed);
    LAST_STACK_OVERFLOW.store(false, Ordering::Relaxed);
    SANITIZER_PENDING.store(false, Ordering::Relaxed);
    SANITIZER_REPORTING.store(false, Ordering::Relaxed);
    // An out-of-memory note stays: the watcher's signal may land after the execution it meant.
    let _ = NOTED_ABORT.compare_exchange(NOTED_EXIT, 0, Ordering::SeqCst, Ordering::Relaxed);
}

/// The site of the signal that ended the last execution, if one did.
#[must_use]
pub fn take_site() -> Option<SignalSite> {
    let signal = LAST_SIGNAL.swap(0, Ordering::Relaxed);
    if signal == 0 {
        return None;
    }
    if SANITIZER_PENDING.swap(false, Ordering::Acquire) {
        if let Some((report, frames)) = SANITIZER_REPORT.lock().ok().and_then(|mut r| r.take()) {
            return Some(SignalSite {
                signal,
                frames,
                faulted_in_executable: false,
                stack_overflow: false,
                cause: AbortCause::Sanitizer(report),
            });
        }
    }
    let cause = match NOTED_ABORT.swap(0, Ordering::SeqCst) {
        NOTED_EXIT => AbortCause::Exit,
        NOTED_OUT_OF_MEMORY => AbortCause::OutOfMemory,
        NOTED_MEMORY_GROWTH => AbortCause::MemoryGrowth,
        _ => AbortCause::Fault,
    };
    let frames = if matches!(cause, AbortCause::OutOfMemory | AbortCause::MemoryGrowth) {
        Vec::new()
    } else {
        let count = LAST_FRAME_COUNT.load(Ordering::Relaxed).min(MAX_FRAMES);
        LAST_FRAMES[..count]
            .iter()
            .map(|f| f.load(Ordering::Relaxed))
            .collect()
    };
    Some(SignalSite {
        signal,
        frames,
        faulted_in_executable: LAST_FAULT_IN_EXE.load(Ordering::Relaxed),
        stack_overflow: LAST_STACK_OVERFLOW.swap(false, Ordering::Relaxed),
        cause,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicI8;

    /// What the test handler decided for the last SIGABRT: 1 the watcher's, 0 not, -1 none yet.
    static SEEN: AtomicI8 = AtomicI8::new(-1);

    extern "C" fn classify(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut c_void) {
        // SAFETY: the kernel's siginfo for this signal.
        let memory = unsafe { is_memory_interrupt(signal, info) };
        SEEN.store(i8::from(memory), Ordering::SeqCst);
    }

    #[test]
    fn the_watchers_abort_is_told_from_the_processs_own_while_its_note_stands() {
        // SAFETY: a handler of this test's for SIGABRT, put back at the end; the signals are
        // sent to this thread and handled before the calls return.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = classify as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO;
            let mut previous: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGABRT, &raw const action, &raw mut previous);
            interrupt_for_memory(libc::pthread_self(), false);
            assert_eq!(
                SEEN.swap(-1, Ordering::SeqCst),
                1,
                "the watcher's interrupt"
            );
            // abort() raises SIGABRT the same way (tgkill); the watcher's note still stands.
            assert_eq!(NOTED_ABORT.load(Ordering::SeqCst), NOTED_OUT_OF_MEMORY);
            libc::raise(libc::SIGABRT);
            assert_eq!(
                SEEN.swap(-1, Ordering::SeqCst),
                0,
                "the process's own abort"
            );
            NOTED_ABORT.store(0, Ordering::SeqCst);
            libc::sigaction(libc::SIGABRT, &raw const previous, std::ptr::null_mut());
        }
    }
}
