//! Crash reports in libFuzzer's shape, for the tools that read libFuzzer's output: OSS-Fuzz's and
//! ClusterFuzzLite's libFuzzer engine, and scripts around `cargo fuzz run`.
//!
//! Each crash label of the run gets the block libFuzzer prints for its one crash: the
//! `==PID== ERROR: libFuzzer: …` line, the stack in sanitizer format (`#N 0xADDR in function
//! file:line:col`), `SUMMARY: …`, the reproducer in hex and text, `Test unit written to PATH`
//! and, for inputs of up to 256 bytes, its `Base64:` line. The exit status is libFuzzer's:
//! 77 for a crash, 70 for a timeout, 71 for running out of memory (`-error_exitcode` and
//! `-timeout_exitcode` change the first two).

use std::fmt::Write as _;
use std::path::Path;

use crate::report::CrashSummary;

/// libFuzzer prints the Base64 form of units up to this size.
const MAX_BASE64_LEN: usize = 256;

/// libFuzzer's exit statuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitCodes {
    /// A crash (`-error_exitcode`, 77).
    pub error: i32,
    /// A timeout (`-timeout_exitcode`, 70).
    pub timeout: i32,
    /// Out of memory (71).
    pub oom: i32,
}

impl Default for ExitCodes {
    fn default() -> Self {
        Self {
            error: 77,
            timeout: 70,
            oom: 71,
        }
    }
}

impl ExitCodes {
    /// The status for a run whose crashes are `crashes`: that of the first found, 0 for none.
    #[must_use]
    pub fn for_crashes(&self, crashes: &[CrashSummary]) -> i32 {
        first_found(crashes).map_or(0, |crash| match crash.kind.as_str() {
            "timeout" => self.timeout,
            "oom" => self.oom,
            _ => self.error,
        })
    }
}

fn first_found(crashes: &[CrashSummary]) -> Option<&CrashSummary> {
    crashes
        .iter()
        .min_by(|a, b| a.first_found_execs.cmp(&b.first_found_execs))
}

/// Standard Base64 with padding.
#[must_use]
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Frames of the panic machinery, of the hook that reported the panic and of labelfuzz's own
/// stack walk: a panic's report starts at the first frame that is none of them.
fn is_machinery(function: &str) -> bool {
    is_runtime(function)
        || [
            "std::panicking",
            "core::panicking",
            "std::panic",
            "core::panic",
            "std::sys::backtrace",
            "__rustc::",
            "rust_begin_unwind",
            "backtrace::",
            "core::result::unwrap_failed",
            "core::option::expect_failed",
            "core::option::unwrap_failed",
            "<alloc::boxed::Box<",
        ]
        .iter()
        .any(|prefix| function.starts_with(prefix))
}

/// Frames of labelfuzz below the target: the glue that called it, and the runtime (every crate
/// of labelfuzz, and LibAFL's), as crash sites leave them out.
fn is_runtime(function: &str) -> bool {
    crate::signals::is_fuzzer_function(function)
}

/// The sanitizer-style stack lines of `crash`, from the target's frame down to the fuzzer's
/// entry point (`LLVMFuzzerTestOneInput`).
#[must_use]
pub fn stack(crash: &CrashSummary) -> Vec<String> {
    let lines = crate::signals::stack_lines(&crash.frames);
    // A panic's stack starts in the panic machinery (and the hook that reported it): the target's
    // frames start at the first frame that is not part of it.
    let start = if crash.kind == "panic" {
        lines
            .iter()
            .position(|l| !is_machinery(&l.function))
            .unwrap_or(lines.len())
    } else {
        0
    };
    // Below the target: labelfuzz-sys's glue or the runtime (a Rust target), or the C harness's
    // entry point, which libFuzzer's stacks show as their last target frame.
    let end = lines[start..]
        .iter()
        .position(|l| is_runtime(&l.function))
        .map(|i| start + i)
        .or_else(|| {
            lines[start..]
                .iter()
                .position(|l| l.function == "LLVMFuzzerTestOneInput")
                .map(|i| start + i + 1)
        })
        .unwrap_or(lines.len());
    let mut out: Vec<String> = lines[start..end]
        .iter()
        .enumerate()
        .map(|(i, l)| match &l.source {
            Some(source) => format!("    #{i} {:#x} in {} {source}", l.address, l.function),
            None => format!("    #{i} {:#x} in {}", l.address, l.function),
        })
        .collect();
    if out.is_empty() && crash.kind == "panic" && !crash.location.is_empty() {
        // No frames were recorded (a panic caught by the engine itself): the site alone.
        out.push(format!("    #0 0x0 in <panic> {}", crash.location));
    }
    out
}

/// What libFuzzer calls the failure, on its `ERROR:` and `SUMMARY:` lines.
fn failure(crash: &CrashSummary, timeout_secs: f64) -> (String, String) {
    match crash.kind.as_str() {
        "timeout" => (
            format!("timeout after {} seconds", timeout_secs.round()),
            "libFuzzer: timeout".into(),
        ),
        "oom" => (
            "out-of-memory (used: above the limit)".into(),
            "libFuzzer: out-of-memory".into(),
        ),
        "sanitizer" => (
            "deadly signal".into(),
            format!(
                "AddressSanitizer: {}",
                crash
                    .message
                    .split_whitespace()
                    .next()
                    .unwrap_or("unknown-crash")
            ),
        ),
        _ => ("deadly signal".into(), "libFuzzer: deadly signal".into()),
    }
}

/// The report block for one crash; `reproducer` is the file written (the artifact copy where
/// one was asked for), `input` its bytes.
#[must_use]
pub fn report(crash: &CrashSummary, reproducer: &Path, input: &[u8], timeout_secs: f64) -> String {
    let pid = std::process::id();
    let (error, summary) = failure(crash, timeout_secs);
    let mut out = String::new();
    if crash.kind == "panic" {
        let _ = writeln!(
            out,
            "thread '<unnamed>' panicked at {}:\n{}",
            crash.location, crash.message
        );
    }
    let _ = writeln!(out, "=={pid}== ERROR: libFuzzer: {error}");
    for line in stack(crash) {
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(out, "\nSUMMARY: {summary}");
    let _ = writeln!(
        out,
        "MS: 0 ; base unit: 0000000000000000000000000000000000000000"
    );
    let hex: String = input.iter().map(|b| format!("0x{b:x},")).collect();
    let _ = writeln!(out, "{hex}");
    let _ = writeln!(out, "{}", crate::dictionary::escape_bytes(input));
    let prefix = reproducer
        .parent()
        .map(|p| format!("{}/", p.display()))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "artifact_prefix='{prefix}'; Test unit written to {}",
        reproducer.display()
    );
    if input.len() <= MAX_BASE64_LEN {
        let _ = writeln!(out, "Base64: {}", base64(input));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crash(kind: &str, execs: u64) -> CrashSummary {
        CrashSummary {
            label: String::new(),
            kind: kind.into(),
            location: "src/lib.rs:3:5".into(),
            message: "boom".into(),
            input: "crashes/crash-1".into(),
            len: 4,
            shrunk: true,
            first_found_secs: 0.0,
            first_found_execs: execs,
            pattern: None,
            pattern_executions: None,
            typed_pattern: None,
            same_bug_as: Vec::new(),
            frames: Vec::new(),
        }
    }

    #[test]
    fn base64_is_the_standard_alphabet_with_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"FUZZ"), "RlVaWg==");
        assert_eq!(base64(&[0xff, 0x00, 0x80]), "/wCA");
    }

    #[test]
    fn the_first_crash_found_decides_the_exit_status() {
        let codes = ExitCodes::default();
        assert_eq!(codes.for_crashes(&[]), 0);
        assert_eq!(
            codes.for_crashes(&[crash("panic", 9), crash("timeout", 3)]),
            70
        );
        assert_eq!(codes.for_crashes(&[crash("oom", 1)]), 71);
        assert_eq!(codes.for_crashes(&[crash("signal", 1)]), 77);
    }

    #[test]
    fn a_panic_report_has_every_line_libfuzzer_runners_read() {
        let text = report(&crash("panic", 1), Path::new("art/crash-1"), b"FUZZ", 1.0);
        assert!(text.starts_with("thread '<unnamed>' panicked at src/lib.rs:3:5:\nboom\n"));
        assert!(text.contains(&format!(
            "=={}== ERROR: libFuzzer: deadly signal\n",
            std::process::id()
        )));
        assert!(
            text.contains("    #0 0x0 in <panic> src/lib.rs:3:5\n"),
            "{text}"
        );
        assert!(text.contains("\nSUMMARY: libFuzzer: deadly signal\n"));
        assert!(text.contains("0x46,0x55,0x5a,0x5a,\nFUZZ\n"));
        assert!(text.contains("artifact_prefix='art/'; Test unit written to art/crash-1\n"));
        assert!(text.ends_with("Base64: RlVaWg==\n"));
        let long = report(&crash("timeout", 1), Path::new("t"), &[0; 300], 1.2);
        assert!(long.contains("ERROR: libFuzzer: timeout after 1 seconds"));
        assert!(long.contains("SUMMARY: libFuzzer: timeout"));
        assert!(!long.contains("Base64:"));
    }
}
