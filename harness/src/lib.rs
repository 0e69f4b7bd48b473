//! The driver that turns a libFuzzer harness into a labelfuzz fuzzer.
//!
//! `labelfuzz-cc`/`labelfuzz-cxx` link this static library into any executable that defines
//! `LLVMFuzzerTestOneInput` (or is linked with `-fsanitize=fuzzer`). LibAFL's libFuzzer shim
//! supplies a weak `main` that calls [`libafl_main`]; the harness's own `main`, if it has one,
//! takes precedence, as with libFuzzer. The sanitizer-coverage callbacks come from
//! `libafl_targets`, which fills the edge map the engine reads.

use std::ffi::OsString;

/// Entry point called by LibAFL's `main`: runs `LLVMFuzzerInitialize` if the harness defines it,
/// then the labelfuzz command line over `LLVMFuzzerTestOneInput`.
#[no_mangle]
pub extern "C" fn libafl_main() {
    let args: Vec<String> = std::env::args_os()
        .map(|arg: OsString| arg.to_string_lossy().into_owned())
        .collect();
    // SAFETY: calls the harness's optional initializer once, before any input runs, with a
    // NUL-terminated copy of the command line, as libFuzzer does.
    unsafe {
        libafl_targets::libfuzzer_initialize(&args);
    }
    labelfuzz::main_for_target(|data: &[u8]| {
        // SAFETY: the harness reads `data.len()` bytes from a live slice. libFuzzer's other
        // return value, -1, asks that the input never enter the corpus.
        if unsafe { libafl_targets::libfuzzer_test_one_input(data) } == -1 {
            labelfuzz::reject_input();
        }
    })
}

/// Called by the C sanitizer hooks when a sanitizer reports a bug, before it aborts: records
/// the bug type and the site for the crash label.
///
/// # Safety
/// `tool` and `bug` must be NUL-terminated strings (they come from the sanitizer runtime).
#[no_mangle]
pub unsafe extern "C" fn labelfuzz_harness_sanitizer_report(
    tool: *const std::ffi::c_char,
    bug: *const std::ffi::c_char,
) {
    // SAFETY: the caller passes NUL-terminated strings.
    let (tool, bug) = unsafe {
        (
            std::ffi::CStr::from_ptr(tool).to_string_lossy(),
            std::ffi::CStr::from_ptr(bug).to_string_lossy(),
        )
    };
    labelfuzz::signals::record_sanitizer_report(&tool, &bug);
}
