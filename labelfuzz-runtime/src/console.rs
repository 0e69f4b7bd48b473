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
    write_all(OWN_STDERR.load(Ordering::Relaxed), text.as_bytes());
}

/// Writes one line made of `parts` to the fuzzer's stderr without allocating, as a signal
/// handler must.
pub fn say_from_signal_handler(parts: &[&[u8]]) {
    let fd = OWN_STDERR.load(Ordering::Relaxed);
    for part in parts.iter().copied().chain([&b"\n"[..]]) {
        write_all(fd, part);
    }
}

/// A number's decimal digits, formatted without allocating.
#[derive(Clone, Copy, Debug)]
pub struct Decimal {
    digits: [u8; 10],
    start: usize,
}

impl Decimal {
    /// The digits, most significant first.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.digits[self.start..]
    }
}

/// Formats `value` in decimal without allocating (for signal handlers).
#[must_use]
pub fn decimal(mut value: u32) -> Decimal {
    let mut digits = [0u8; 10];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            return Decimal { digits, start };
        }
    }
}

fn write_all(fd: i32, bytes: &[u8]) {
    let mut written = 0;
    while written < bytes.len() {
        // SAFETY: writes from a live buffer to a descriptor this process owns.
        let n = unsafe {
            libc::write(
                fd,
                bytes.as_ptr().add(written).cast(),
                bytes.len() - written,
            )
        };
        if n <= 0 {
            break;
        }
        written += n.unsigned_abs();
    }
}

/// /dev/null, opened by [`keep_own_stderr`] (-1 until then).
static NULL: AtomicI32 = AtomicI32::new(-1);

/// Makes the fuzzer's messages go to a copy of stderr of their own (as `-close_fd_mask=2`
/// does), so that descriptor 2 can be silenced around code that writes to it unasked (see
/// [`silenced_stderr`]). Call once the fuzzing process has set up its descriptors.
pub fn keep_own_stderr() {
    // SAFETY: plain descriptor calls on this process's descriptors and a NUL-terminated path.
    unsafe {
        if OWN_STDERR.load(Ordering::Relaxed) == 2 {
            let copy = libc::fcntl(2, libc::F_DUPFD_CLOEXEC, 3);
            if copy >= 0 {
                OWN_STDERR.store(copy, Ordering::Relaxed);
            }
        }
        if NULL.load(Ordering::Relaxed) < 0 {
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            NULL.store(null, Ordering::Relaxed);
        }
    }
}

/// Runs `f` with descriptor 2 pointing at /dev/null, then puts it back. LibAFL 0.16.1's crash
/// handler writes a debugging line to stderr on every crash; the fuzzer's own messages go to
/// their copy meanwhile. Async-signal-safe (it only duplicates descriptors).
pub fn silenced_stderr(f: impl FnOnce()) {
    let null = NULL.load(Ordering::Relaxed);
    if null < 0 || OWN_STDERR.load(Ordering::Relaxed) == 2 {
        f();
        return;
    }
    // SAFETY: fcntl and dup2 on this process's descriptors.
    let saved = unsafe { libc::fcntl(2, libc::F_DUPFD_CLOEXEC, 3) };
    if saved < 0 || unsafe { libc::dup2(null, 2) } < 0 {
        f();
        return;
    }
    f();
    // SAFETY: as above; `saved` is this function's own descriptor.
    unsafe {
        libc::dup2(saved, 2);
        libc::close(saved);
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

#[cfg(test)]
mod tests {
    use super::decimal;

    #[test]
    fn decimal_digits_without_allocation() {
        assert_eq!(decimal(0).as_bytes(), b"0");
        assert_eq!(decimal(139).as_bytes(), b"139");
        assert_eq!(decimal(u32::MAX).as_bytes(), b"4294967295");
    }
}
