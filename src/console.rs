//! The fuzzer's own messages, kept apart from the target's output.
//!
//! libFuzzer's `-close_fd_mask` silences the target: 1 closes its stdout, 2 its stderr. The
//! fuzzing process then points those descriptors at /dev/null and keeps a copy of the real
//! stderr, where [`say!`](crate::say) writes progress lines, warnings and errors.

use std::sync::atomic::{AtomicI32, Ordering};

/// The descriptor the fuzzer's messages go to (stderr, or its copy once stderr is silenced).
static OWN_STDERR: AtomicI32 = AtomicI32::new(2);

/// Writes one line of the fuzzer's own to its stderr (a failed write is dropped: a message is
/// never worth stopping the run for).
pub fn say(args: std::fmt::Arguments<'_>) {
    let text = format!("{args}\n");
    let fd = OWN_STDERR.load(Ordering::Relaxed);
    let mut written = 0;
    while written < text.len() {
        // SAFETY: writes from a live buffer to a descriptor this process owns.
        let n = unsafe { libc::write(fd, text.as_ptr().add(written).cast(), text.len() - written) };
        if n <= 0 {
            break;
        }
        written += n.unsigned_abs();
    }
}

/// Prints a line of the fuzzer's own, like `eprintln!`, even when `-close_fd_mask=2` silences
/// the target's stderr.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::console::say(format_args!($($arg)*))
    };
}

/// Silences the target's output as libFuzzer's `-close_fd_mask` does: bit 1 closes stdout, bit
/// 2 stderr (the fuzzer's own messages still reach the real stderr).
///
/// # Errors
/// When /dev/null cannot be opened or a descriptor not duplicated.
pub fn close_target_output(mask: u8) -> std::io::Result<()> {
    if mask & 3 == 0 {
        return Ok(());
    }
    let last_error = std::io::Error::last_os_error;
    // SAFETY: plain descriptor calls on a NUL-terminated path and this process's descriptors.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if null < 0 {
            return Err(last_error());
        }
        if mask & 2 != 0 && OWN_STDERR.load(Ordering::Relaxed) == 2 {
            let copy = libc::fcntl(2, libc::F_DUPFD_CLOEXEC, 3);
            if copy < 0 {
                return Err(last_error());
            }
            OWN_STDERR.store(copy, Ordering::Relaxed);
            if libc::dup2(null, 2) < 0 {
                return Err(last_error());
            }
        }
        if mask & 1 != 0 && libc::dup2(null, 1) < 0 {
            return Err(last_error());
        }
        libc::close(null);
    }
    Ok(())
}
