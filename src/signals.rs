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

/// Functions that name a site: the faulting one and its nearest callers, recursion collapsed.
pub const SITE_FUNCTIONS: usize = 3;

/// Frames of the target recorded per crash, innermost first: enough to see a recursive parser's
/// whole path back to the entry (the label collapses the recursion) or a stack overflow's cycle.
pub const MAX_FRAMES: usize = 1024;
/// Frames the unwinder may report in all: the signal handler's own come first.
const RAW_FRAMES: usize = MAX_FRAMES + 64;

static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);
static LAST_STACK_OVERFLOW: AtomicBool = AtomicBool::new(false);
/// The target's frames of the last signal (offsets in the executable), innermost first.
static LAST_FRAMES: [AtomicUsize; MAX_FRAMES] = [const { AtomicUsize::new(0) }; MAX_FRAMES];
static LAST_FRAME_COUNT: AtomicUsize = AtomicUsize::new(0);
static LAST_FAULT_IN_EXE: AtomicBool = AtomicBool::new(false);
/// The unwinder's raw frames (instruction and stack pointers), static because the handler may
/// run on a small alternate stack.
static RAW_IPS: [AtomicUsize; RAW_FRAMES] = [const { AtomicUsize::new(0) }; RAW_FRAMES];
static RAW_SPS: [AtomicUsize; RAW_FRAMES] = [const { AtomicUsize::new(0) }; RAW_FRAMES];
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
    let mut frames = Vec::with_capacity(MAX_FRAMES / 16);
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
        frames.len() < MAX_FRAMES / 16
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

    /// The label location and the site frames kept with the crash (for people: the first frame
    /// of each function named in the location).
    ///
    /// The location is the signal, the faulting function (with the instruction's offset in it)
    /// and its nearest callers, recursion collapsed, so one bug is one label however deep a
    /// recursive parser reached it; for a stack overflow, the functions of the recursive cycle
    /// (which instruction faults depends on how deep the input made it go); none for running
    /// out of memory (one label, as the site is wherever the target was). The frames are
    /// symbolized once for both.
    #[must_use]
    pub fn location_and_frames(&self) -> (String, Vec<usize>) {
        if self.cause == AbortCause::OutOfMemory {
            return (String::new(), Vec::new());
        }
        let functions = self.functions();
        let path = collapse_recursion(&function_path(&functions));
        let site_frames: Vec<usize> = path
            .iter()
            .take(SITE_FUNCTIONS)
            .filter_map(|(start, _)| functions.iter().find(|(_, s, _)| s == start))
            .map(|(frame, _, _)| *frame)
            .collect();
        // The faulting function with the instruction's offset, then the nearest callers on the
        // collapsed path: `parse_term+0x2a < parse_expr < parse`.
        let site = match functions.first() {
            None => String::new(),
            Some((frame, start, name)) => std::iter::once(format!("{name}+{:#x}", frame - start))
                .chain(
                    path.iter()
                        .skip(1)
                        .take(SITE_FUNCTIONS - 1)
                        .map(|(_, n)| n.clone()),
                )
                .collect::<Vec<_>>()
                .join(" < "),
        };
        let location = match &self.cause {
            AbortCause::Sanitizer(report) => format!("{} {} at {site}", report.tool, report.bug),
            AbortCause::Fault if self.stack_overflow => {
                let cycle = recursive_cycle(&function_path(&functions));
                if cycle.is_empty() {
                    format!("stack overflow at {site}")
                } else {
                    format!("stack overflow in recursion {}", cycle.join(" < "))
                }
            }
            _ => format!("{} at {site}", self.signal_name()),
        };
        (location, site_frames)
    }

    /// The target's frames with their functions, innermost first: `(frame, start, name)`, an
    /// unknown function named by the frame's offset. labelfuzz's own frames (the exit guard,
    /// the call into the target) are left out: they are the same for every bug.
    fn functions(&self) -> Vec<(usize, usize, String)> {
        let table = crate::symbols::functions();
        self.frames
            .iter()
            .enumerate()
            .map(|(i, &frame)| {
                // A return address points after its call, which may be a function's last
                // instruction (a call to `abort`): look the call itself up.
                let exact = i == 0 && self.faulted_in_executable;
                let lookup = if exact {
                    frame
                } else {
                    frame.saturating_sub(1)
                };
                match table.function_at(lookup) {
                    Some(f) => (frame, f.start, f.name.to_string()),
                    None => (frame, frame, format!("exe+{frame:#x}")),
                }
            })
            .filter(|(_, _, name)| !name.starts_with("labelfuzz::"))
            .collect()
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

/// `(start, name)` of each frame's function.
fn function_path(functions: &[(usize, usize, String)]) -> Vec<(usize, String)> {
    functions
        .iter()
        .map(|(_, start, name)| (*start, name.clone()))
        .collect()
}

/// The call path with recursion collapsed: walking outwards from the innermost frame, a
/// function met again ends a loop, and the frames of the loop are dropped. A path that went
/// `term < expr < factor < term < expr < parse` becomes `term < expr < parse`, the same as
/// without recursion.
#[must_use]
pub fn collapse_recursion(functions: &[(usize, String)]) -> Vec<(usize, String)> {
    let mut path: Vec<(usize, String)> = Vec::new();
    for function in functions {
        match path.iter().position(|(start, _)| *start == function.0) {
            Some(i) => path.truncate(i + 1),
            None => path.push(function.clone()),
        }
    }
    path
}

/// The functions of the innermost recursive cycle (innermost first), rotated to start at the
/// smallest name so that where the stack ran out does not change the label; empty when no
/// function repeats.
#[must_use]
pub fn recursive_cycle(functions: &[(usize, String)]) -> Vec<String> {
    // The cycle closes at the first frame whose function was met before, nearer the fault.
    let closing = functions.iter().enumerate().find_map(|(j, f)| {
        functions[..j]
            .iter()
            .position(|g| g.0 == f.0)
            .map(|i| (i, j))
    });
    let Some((i, j)) = closing else {
        return Vec::new();
    };
    let cycle: Vec<String> = functions[i..j].iter().map(|(_, n)| n.clone()).collect();
    let first = (0..cycle.len())
        .min_by(|&a, &b| cycle[a].cmp(&cycle[b]))
        .unwrap_or(0);
    cycle[first..]
        .iter()
        .chain(&cycle[..first])
        .cloned()
        .collect()
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
                faulted_in_executable: false,
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
        let mut count = 0;
        backtrace::trace_unsynchronized(|frame| {
            RAW_IPS[count].store(frame.ip() as usize, Ordering::Relaxed);
            RAW_SPS[count].store(frame.sp() as usize, Ordering::Relaxed);
            count += 1;
            count < RAW_FRAMES
        });
        // Frames before the interrupted PC belong to this handler: start at the PC.
        let start = (0..count).find(|&i| RAW_IPS[i].load(Ordering::Relaxed) == pc);
        let entry = TARGET_ENTRY.load(Ordering::Relaxed);
        let mut kept = 0;
        let mut keep = |ip: usize| {
            if kept < MAX_FRAMES && ip >= lo && ip < hi {
                LAST_FRAMES[kept].store(ip - base, Ordering::Relaxed);
                kept += 1;
            }
        };
        match start {
            Some(first) => {
                for i in first..count {
                    if RAW_SPS[i].load(Ordering::Relaxed) >= entry {
                        break;
                    }
                    keep(RAW_IPS[i].load(Ordering::Relaxed));
                }
            }
            None => keep(pc),
        }
        LAST_FRAME_COUNT.store(kept, Ordering::Relaxed);
        LAST_FAULT_IN_EXE.store(pc >= lo && pc < hi, Ordering::Relaxed);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn path(names: &[&str]) -> Vec<(usize, String)> {
        // A function's start stands for its identity: derive it from the name.
        names
            .iter()
            .map(|n| (n.bytes().map(usize::from).sum(), (*n).to_string()))
            .collect()
    }

    fn names(path: &[(usize, String)]) -> Vec<&str> {
        path.iter().map(|(_, n)| n.as_str()).collect()
    }

    #[test]
    fn recursion_collapses_to_the_path_without_it() {
        let direct = path(&["term", "expr", "parse"]);
        let deep = path(&[
            "term", "expr", "factor", "term", "expr", "factor", "term", "expr", "parse",
        ]);
        assert_eq!(
            names(&collapse_recursion(&direct)),
            ["term", "expr", "parse"]
        );
        assert_eq!(collapse_recursion(&deep), collapse_recursion(&direct));
        let through_unary = path(&["term", "expr", "factor", "unary", "factor", "term", "expr"]);
        assert_eq!(names(&collapse_recursion(&through_unary)), ["term", "expr"]);
    }

    #[test]
    fn a_recursive_cycle_does_not_depend_on_where_the_stack_ran_out() {
        let a = path(&["memset", "b", "c", "a", "b", "c", "a", "b"]);
        let b = path(&["c", "a", "b", "c", "a", "b", "c"]);
        assert_eq!(recursive_cycle(&a), ["a", "b", "c"]);
        assert_eq!(recursive_cycle(&b), ["a", "b", "c"]);
        assert_eq!(recursive_cycle(&path(&["f", "f", "f"])), ["f"]);
        assert!(recursive_cycle(&path(&["f", "g"])).is_empty());
    }
}
