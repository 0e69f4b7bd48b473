//! labelfuzz's stand-in for the `libfuzzer-sys` crate.
//!
//! `cargo labelfuzz` patches this crate in place of crates.io's `libfuzzer-sys`, so a cargo-fuzz
//! project builds against labelfuzz without an edit: the same [`fuzz_target!`] forms (bytes or an
//! [`arbitrary::Arbitrary`] type, an optional `init:` block, a `()` or [`Corpus`] result), the
//! same `#![no_main]` crate layout and the same `RUST_LIBFUZZER_DEBUG_PATH` convention that
//! `cargo fuzz fmt` relies on. Only the engine differs: the program's `main` comes from here and
//! runs labelfuzz's command line (which also takes libFuzzer's flags).

use std::sync::OnceLock;

pub use arbitrary;
#[doc(hidden)]
pub use labelfuzz;

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

/// Runs one input through the target the macro defined and hands its verdict to labelfuzz.
#[doc(hidden)]
pub fn run_one(test_input: fn(&[u8]) -> Corpus, bytes: &[u8]) {
    if test_input(bytes) == Corpus::Reject {
        labelfuzz::reject_input();
    }
}

#[cfg(not(test))]
extern "Rust" {
    // Both defined by `fuzz_target!` in the user's crate.
    fn __labelfuzz_sys_initialize();
    fn __labelfuzz_sys_test_input(bytes: &[u8]) -> Corpus;
}

/// The program's entry point: the user's crate is `#![no_main]`, as cargo-fuzz requires, and
/// libFuzzer's C `main` is replaced by this one.
///
/// # Safety
/// Called by the C runtime with the process's arguments (read again through `std::env`).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    // SAFETY: both symbols are defined, with these signatures, by `fuzz_target!`.
    unsafe { __labelfuzz_sys_initialize() };
    labelfuzz::main_for_target(|bytes: &[u8]| {
        // SAFETY: as above.
        run_one(|b| unsafe { __labelfuzz_sys_test_input(b) }, bytes);
    })
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
        $crate::fuzz_target!(init: $init, |$bytes: &[u8]| -> () { $body; });
    };
    (init: $init:expr, |$bytes:ident: &[u8]| -> $rty:ty $body:block) => {
        $crate::__labelfuzz_sys_initializer!($init);

        #[no_mangle]
        pub fn __labelfuzz_sys_test_input(bytes: &[u8]) -> $crate::Corpus {
            $crate::Corpus::from(__labelfuzz_sys_run(bytes))
        }

        // A function of its own, so that `return` in the body means what it says.
        #[inline(never)]
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
        pub fn __labelfuzz_sys_test_input(bytes: &[u8]) -> $crate::Corpus {
            use $crate::arbitrary::{Arbitrary, Unstructured};
            // Too short for the type: rejected at once rather than explored byte by byte.
            if bytes.len() < <$dty as Arbitrary>::size_hint(0).0 {
                return $crate::Corpus::Reject;
            }
            let input = <$dty as Arbitrary>::arbitrary_take_rest(Unstructured::new(bytes));
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

        #[inline(never)]
        fn __labelfuzz_sys_run($data: $dty) -> $rty $body
    };
}

/// Defines the initializer `main` calls once per process, before the first input.
#[doc(hidden)]
#[macro_export]
macro_rules! __labelfuzz_sys_initializer {
    ($init:expr) => {
        #[no_mangle]
        pub fn __labelfuzz_sys_initialize() {
            $init;
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
