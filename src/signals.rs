//! Signal crash sites: which signal killed an execution, and where in the target.
//!
//! LibAFL's handler saves the reproducer and restarts the process, but does not say where the
//! fault was. We chain a handler in front of it that records the signal and the top frames of
//! the interrupted code inside the main executable (where the target is linked), as offsets from
//! the executable's load address: stable across runs despite ASLR, so the same bug gets the same
//! label in every process, and two bugs raising the same signal get two labels.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// The signals whose site is recorded.
const SIGNALS: [libc::c_int; 6] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
    libc::SIGTRAP,
];

/// Frames of the interrupted code that name a site (as ASan and libFuzzer dedup by top frames).
pub const SITE_FRAMES: usize = 3;

static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);
static LAST_STACK_OVERFLOW: AtomicBool = AtomicBool::new(false);
static LAST_FRAMES: [AtomicUsize; SITE_FRAMES] = [const { AtomicUsize::new(0) }; SITE_FRAMES];
static EXE_BASE: AtomicUsize = AtomicUsize::new(0);
static EXE_END: AtomicUsize = AtomicUsize::new(0);
static EXE_START: AtomicUsize = AtomicUsize::new(0);
/// An address in the frame that calls the target: frames at or above it belong to the fuzzer,
/// whose call path (which stage ran the input) must not split one bug into several labels.
static TARGET_ENTRY: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The handlers we chain to, by signal number (read lock-free from the handler).
static PREVIOUS: [OnceLock<libc::sigaction>; 32] = [const { OnceLock::new() }; 32];

/// Where a signal was raised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignalSite {
    /// The signal number.
    pub signal: i32,
    /// Offsets of the top frames in the main executable (innermost first).
    pub frames: Vec<usize>,
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
}

/// The cause of an abort labelfuzz itself is about to raise (0: none, see [`note_abort`]).
static NOTED_ABORT: AtomicU8 = AtomicU8::new(0);
const NOTED_EXIT: u8 = 1;
const NOTED_OUT_OF_MEMORY: u8 = 2;

/// Records why labelfuzz is about to abort the execution (before raising SIGABRT), so the crash
/// label names the cause rather than wherever the target happened to be.
pub fn note_abort(cause: &AbortCause) {
    let code = match cause {
        AbortCause::Exit => NOTED_EXIT,
        AbortCause::OutOfMemory => NOTED_OUT_OF_MEMORY,
        AbortCause::Fault | AbortCause::Sanitizer(_) => return,
    };
    NOTED_ABORT.store(code, Ordering::SeqCst);
}

/// A sanitizer's report of the bug that is about to abort the process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SanitizerReport {
    /// The sanitizer, e.g. `AddressSanitizer`.
    pub tool: String,
    /// The bug type, e.g. `heap-buffer-overflow`.
    pub bug: String,
}

static SANITIZER_REPORT: Mutex<Option<(SanitizerReport, Vec<usize>)>> = Mutex::new(None);
static SANITIZER_PENDING: AtomicBool = AtomicBool::new(false);

/// Names of functions that belong to sanitizer runtimes or to this reporting path, not to the
/// target: the site of a sanitizer report is the first frame after them.
const RUNTIME_FRAME_PREFIXES: [&str; 11] = [
    "__asan",
    "__sanitizer",
    "__interceptor",
    "___interceptor",
    "__ubsan",
    "__lsan",
    "__msan",
    "labelfuzz",
    "backtrace::",
    "std::",
    "core::",
];

/// Records a sanitizer's bug report (call from the sanitizer's error callback, before it aborts):
/// the crash label of the abort that follows is the bug type and the target's top frames, not
/// the sanitizer's own abort path, so two bugs ASan reports are two labels.
pub fn record_sanitizer_report(tool: &str, bug: &str) {
    if EXE_END.load(Ordering::Relaxed) == 0 {
        // SAFETY: walks the loader's list of objects; we are not in a signal handler.
        unsafe { libc::dl_iterate_phdr(Some(find_executable), std::ptr::null_mut()) };
    }
    let (lo, hi, base) = (
        EXE_START.load(Ordering::Relaxed),
        EXE_END.load(Ordering::Relaxed),
        EXE_BASE.load(Ordering::Relaxed),
    );
    let entry = TARGET_ENTRY.load(Ordering::Relaxed);
    let mut frames = Vec::with_capacity(SITE_FRAMES);
    backtrace::trace(|frame| {
        let ip = frame.ip() as usize;
        if frame.sp() as usize >= entry {
            return false;
        }
        if ip < lo || ip >= hi {
            return true;
        }
        let mut in_target = false;
        backtrace::resolve(frame.ip(), |symbol| {
            let name = symbol.name().map(|n| format!("{n:#}")).unwrap_or_default();
            // The runtime is built without debug information; the target (compiled with -g by
            // labelfuzz-cc) has it.
            in_target = symbol.filename().is_some()
                && !RUNTIME_FRAME_PREFIXES.iter().any(|p| name.starts_with(p));
        });
        if in_target {
            frames.push(ip - base);
        }
        frames.len() < SITE_FRAMES
    });
    if let Ok(mut report) = SANITIZER_REPORT.lock() {
        *report = Some((
            SanitizerReport {
                tool: tool.into(),
                bug: bug.into(),
            },
            frames,
        ));
        SANITIZER_PENDING.store(true, Ordering::Release);
    }
}

/// How close to the stack pointer a fault must be to count as a stack overflow.
const STACK_FAULT_DISTANCE: usize = 1 << 20;

impl SignalSite {
    /// The signal's name, e.g. `SIGSEGV`.
    #[must_use]
    pub fn signal_name(&self) -> String {
        match self.signal {
            libc::SIGSEGV => "SIGSEGV".into(),
            libc::SIGBUS => "SIGBUS".into(),
            libc::SIGILL => "SIGILL".into(),
            libc::SIGFPE => "SIGFPE".into(),
            libc::SIGABRT => "SIGABRT".into(),
            libc::SIGTRAP => "SIGTRAP".into(),
            other => format!("signal {other}"),
        }
    }

    /// The crash kind: `sanitizer`, `exit`, `oom`, `stack-overflow` or `signal`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self.cause {
            AbortCause::Sanitizer(_) => "sanitizer",
            AbortCause::Exit => "exit",
            AbortCause::OutOfMemory => "oom",
            AbortCause::Fault if self.stack_overflow => "stack-overflow",
            AbortCause::Fault => "signal",
        }
    }

    /// The label location: the signal and the frame offsets; for a stack overflow, the function
    /// that overflowed (which instruction faults depends on how deep the input made it go); none
    /// for running out of memory (one label, as the site is wherever the target was).
    #[must_use]
    pub fn location(&self) -> String {
        let frames: Vec<String> = self.frames.iter().map(|f| format!("exe+{f:#x}")).collect();
        match &self.cause {
            AbortCause::OutOfMemory => return String::new(),
            AbortCause::Sanitizer(report) => {
                return format!("{} {} at {}", report.tool, report.bug, frames.join(" < "));
            }
            AbortCause::Fault | AbortCause::Exit => {}
        }
        if self.stack_overflow {
            // The faulting instruction may be in the recursive function or in anything it calls
            // (a helper touching the guard page first): the recursive function is the one that
            // repeats among the frames, and otherwise the caller of the faulting one.
            let starts: Vec<usize> = self
                .frames
                .iter()
                .filter_map(|&f| function_start(f))
                .collect();
            let repeated = starts
                .iter()
                .find(|&&s| starts.iter().filter(|&&t| t == s).count() > 1);
            if let Some(start) = repeated.or(starts.get(1)).or(starts.first()) {
                return format!("stack overflow in exe+{start:#x}");
            }
        }
        format!("{} at {}", self.signal_name(), frames.join(" < "))
    }

    /// A short description for people: the sanitizer's bug, or the signal's name.
    #[must_use]
    pub fn message(&self) -> String {
        match &self.cause {
            AbortCause::Sanitizer(report) => format!("{}: {}", report.tool, report.bug),
            AbortCause::OutOfMemory => "out of memory (--rss-limit-mb)".into(),
            AbortCause::Fault | AbortCause::Exit => self.signal_name(),
        }
    }

    /// The functions of the site frames, innermost first, for people (not part of the label).
    #[must_use]
    pub fn symbol(&self) -> String {
        describe_frames(&self.frames)
    }
}

/// Names the functions at `frames` (offsets in the executable), innermost first. Slow the first
/// time in a process (it reads the debug information): call it once per new crash label, not
/// per crash.
#[must_use]
pub fn describe_frames(frames: &[usize]) -> String {
    let base = EXE_BASE.load(Ordering::Relaxed);
    let names: Vec<String> = frames
        .iter()
        .map(|&frame| {
            // The last symbol is the real function (the ones before it were inlined into it).
            let mut name = format!("exe+{frame:#x}");
            backtrace::resolve((base + frame) as *mut c_void, |symbol| {
                if let Some(n) = symbol.name() {
                    name = format!("{n:#}");
                }
            });
            name
        })
        .collect();
    names.join(" < ")
}

/// The offset of the start of the function containing offset `frame`, from the symbol table.
fn function_start(frame: usize) -> Option<usize> {
    let base = EXE_BASE.load(Ordering::Relaxed);
    // Inlined frames come first, innermost first: the last symbol is the real function. Its
    // address may be reported loaded or as in the file; either way the offset is the same.
    let mut start = None;
    backtrace::resolve((base + frame) as *mut c_void, |symbol| {
        if let Some(addr) = symbol.addr() {
            let addr = addr as usize;
            start = Some(if addr >= base { addr - base } else { addr });
        }
    });
    start
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
            if previous.sa_sigaction == record_site as *const () as usize {
                continue; // already installed in this process
            }
            let _ = PREVIOUS[signal as usize].set(previous);
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = record_site as *const () as usize;
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
}

/// Forgets the last signal (before each execution).
pub fn clear() {
    LAST_SIGNAL.store(0, Ordering::Relaxed);
    LAST_STACK_OVERFLOW.store(false, Ordering::Relaxed);
    SANITIZER_PENDING.store(false, Ordering::Relaxed);
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
                stack_overflow: false,
                cause: AbortCause::Sanitizer(report),
            });
        }
    }
    let cause = match NOTED_ABORT.swap(0, Ordering::SeqCst) {
        NOTED_EXIT => AbortCause::Exit,
        NOTED_OUT_OF_MEMORY => AbortCause::OutOfMemory,
        _ => AbortCause::Fault,
    };
    let frames = if cause == AbortCause::OutOfMemory {
        Vec::new()
    } else {
        LAST_FRAMES
            .iter()
            .map(|f| f.load(Ordering::Relaxed))
            .take_while(|&f| f != 0)
            .map(|f| f - 1)
            .collect()
    };
    Some(SignalSite {
        signal,
        frames,
        stack_overflow: LAST_STACK_OVERFLOW.swap(false, Ordering::Relaxed),
        cause,
    })
}

/// The interrupted program counter and stack pointer, from the signal context.
unsafe fn interrupted_pc_sp(context: *mut c_void) -> (usize, usize) {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        // SAFETY: the kernel passes a valid ucontext to SA_SIGINFO handlers.
        let gregs = unsafe { &(*(context as *const libc::ucontext_t)).uc_mcontext.gregs };
        (
            gregs[libc::REG_RIP as usize] as usize,
            gregs[libc::REG_RSP as usize] as usize,
        )
    }
    #[cfg(all(target_os = "linux", target_arch = "aarch64"))]
    {
        // SAFETY: as above.
        let mcontext = unsafe { &(*(context as *const libc::ucontext_t)).uc_mcontext };
        (mcontext.pc as usize, mcontext.sp as usize)
    }
    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    {
        let _ = context;
        (0, 0)
    }
}

extern "C" fn record_site(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    // SAFETY: runs as a signal handler; it only reads the context, walks the stack without
    // allocating and stores to atomics, then hands over to the previous handler.
    unsafe {
        let (pc, sp) = interrupted_pc_sp(context);
        let fault = if info.is_null() {
            0
        } else {
            (*info).si_addr() as usize
        };
        LAST_STACK_OVERFLOW.store(
            signal == libc::SIGSEGV && sp != 0 && fault.abs_diff(sp) < STACK_FAULT_DISTANCE,
            Ordering::Relaxed,
        );
        let (lo, hi, base) = (
            EXE_START.load(Ordering::Relaxed),
            EXE_END.load(Ordering::Relaxed),
            EXE_BASE.load(Ordering::Relaxed),
        );
        let mut frames = [(0usize, 0usize); 64];
        let mut count = 0;
        backtrace::trace_unsynchronized(|frame| {
            frames[count] = (frame.ip() as usize, frame.sp() as usize);
            count += 1;
            count < frames.len()
        });
        // Frames before the interrupted PC belong to this handler: start at the PC.
        let start = frames[..count].iter().position(|&(ip, _)| ip == pc);
        let only_pc = [(pc, 0)];
        let interrupted: &[(usize, usize)] = match start {
            Some(i) => &frames[i..count],
            None => &only_pc,
        };
        let entry = TARGET_ENTRY.load(Ordering::Relaxed);
        let mut kept = 0;
        for &(ip, frame_sp) in interrupted {
            if kept == SITE_FRAMES || frame_sp >= entry {
                break;
            }
            if ip >= lo && ip < hi {
                LAST_FRAMES[kept].store(ip - base + 1, Ordering::Relaxed);
                kept += 1;
            }
        }
        for slot in &LAST_FRAMES[kept..] {
            slot.store(0, Ordering::Relaxed);
        }
        LAST_SIGNAL.store(signal, Ordering::Relaxed);

        match PREVIOUS[signal as usize].get().copied() {
            Some(previous) if previous.sa_flags & libc::SA_SIGINFO != 0 => {
                let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut c_void) =
                    std::mem::transmute(previous.sa_sigaction);
                handler(signal, info, context);
            }
            Some(previous) if previous.sa_sigaction == libc::SIG_IGN => {}
            Some(previous) if previous.sa_sigaction != libc::SIG_DFL => {
                let handler: extern "C" fn(libc::c_int) =
                    std::mem::transmute(previous.sa_sigaction);
                handler(signal);
            }
            _ => {
                libc::signal(signal, libc::SIG_DFL);
                libc::raise(signal);
            }
        }
    }
}
