//! Sanitizer reports: a sanitizer's bug type and the frames of the code that caused it, recorded
//! just before the sanitizer aborts the process, so the crash label names the bug and its site.

use std::sync::Mutex;

use super::*;

/// A sanitizer's report of the bug that is about to abort the process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SanitizerReport {
    /// The sanitizer, e.g. `AddressSanitizer`.
    pub tool: String,
    /// The bug type, e.g. `heap-buffer-overflow`.
    pub bug: String,
}

pub(super) static SANITIZER_REPORT: Mutex<Option<(SanitizerReport, Vec<usize>)>> = Mutex::new(None);
pub(super) static SANITIZER_PENDING: AtomicBool = AtomicBool::new(false);
/// Set from the moment a sanitizer starts its report until the next execution: the report is
/// printed (its stack symbolized, which on a large binary takes seconds) before the abort.
pub(super) static SANITIZER_REPORTING: AtomicBool = AtomicBool::new(false);

/// Whether a sanitizer is reporting a bug in this execution (its abort is coming).
pub(super) fn sanitizer_reporting() -> bool {
    SANITIZER_REPORTING.load(Ordering::Relaxed)
}

/// Names of functions that belong to sanitizer runtimes or to this reporting path, not to the
/// target: the site of a sanitizer report is the first frame after them.
pub(super) const RUNTIME_FRAME_PREFIXES: [&str; 11] = [
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
    SANITIZER_REPORTING.store(true, Ordering::Relaxed);
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
