//! Crash capture: turning a failing execution into a crash label without losing the process.
//!
//! A Rust panic in the target is caught in-process: our panic hook records where it happened and
//! `catch_unwind` in the harness turns it into [`ExitKind::Crash`], so a panic costs no restart.
//! Signals and timeouts still go through LibAFL's handlers (they save the reproducer, then the
//! restarting event manager starts a fresh process); [`CrashObserver`] names them either way.

use std::borrow::Cow;
use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};

use libafl::executors::ExitKind;
use libafl::observers::Observer;
use libafl::Error;
use libafl_bolts::Named;
use serde::{Deserialize, Serialize};

pub use crate::labels::CrashKind;
use crate::labels::Label;
use crate::signals::in_standard_library;

/// What went wrong in one failing execution.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrashInfo {
    /// What kind of failure it was.
    pub kind: CrashKind,
    /// Where: `file:line:col` for a panic; for a signal its name and the top frames of the
    /// interrupted code (`SIGSEGV at exe+0x1a2b < exe+0x3c4d < ...`); empty when unknown.
    pub location: String,
    /// The first line of the panic message, or the signal or sanitizer bug (informative only:
    /// not part of the label, since it often carries input-dependent values).
    pub message: String,
    /// The site's frames as offsets in the executable, innermost first; for a panic reported by
    /// a Rust fuzz crate, the panicking thread's stack (shown in libFuzzer-shaped reports, never
    /// part of the label or the message).
    #[serde(default)]
    pub frames: Vec<usize>,
}

impl CrashInfo {
    /// The crash label: kind and location, nothing input-dependent.
    #[must_use]
    pub fn label(&self) -> Label {
        Label::crash(self.kind.as_str(), &self.location)
    }

    /// The message with the site's function names added (reads debug information: call once
    /// per new label, not for every crash).
    #[must_use]
    pub fn described(&self) -> String {
        if self.kind == CrashKind::Panic || self.frames.is_empty() {
            self.message.clone()
        } else {
            format!(
                "{} in {}",
                self.message,
                crate::signals::describe_frames(&self.frames)
            )
        }
    }

    /// The prefix of reproducer file names, following libFuzzer (`crash-`, `timeout-`, `oom-`).
    #[must_use]
    pub fn file_prefix(&self) -> &'static str {
        match self.kind {
            CrashKind::Timeout => "timeout",
            CrashKind::Oom => "oom",
            _ => "crash",
        }
    }
}

thread_local! {
    /// The last panic caught in the target.
    static LAST_PANIC: RefCell<Option<CrashInfo>> = const { RefCell::new(None) };
}

/// Installs the panic hook that records target panics (and stays silent for them).
///
/// Call it after the executor is built: LibAFL's executor installs its own hook, which ends the
/// process on any panic. Ours runs instead for target panics and hands fuzzer panics on to it.
pub fn install_panic_hook() {
    let previous = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        if crate::interference::in_forked_child() {
            // Unwinding would carry the child back into the fuzzer's loop: it ends here, as
            // a panic in a forked child ends with `panic = "abort"`.
            previous(info);
            // SAFETY: _exit ends only this child, which holds nothing to flush.
            unsafe { libc::_exit(101) };
        }
        if crate::signals::target_running() {
            crate::signals::mark_target_unwinding();
            let location = info
                .location()
                .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
                .unwrap_or_default();
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            record_panic(location, message);
        } else {
            previous(info);
        }
    }));
}

extern "C" fn exit_guard() {
    // A process the target forked may leave through exit(): that is its own business.
    if crate::signals::target_running() && !crate::interference::in_forked_child() {
        crate::signals::note_abort(&crate::signals::AbortCause::Exit);
        // SAFETY: abort never returns; it raises SIGABRT, which LibAFL's handler turns into a
        // saved reproducer and a restart instead of the end of the run.
        unsafe { libc::abort() };
    }
}

/// Whether a panic's stack is wanted: only libFuzzer-shaped reports show it, and walking it
/// costs every crashing execution a stack walk (shrinking runs thousands of them).
static PANIC_STACKS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Asks for panics' stacks to be recorded (before the run starts: fuzzing processes inherit it).
pub fn keep_panic_stacks() {
    PANIC_STACKS.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether panics' stacks are recorded (see [`keep_panic_stacks`]).
#[must_use]
pub fn panic_stacks_kept() -> bool {
    PANIC_STACKS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Records the panic of the running target: its `file:line:col` and message (up to
/// [`MAX_PANIC_MESSAGE`] bytes of it).
///
/// Our hook calls it; so does the runtime's C ABI for a Rust fuzz crate, which has its own copy
/// of `std` (its panics never reach our hook: it catches them itself and reports them).
pub fn record_panic(location: String, message: String) {
    record_panic_with_stack(location, message, Vec::new());
}

/// [`record_panic`] with the panicking thread's stack (offsets in the executable, innermost
/// first), for the libFuzzer-shaped crash report. The caller has already told the signal
/// handlers that the target is unwinding (`signals::mark_target_unwinding`), before walking
/// any stack.
pub fn record_panic_with_stack(location: String, message: String, mut frames: Vec<usize>) {
    // A panic raised inside the standard library (a slice index, an `unwrap`, an overflow check
    // in library code) is labelled where the program called it: the library's line is shared
    // by every such panic anywhere in the program.
    let in_library = location
        .rsplitn(3, ':')
        .nth(2)
        .is_some_and(in_standard_library);
    let location = if in_library {
        if frames.is_empty() {
            frames = crate::signals::current_stack(PANIC_STACK_FRAMES);
        }
        program_location(&frames, &message).unwrap_or(location)
    } else {
        location
    };
    let message = at_most(message, MAX_PANIC_MESSAGE);
    let _ = LAST_PANIC.try_with(|p| {
        *p.borrow_mut() = Some(CrashInfo {
            kind: CrashKind::Panic,
            location,
            message,
            frames,
        });
    });
}

/// The most of a panic's message kept. The whole message, as a rule: `assert_eq!` puts the two
/// values on the lines after the first, and a report without them sends the user back to
/// reproduce the failure by hand. One-line displays show its first line.
pub const MAX_PANIC_MESSAGE: usize = 4096;

/// `text` cut to at most `max` bytes, at a character boundary.
fn at_most(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// Frames walked to find where the program called a panicking library function: the panic
/// machinery's come first.
const PANIC_STACK_FRAMES: usize = 64;

/// Whether `name` is a function of the standard library, the panic machinery or the fuzzer.
fn is_library_function(name: &str) -> bool {
    // `backtrace::` walks the stack for us: its frames come first.
    let plain = name.trim_start_matches('<');
    ["backtrace::", "__rustc", "rust_begin_unwind", "rust_panic"]
        .iter()
        .any(|prefix| plain.starts_with(prefix))
        || crate::signals::is_standard_library_function(name)
        || crate::signals::is_fuzzer_function(name)
}

/// The label location of a panic raised inside the standard library: the nearest frame of the
/// program on `frames` (its `file:line:col in function` where debug information has it, else its
/// function), with the kind of panic the message states. `None` when no frame of the program is
/// found.
fn program_location(frames: &[usize], message: &str) -> Option<String> {
    let place = frames.iter().find_map(|&frame| {
        // Innermost inlined call first: the library's inlined code, then the caller's line.
        crate::signals::frame_lines(frame)
            .into_iter()
            .find_map(|line| {
                let in_program = !is_library_function(&line.function)
                    && line
                        .source
                        .as_deref()
                        .is_none_or(|s| !in_standard_library(s));
                in_program.then(|| match line.source {
                    Some(source) => format!("{source} in {}", line.function),
                    None => line.function,
                })
            })
    })?;
    Some(format!("{place} ({})", panic_kind(message)))
}

/// What kind of panic a message states, without what the input decided: its first clause, with
/// every number written `N` (`range end index N out of range for slice of length N`).
fn panic_kind(message: &str) -> String {
    let first = message.lines().next().unwrap_or("");
    let clause = [": ", "; "]
        .iter()
        .filter_map(|separator| first.find(separator))
        .min()
        .map_or(first, |end| &first[..end]);
    let mut kind = String::new();
    for c in clause.chars().take(120) {
        if !c.is_ascii_digit() {
            kind.push(c);
        } else if !kind.ends_with('N') {
            kind.push('N');
        }
    }
    kind.trim().to_string()
}

/// Makes a call to `exit()` from inside the target a crash (kind `exit`) instead of the silent
/// end of the fuzzer: the exit is turned into an abort while the target runs.
pub fn install_exit_guard() {
    // SAFETY: registering a plain `extern "C"` function with atexit.
    unsafe {
        libc::atexit(exit_guard);
    }
}

/// Runs the target on `data`, catching a panic as [`ExitKind::Crash`].
pub fn run_catching_panics(target: &mut dyn FnMut(&[u8]), data: &[u8]) -> ExitKind {
    let entry_marker = 0u8;
    crate::signals::mark_target_entry(std::hint::black_box(&raw const entry_marker) as usize);
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| target(data)));
    crate::signals::mark_target_exit();
    // After the target's 1st, 2nd, 4th... execution in this process: installers run at the
    // first call or in initialisation, and checking every execution would cost system calls.
    if crate::signals::target_entries().is_power_of_two() {
        crate::signals::restore_replaced_handlers();
        crate::interference::put_back();
    }
    match outcome {
        Ok(()) => ExitKind::Ok,
        Err(_payload) => ExitKind::Crash,
    }
}

/// Observes how an execution failed and names the crash.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct CrashObserver {
    last: Option<CrashInfo>,
}

/// The name under which the [`CrashObserver`] is found in an observer tuple.
pub const CRASH_OBSERVER_NAME: &str = "crash";

impl CrashObserver {
    /// A fresh observer.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The crash of the last execution, if it failed.
    #[must_use]
    pub fn last(&self) -> Option<&CrashInfo> {
        self.last.as_ref()
    }
}

impl Named for CrashObserver {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed(CRASH_OBSERVER_NAME);
        &NAME
    }
}

impl<I, S> Observer<I, S> for CrashObserver {
    fn pre_exec(&mut self, _state: &mut S, _input: &I) -> Result<(), Error> {
        self.last = None;
        let _ = LAST_PANIC.try_with(|p| p.borrow_mut().take());
        crate::signals::clear();
        Ok(())
    }

    fn post_exec(&mut self, _state: &mut S, _input: &I, exit_kind: &ExitKind) -> Result<(), Error> {
        let simple = |kind: CrashKind| CrashInfo {
            kind,
            location: String::new(),
            message: String::new(),
            frames: Vec::new(),
        };
        self.last = match exit_kind {
            ExitKind::Ok => None,
            ExitKind::Crash => Some(
                // try_with: during exit() (see the exit guard) thread-locals may be gone.
                LAST_PANIC
                    .try_with(|p| p.borrow_mut().take())
                    .ok()
                    .flatten()
                    .or_else(|| {
                        crate::signals::take_site().map(|site| {
                            let (location, frames) = site.location_and_frames();
                            CrashInfo {
                                kind: site.kind(),
                                location,
                                message: site.message(),
                                frames,
                            }
                        })
                    })
                    .unwrap_or_else(|| simple(CrashKind::Signal)),
            ),
            ExitKind::Timeout => Some(simple(CrashKind::Timeout)),
            ExitKind::Oom => Some(simple(CrashKind::Oom)),
            other => Some(simple(CrashKind::Other(
                format!("{other:?}").to_lowercase(),
            ))),
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_kind_keeps_nothing_the_input_decided() {
        assert_eq!(
            panic_kind("range end index 1027 out of range for slice of length 5"),
            "range end index N out of range for slice of length N"
        );
        assert_eq!(
            panic_kind("index out of bounds: the len is 3 but the index is 5"),
            "index out of bounds"
        );
        assert_eq!(
            panic_kind("byte index 5 is not a char boundary; it is inside 'é'"),
            "byte index N is not a char boundary"
        );
        assert_eq!(
            panic_kind("called `Option::unwrap()` on a `None` value"),
            "called `Option::unwrap()` on a `None` value"
        );
        assert!(in_standard_library(
            "/rustc/0123abcd/library/core/src/slice/index.rs"
        ));
        assert!(!in_standard_library("src/lib.rs"));
    }

    #[test]
    fn a_long_message_is_cut_at_a_character_boundary() {
        assert_eq!(at_most("short".into(), 8), "short");
        assert_eq!(at_most("ééé".into(), 5), "éé");
        assert_eq!(at_most("ééé".into(), 4), "éé");
    }

    #[test]
    fn caught_panic_is_named_by_its_location() {
        install_panic_hook();
        let mut observer = CrashObserver::new();
        let mut target = |data: &[u8]| {
            if data == b"boom" {
                panic!("planted with {}", data.len());
            }
        };
        <CrashObserver as Observer<(), ()>>::pre_exec(&mut observer, &mut (), &()).unwrap();
        let exit = run_catching_panics(&mut target, b"boom");
        assert_eq!(exit, ExitKind::Crash);
        <CrashObserver as Observer<(), ()>>::post_exec(&mut observer, &mut (), &(), &exit).unwrap();
        let crash = observer.last().expect("a crash was seen");
        assert_eq!(crash.kind, CrashKind::Panic);
        assert!(crash.location.contains("crash.rs:"), "{}", crash.location);
        assert_eq!(crash.message, "planted with 4");

        // `assert_eq!`'s values are on the message's later lines: they are kept.
        let mut round_trip = |data: &[u8]| assert_eq!(data.len(), 3, "round trip of {data:?}");
        <CrashObserver as Observer<(), ()>>::pre_exec(&mut observer, &mut (), &()).unwrap();
        let exit = run_catching_panics(&mut round_trip, b"ab");
        <CrashObserver as Observer<(), ()>>::post_exec(&mut observer, &mut (), &(), &exit).unwrap();
        let message = observer.last().expect("a crash was seen").message.clone();
        assert_eq!(
            message,
            "assertion `left == right` failed: round trip of [97, 98]\n  left: 2\n right: 3"
        );

        <CrashObserver as Observer<(), ()>>::pre_exec(&mut observer, &mut (), &()).unwrap();
        let exit = run_catching_panics(&mut target, b"fine");
        assert_eq!(exit, ExitKind::Ok);
        <CrashObserver as Observer<(), ()>>::post_exec(&mut observer, &mut (), &(), &exit).unwrap();
        assert!(observer.last().is_none());
    }

    #[test]
    fn timeouts_and_signals_have_their_own_kinds() {
        let mut observer = CrashObserver::new();
        for (exit, kind) in [
            (ExitKind::Timeout, CrashKind::Timeout),
            (ExitKind::Crash, CrashKind::Signal),
        ] {
            <CrashObserver as Observer<(), ()>>::pre_exec(&mut observer, &mut (), &()).unwrap();
            <CrashObserver as Observer<(), ()>>::post_exec(&mut observer, &mut (), &(), &exit)
                .unwrap();
            assert_eq!(observer.last().unwrap().kind, kind);
        }
        assert_eq!(
            CrashInfo {
                kind: CrashKind::Timeout,
                location: String::new(),
                message: String::new(),
                frames: Vec::new(),
            }
            .file_prefix(),
            "timeout"
        );
    }

    #[test]
    fn crash_kinds_keep_their_names() {
        for name in [
            "panic",
            "signal",
            "sanitizer",
            "stack-overflow",
            "exit",
            "timeout",
            "oom",
            "diff",
        ] {
            let kind = CrashKind::from(name.to_string());
            assert_eq!(kind.as_str(), name);
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<CrashKind>(&json).unwrap(), kind);
        }
        assert_eq!(CrashKind::from("panic".to_string()), CrashKind::Panic);
    }
}
