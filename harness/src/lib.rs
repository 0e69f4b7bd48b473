//! The driver that turns a libFuzzer harness into a labelfuzz fuzzer.
//!
//! `labelfuzz-cc`/`labelfuzz-cxx` link this static library into any executable that defines
//! `LLVMFuzzerTestOneInput` (or is linked with `-fsanitize=fuzzer`). LibAFL's libFuzzer shim
//! supplies a weak `main` that calls [`libafl_main`]; the harness's own `main`, if it has one,
//! takes precedence, as with libFuzzer. The sanitizer-coverage callbacks come from
//! `libafl_targets`, which fills the edge map the engine reads.
//!
//! The same library is the runtime of Rust fuzz crates (`labelfuzz-sys`, and the `libfuzzer-sys`
//! stand-in `cargo labelfuzz` patches in): built once, apart from the user's crates, with its
//! Rust symbols made local so that its own `std` never meets theirs. Such a crate catches its
//! panics itself and reports them through [`labelfuzz_rt_panicked`].

use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by [`labelfuzz_rt_panicked`] while an input runs, read once when it returns.
static TARGET_PANICKED: AtomicBool = AtomicBool::new(false);

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
    let target = |data: &[u8]| {
        // SAFETY: the harness reads `data.len()` bytes from a live slice. libFuzzer's other
        // return value, -1, asks that the input never enter the corpus.
        if unsafe { libafl_targets::libfuzzer_test_one_input(data) } == -1 {
            labelfuzz::reject_input();
        }
        // A load first: no read-modify-write on the executions that did not panic.
        if TARGET_PANICKED.load(Ordering::Relaxed) {
            TARGET_PANICKED.store(false, Ordering::Relaxed);
            // The panic was recorded already; unwinding to the engine's `catch_unwind` ends the
            // execution as a crash without a restart, as a panic raised here would.
            std::panic::resume_unwind(Box::new("panic reported by the target"));
        }
    };
    if debug_form_of(&[]).is_some() {
        labelfuzz::main_for_typed_target(target, |data| debug_form_of(data)?)
    } else {
        labelfuzz::main_for_target(target)
    }
}

extern "C" {
    // Defined by a typed Rust target's crate (labelfuzz-sys); weakly here (`typed_target.c`).
    fn labelfuzz_sys_debug_form(
        data: *const u8,
        size: usize,
        sink: unsafe extern "C" fn(context: *mut std::ffi::c_void, text: *const u8, len: usize),
        context: *mut std::ffi::c_void,
    ) -> i32;
}

/// Receives a `Debug` form into the `Option<String>` at `context`.
unsafe extern "C" fn receive_debug_form(
    context: *mut std::ffi::c_void,
    text: *const u8,
    len: usize,
) {
    // SAFETY: `debug_form_of` passes its `Option<String>` as the context, and the target
    // `len` readable bytes at `text`.
    unsafe {
        let form = &mut *context.cast::<Option<String>>();
        *form = Some(String::from_utf8_lossy(std::slice::from_raw_parts(text, len)).into_owned());
    }
}

/// The typed target's `Debug` form of `data`: `None` when the target is not typed,
/// `Some(None)` when `data` does not decode.
fn debug_form_of(data: &[u8]) -> Option<Option<String>> {
    let mut form: Option<String> = None;
    // SAFETY: `data` is a live slice; the sink writes only into `form`, which outlives the call.
    let answer = unsafe {
        labelfuzz_sys_debug_form(
            data.as_ptr(),
            data.len(),
            receive_debug_form,
            std::ptr::addr_of_mut!(form).cast(),
        )
    };
    (answer != -1).then_some(form)
}

/// Called by a Rust fuzz crate that caught a panic in its target: `file`/`message` are UTF-8
/// byte ranges (not NUL-terminated), `line`/`column` the panic's position. The input is then a
/// crash labelled by that location.
///
/// # Safety
/// `file` and `message` must point to `file_len` and `message_len` readable bytes (or be null
/// with length 0).
#[no_mangle]
pub unsafe extern "C" fn labelfuzz_rt_panicked(
    file: *const u8,
    file_len: usize,
    line: u32,
    column: u32,
    message: *const u8,
    message_len: usize,
) {
    // First: the target's stack is being unwound from here on (timeouts must not walk it).
    labelfuzz::signals::mark_target_unwinding();
    let text = |ptr: *const u8, len: usize| {
        if ptr.is_null() || len == 0 {
            String::new()
        } else {
            // SAFETY: the caller passes `len` readable bytes at `ptr`.
            String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(ptr, len) }).into_owned()
        }
    };
    let file = text(file, file_len);
    let location = if file.is_empty() {
        String::new()
    } else {
        format!("{file}:{line}:{column}")
    };
    // Up to 64 frames: the panic machinery's, then the target's (a report shows the latter).
    let stack = if labelfuzz::crash::panic_stacks_kept() {
        labelfuzz::signals::current_stack(64)
    } else {
        Vec::new()
    };
    labelfuzz::crash::record_panic_with_stack(location, text(message, message_len), stack);
    TARGET_PANICKED.store(true, Ordering::Relaxed);
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
