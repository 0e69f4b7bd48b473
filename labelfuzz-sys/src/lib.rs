//! The fuzz-target side of labelfuzz: the [`fuzz_target!`] macro and nothing of the engine.
//!
//! A Rust fuzz crate depends on this crate alone (directly, or through the `libfuzzer-sys`
//! stand-in that `cargo labelfuzz` patches into cargo-fuzz projects). The engine is the labelfuzz
//! runtime, a static library built once apart from the user's crates and linked by this crate's
//! build script: it provides `main`, calls `LLVMFuzzerInitialize` (which [`fuzz_target!`]
//! defines) and `LLVMFuzzerTestOneInput` (defined here, calling the target the macro names), and
//! runs labelfuzz's command line.
//!
//! The macro takes every form of libfuzzer-sys's: bytes or an [`arbitrary::Arbitrary`] type, an
//! optional `init:` block, a `()` or [`Corpus`] result, in a `#![no_main]` crate; and it honours
//! `RUST_LIBFUZZER_DEBUG_PATH`, which `cargo labelfuzz fmt` relies on.
//!
//! Panics: the runtime has its own copy of `std`, so a panic of the target cannot unwind into
//! it. `LLVMFuzzerTestOneInput` catches it here and reports its location across the C ABI; the
//! runtime makes the input a crash labelled by that location, and fuzzing goes on in the same
//! process.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Once, OnceLock};

pub use arbitrary;

/// What the fuzz target says about an input, as in libfuzzer-sys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Corpus {
    /// The input may enter the corpus (the best input of a label).
    #[default]
    Keep,
    /// The input must not enter the corpus, whatever coverage it shows (a crash in it is still
    /// reported).
    Reject,
}

impl From<()> for Corpus {
    fn from((): ()) -> Self {
        Self::Keep
    }
}

impl Corpus {
    /// libFuzzer's return value for this verdict: 0 to keep, -1 to reject.
    #[must_use]
    pub fn to_libfuzzer_code(self) -> i32 {
        match self {
            Self::Keep => 0,
            Self::Reject => -1,
        }
    }
}

/// The file named by `RUST_LIBFUZZER_DEBUG_PATH`, if set: a typed target writes the `Debug` form
/// of its input there instead of running (what `cargo labelfuzz fmt` reads).
#[doc(hidden)]
#[must_use]
pub fn rust_libfuzzer_debug_path() -> &'static Option<String> {
    static PATH: OnceLock<Option<String>> = OnceLock::new();
    PATH.get_or_init(|| std::env::var("RUST_LIBFUZZER_DEBUG_PATH").ok())
}

/// Writes `text` to the debug path (a failure is reported, not fatal: it only loses a printout).
#[doc(hidden)]
pub fn write_debug_form(path: &str, text: &str) {
    if let Err(e) = std::fs::write(path, format!("{text}\n")) {
        eprintln!("labelfuzz: cannot write RUST_LIBFUZZER_DEBUG_PATH {path}: {e}");
    }
}

#[cfg_attr(test, allow(dead_code))] // the runtime is not linked into unit tests
extern "C" {
    // In the labelfuzz runtime (`labelfuzz-harness`).
    fn labelfuzz_rt_panicked(
        file: *const u8,
        file_len: usize,
        line: u32,
        column: u32,
        message: *const u8,
        message_len: usize,
    );
}

thread_local! {
    /// Whether the target is running on this thread (panics then belong to the target).
    static IN_TARGET: Cell<bool> = const { Cell::new(false) };
}

/// Installs, once, the panic hook that reports the target's panics to the runtime.
///
/// The runtime is told at the hook, before unwinding starts, so the location reaches it even
/// when the crate is built with `-C panic=abort` (the abort then ends the execution as a crash
/// the runtime already knows the site of). Panics outside the target go to the previous hook.
#[cfg_attr(test, allow(dead_code))]
fn install_panic_reporter() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !IN_TARGET.with(Cell::get) {
                previous(info);
                return;
            }
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("");
            let (file, line, column) = info
                .location()
                .map_or(("", 0, 0), |l| (l.file(), l.line(), l.column()));
            // SAFETY: both ranges are live, readable UTF-8 for the duration of the call.
            unsafe {
                labelfuzz_rt_panicked(
                    file.as_ptr(),
                    file.len(),
                    line,
                    column,
                    message.as_ptr(),
                    message.len(),
                );
            }
        }));
    });
}

/// The target function [`fuzz_target!`] defines, as the runtime's entry point finds it.
///
/// A static (data, not code) in the user's crate names it, and `LLVMFuzzerTestOneInput` lives
/// here, in a crate that is not instrumented: the only functions of the user's crate that run
/// per input are theirs (the body, and for typed targets the decoding).
#[doc(hidden)]
pub enum TargetFn {
    /// `|data: &[u8]| { … }`.
    Bytes(fn(&[u8])),
    /// `|data: &[u8]| -> Corpus { … }`.
    WithVerdict(fn(&[u8]) -> Corpus),
    /// `|value: T| …` for an `Arbitrary` type `T`: `run` decodes and runs (rejecting what does not
    /// decode), `debug_form` decodes and prints the value with `{:?}` (`None` if it does not
    /// decode), which the runtime uses to state crash patterns on the value.
    Typed {
        /// Decodes the input and runs the target on it.
        run: fn(&[u8]) -> Corpus,
        /// Decodes the input and prints it.
        debug_form: fn(&[u8]) -> Option<String>,
    },
}

#[cfg(not(test))]
extern "Rust" {
    // Defined by `fuzz_target!` in the user's crate.
    static __LABELFUZZ_SYS_TARGET: TargetFn;
}

/// libFuzzer's entry point, called by the labelfuzz runtime for every input: runs the target,
/// catches a panic (reported to the runtime by the hook), and returns libFuzzer's value (0, or -1
/// for [`Corpus::Reject`]).
///
/// # Safety
/// `data` must point to `size` readable bytes, or `size` must be 0.
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn LLVMFuzzerTestOneInput(data: *const u8, size: usize) -> i32 {
    let bytes = if size == 0 || data.is_null() {
        &[][..]
    } else {
        // SAFETY: the runtime passes a live buffer of `size` bytes.
        unsafe { std::slice::from_raw_parts(data, size) }
    };
    // SAFETY: `fuzz_target!` defines the static with this type.
    let target = unsafe { &__LABELFUZZ_SYS_TARGET };
    run_target(target, bytes)
}

/// The runtime's question to a typed target: the `Debug` form of the value `data` decodes to,
/// handed to `sink` with `context`. Returns 1 when it was, 0 when the input does not decode (or
/// printing it panicked), -1 when the target is not typed. (The runtime carries a weak default
/// returning -1 for every other executable.)
///
/// # Safety
/// `data` must point to `size` readable bytes (or `size` be 0); `sink` must accept `context`.
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn labelfuzz_sys_debug_form(
    data: *const u8,
    size: usize,
    sink: unsafe extern "C" fn(context: *mut std::ffi::c_void, text: *const u8, len: usize),
    context: *mut std::ffi::c_void,
) -> i32 {
    // SAFETY: `fuzz_target!` defines the static with this type.
    let TargetFn::Typed { debug_form, .. } = (unsafe { &__LABELFUZZ_SYS_TARGET }) else {
        return -1;
    };
    let bytes = if size == 0 || data.is_null() {
        &[][..]
    } else {
        // SAFETY: the runtime passes a live buffer of `size` bytes.
        unsafe { std::slice::from_raw_parts(data, size) }
    };
    match panic::catch_unwind(|| debug_form(bytes)) {
        Ok(Some(text)) => {
            // SAFETY: the runtime's sink reads `text.len()` bytes while `text` lives.
            unsafe { sink(context, text.as_ptr(), text.len()) };
            1
        }
        _ => 0,
    }
}

/// Runs `target` on `bytes` with the target's panics reported to the runtime.
#[cfg_attr(test, allow(dead_code))]
fn run_target(target: &TargetFn, bytes: &[u8]) -> i32 {
    install_panic_reporter();
    IN_TARGET.with(|flag| flag.set(true));
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| match target {
        TargetFn::Bytes(run) => {
            run(bytes);
            Corpus::Keep
        }
        TargetFn::WithVerdict(run) | TargetFn::Typed { run, .. } => run(bytes),
    }));
    IN_TARGET.with(|flag| flag.set(false));
    match outcome {
        Ok(verdict) => verdict.to_libfuzzer_code(),
        // Reported by the hook already; the runtime turns it into a crash.
        Err(_) => 0,
    }
}

/// Defines the fuzz target, in any of libfuzzer-sys's forms:
///
/// ```ignore
/// #![no_main]
/// use libfuzzer_sys::fuzz_target;
///
/// fuzz_target!(|data: &[u8]| { let _ = my_crate::parse(data); });
/// fuzz_target!(|data: &[u8]| -> Corpus { if data.is_empty() { Corpus::Reject } else { Corpus::Keep } });
/// fuzz_target!(|rgb: MyArbitraryType| { my_crate::convert(rgb); });
/// fuzz_target!(init: { setup() }, |data: &[u8]| { my_crate::parse(data); });
/// ```
#[macro_export]
macro_rules! fuzz_target {
    (|$bytes:ident| $body:expr) => {
        $crate::fuzz_target!(init: (), |$bytes: &[u8]| $body);
    };
    (|$bytes:ident: &[u8]| $body:expr) => {
        $crate::fuzz_target!(init: (), |$bytes: &[u8]| $body);
    };
    (|$bytes:ident: &[u8]| -> $rty:ty $body:block) => {
        $crate::fuzz_target!(init: (), |$bytes: &[u8]| -> $rty $body);
    };
    (init: $init:expr, |$bytes:ident| $body:expr) => {
        $crate::fuzz_target!(init: $init, |$bytes: &[u8]| $body);
    };
    (init: $init:expr, |$bytes:ident: &[u8]| $body:expr) => {
        $crate::__labelfuzz_sys_initializer!($init);

        #[no_mangle]
        #[doc(hidden)]
        pub static __LABELFUZZ_SYS_TARGET: $crate::TargetFn =
            $crate::TargetFn::Bytes(__labelfuzz_sys_run);

        // A function of its own, so that `return` in the body means what it says.
        fn __labelfuzz_sys_run($bytes: &[u8]) {
            $body;
        }
    };
    (init: $init:expr, |$bytes:ident: &[u8]| -> $rty:ty $body:block) => {
        $crate::__labelfuzz_sys_initializer!($init);

        #[no_mangle]
        #[doc(hidden)]
        pub static __LABELFUZZ_SYS_TARGET: $crate::TargetFn =
            $crate::TargetFn::WithVerdict(__labelfuzz_sys_run);

        fn __labelfuzz_sys_run($bytes: &[u8]) -> $rty $body
    };
    (|$data:ident: $dty:ty| $body:expr) => {
        $crate::fuzz_target!(init: (), |$data: $dty| $body);
    };
    (|$data:ident: $dty:ty| -> $rty:ty $body:block) => {
        $crate::fuzz_target!(init: (), |$data: $dty| -> $rty $body);
    };
    (init: $init:expr, |$data:ident: $dty:ty| $body:expr) => {
        $crate::fuzz_target!(init: $init, |$data: $dty| -> () { $body; });
    };
    (init: $init:expr, |$data:ident: $dty:ty| -> $rty:ty $body:block) => {
        $crate::__labelfuzz_sys_initializer!($init);

        #[no_mangle]
        #[doc(hidden)]
        pub static __LABELFUZZ_SYS_TARGET: $crate::TargetFn = $crate::TargetFn::Typed {
            run: __labelfuzz_sys_typed,
            debug_form: __labelfuzz_sys_debug_form,
        };

        /// The input as the target sees it (`Err` when it does not decode, or is too short for
        /// the type: rejected at once rather than explored byte by byte).
        fn __labelfuzz_sys_decode(
            bytes: &[u8],
        ) -> ::std::result::Result<$dty, $crate::arbitrary::Error> {
            use $crate::arbitrary::{Arbitrary, Unstructured};
            if bytes.len() < <$dty as Arbitrary>::size_hint(0).0 {
                return Err($crate::arbitrary::Error::NotEnoughData);
            }
            <$dty as Arbitrary>::arbitrary_take_rest(Unstructured::new(bytes))
        }

        fn __labelfuzz_sys_debug_form(bytes: &[u8]) -> ::std::option::Option<String> {
            __labelfuzz_sys_decode(bytes)
                .ok()
                .map(|input| format!("{input:?}"))
        }

        fn __labelfuzz_sys_typed(bytes: &[u8]) -> $crate::Corpus {
            let input = __labelfuzz_sys_decode(bytes);
            if let Some(path) = $crate::rust_libfuzzer_debug_path() {
                let text = match &input {
                    Ok(input) => format!("{input:#?}"),
                    Err(e) => format!("Arbitrary Error: {e}"),
                };
                $crate::write_debug_form(path, &text);
                return $crate::Corpus::Reject;
            }
            match input {
                Ok(input) => $crate::Corpus::from(__labelfuzz_sys_run(input)),
                Err(_) => $crate::Corpus::Reject,
            }
        }

        fn __labelfuzz_sys_run($data: $dty) -> $rty $body
    };
}

/// Defines `LLVMFuzzerInitialize`, which the runtime calls once per process before the first
/// input.
#[doc(hidden)]
#[macro_export]
macro_rules! __labelfuzz_sys_initializer {
    ($init:expr) => {
        /// libFuzzer's initializer: runs the target's `init:` block.
        #[no_mangle]
        pub extern "C" fn LLVMFuzzerInitialize(
            _argc: *mut ::std::os::raw::c_int,
            _argv: *mut *mut *mut ::std::os::raw::c_char,
        ) -> ::std::os::raw::c_int {
            $init;
            0
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_map_to_libfuzzer_codes() {
        assert_eq!(Corpus::from(()), Corpus::Keep);
        assert_eq!(Corpus::Keep.to_libfuzzer_code(), 0);
        assert_eq!(Corpus::Reject.to_libfuzzer_code(), -1);
    }
}
