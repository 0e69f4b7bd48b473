//! Timeouts the machine caused, not the target.
//!
//! The timeout is wall-clock time, as in libFuzzer and AFL++. On a loaded machine (a shared CI
//! runner, other fuzzers on the same cores) a process can wait for a CPU longer than the
//! timeout while its input would take milliseconds: the run then records a hang that does not
//! reproduce, restarts the client, and shrinks the "hang" down to whatever input was running
//! during the next stall — the empty one, in a soak run that shared its cores with a benchmark.
//!
//! The kernel counts, per thread, the time it spent runnable but waiting for a CPU
//! (`run_delay` in `/proc/<pid>/task/<tid>/schedstat`). When the timer says an execution is
//! over its time, the guard first watches a short window: if the fuzzing thread spent most of
//! it waiting for a CPU, the machine is the cause, and the execution gets another window; a
//! target that runs or sleeps (a loop, a deadlock) through the window is timed out as before.
//! So is one that got a timeout's worth of its own time (running or sleeping) in its windows: a
//! loop on a crowded core. A stretch is capped at [`MAX_STRETCH`] timeouts, so a hang under a
//! machine that never lets go is still reported.
//!
//! The same holds while a sanitizer prints the report of a bug it found (it symbolizes the
//! stack first, seconds on a large binary or a loaded machine): the execution is that bug, and
//! its abort is coming.

use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::time::Duration;

/// How much longer than its timeout a starved execution may take before it is timed out anyway.
const MAX_STRETCH: u64 = 20;
/// The watched window: this share of the timeout, within the bounds below.
const WINDOW_SHARE: u64 = 8;
/// At least a few scheduler time slices (a tick is up to 10 ms): a window shorter than the slice
/// the thread is in the middle of would find a starved thread running.
const MIN_WINDOW_NS: u64 = 20_000_000;
const MAX_WINDOW_NS: u64 = 250_000_000;

/// The timeout, in nanoseconds (0: not set, nothing is stretched).
static TIMEOUT_NS: AtomicU64 = AtomicU64::new(0);
/// The coarse clock's tick (ns): an execution that read less than this short of its timeout may
/// be over it by LibAFL's fine clock.
static COARSE_TICK_NS: AtomicU64 = AtomicU64::new(0);
/// When the current execution entered the target (coarse monotonic clock, ns).
static STARTED_NS: AtomicU64 = AtomicU64::new(0);
/// The execution the watched window belongs to (`target_entries` then; 0 none), when the window
/// began (fine monotonic clock: a window is a few ticks of the coarse one) and the fuzzing
/// thread's `run_delay` then.
static WATCHED_EXECUTION: AtomicU64 = AtomicU64::new(0);
static WINDOW_START_NS: AtomicU64 = AtomicU64::new(0);
static WINDOW_DELAY_NS: AtomicU64 = AtomicU64::new(0);
/// The time the watched execution spent not waiting for a CPU (running or sleeping) in its
/// windows so far: once that reaches the timeout, it has had its time whatever the machine did.
static WATCHED_PROGRESS_NS: AtomicU64 = AtomicU64::new(0);
/// The fuzzing thread, whose scheduler statistics are read (0: not set up).
static FUZZING_THREAD: AtomicI32 = AtomicI32::new(0);

/// The coarse monotonic clock: read once an execution, where the fine clock's cost shows on a
/// target that runs in a microsecond; its tick (a few ms) is far below any timeout and window.
fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC_COARSE)
}

/// `clock` now, in ns.
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime with a valid out-parameter; async-signal-safe.
    unsafe { libc::clock_gettime(clock, &raw mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// Sets the timeout and notes the calling thread as the fuzzing thread.
pub(super) fn set_up(timeout: Duration) {
    // SAFETY: gettid has no preconditions.
    let thread = unsafe { libc::gettid() };
    FUZZING_THREAD.store(thread, Ordering::Relaxed);
    let mut tick = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_getres with a valid out-parameter.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &raw mut tick) };
    COARSE_TICK_NS.store(
        tick.tv_sec as u64 * 1_000_000_000 + tick.tv_nsec as u64,
        Ordering::Relaxed,
    );
    TIMEOUT_NS.store(
        u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX),
        Ordering::Relaxed,
    );
}

/// The fuzzing thread's id (0: not set up yet).
pub(super) fn fuzzing_thread() -> i32 {
    FUZZING_THREAD.load(Ordering::Relaxed)
}

/// Notes that an execution enters the target now.
pub(super) fn execution_starts() {
    STARTED_NS.store(monotonic_ns(), Ordering::Relaxed);
}

/// `/proc/self/task/<thread>/schedstat`, NUL-terminated, written without allocating.
fn schedstat_path(thread: i32) -> [u8; 48] {
    const HEAD: &[u8] = b"/proc/self/task/";
    const TAIL: &[u8] = b"/schedstat";
    let mut path = [0u8; 48];
    path[..HEAD.len()].copy_from_slice(HEAD);
    let mut digits = [0u8; 10];
    let mut count = 0;
    let mut rest = thread.unsigned_abs();
    loop {
        digits[count] = b'0' + (rest % 10) as u8;
        count += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let mut at = HEAD.len();
    for &digit in digits[..count].iter().rev() {
        path[at] = digit;
        at += 1;
    }
    path[at..at + TAIL.len()].copy_from_slice(TAIL);
    path
}

/// `thread`'s time spent waiting for a CPU so far (ns): the second field of its `schedstat`.
/// Async-signal-safe: open, read and close, parsed in place.
fn run_delay_ns(thread: i32) -> Option<u64> {
    let path = schedstat_path(thread);
    let mut buffer = [0u8; 96];
    // SAFETY: the path is NUL-terminated; the buffer outlives the read.
    let read = unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let read = libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len());
        libc::close(fd);
        read
    };
    let text = buffer.get(..usize::try_from(read).ok()?)?;
    let mut fields = text.split(|&b| b == b' ' || b == b'\n');
    fields.next()?;
    let field = fields.next()?;
    if field.is_empty() {
        return None;
    }
    field.iter().try_fold(0u64, |value, &digit| {
        digit.is_ascii_digit().then(|| {
            value
                .saturating_mul(10)
                .saturating_add(u64::from(digit - b'0'))
        })
    })
}

/// What the guard does with a timer signal during `execution`.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Not over its time, or over it through its own doing: hand the signal on.
    Deliver,
    /// Over its time while the machine kept it waiting: look again after this many ns.
    WatchFor(u64),
}

/// Decides, for a timer signal during `execution`, whether the execution is over its time
/// through the machine's doing.
pub(super) fn verdict(execution: u64) -> Verdict {
    let timeout = TIMEOUT_NS.load(Ordering::Relaxed);
    if timeout == 0 {
        return Verdict::Deliver;
    }
    let now = monotonic_ns();
    let elapsed = now
        .saturating_sub(STARTED_NS.load(Ordering::Relaxed))
        .saturating_add(COARSE_TICK_NS.load(Ordering::Relaxed));
    if elapsed < timeout || elapsed >= timeout.saturating_mul(MAX_STRETCH) {
        return Verdict::Deliver;
    }
    let window = (timeout / WINDOW_SHARE).clamp(MIN_WINDOW_NS, MAX_WINDOW_NS);
    if super::sanitizer::sanitizer_reporting() {
        // A sanitizer found a bug and is printing its report; the abort that ends the
        // execution as that bug follows.
        return Verdict::WatchFor(window);
    }
    // A kernel without scheduler statistics has none to read: nothing is found starved there.
    let Some(delay) = run_delay_ns(FUZZING_THREAD.load(Ordering::Relaxed)) else {
        return Verdict::Deliver;
    };
    let watched = WATCHED_EXECUTION.swap(execution, Ordering::Relaxed) == execution;
    let window_now = clock_ns(libc::CLOCK_MONOTONIC);
    let window_wall =
        window_now.saturating_sub(WINDOW_START_NS.swap(window_now, Ordering::Relaxed));
    let window_waited = delay.saturating_sub(WINDOW_DELAY_NS.swap(delay, Ordering::Relaxed));
    if !watched {
        WATCHED_PROGRESS_NS.store(0, Ordering::Relaxed);
        return Verdict::WatchFor(window);
    }
    let before = WATCHED_PROGRESS_NS.load(Ordering::Relaxed);
    match progress_after_window(window_wall, window_waited, before, timeout) {
        Some(progress) => {
            WATCHED_PROGRESS_NS.store(progress, Ordering::Relaxed);
            Verdict::WatchFor(window)
        }
        None => Verdict::Deliver,
    }
}

/// After a watched window of `wall` ns in which the thread waited `waited` ns for a CPU, with
/// `before` ns of its own time (running or sleeping) in the execution's earlier windows: that
/// time so far when the execution gets another window, `None` when it is over its time.
///
/// A window it did not mostly wait through ends it. A hang on a crowded core is starved in
/// every window too, so it is also ended once the windows have given it a timeout's worth of
/// its own time, more than any input that fits in the timeout on an idle machine needs: were
/// it only ended at the stretch's cap, each hang would cost twenty timeouts, and the time for
/// shrinking slow crashes would run out on one.
fn progress_after_window(wall: u64, waited: u64, before: u64, timeout: u64) -> Option<u64> {
    if !starved(wall, waited) {
        return None;
    }
    let progress = before.saturating_add(wall.saturating_sub(waited));
    (progress < timeout).then_some(progress)
}

/// Whether a window of `wall` ns in which the thread waited `waited` ns for a CPU was mostly
/// waiting.
fn starved(wall: u64, waited: u64) -> bool {
    waited.saturating_mul(2) > wall
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_mostly_spent_waiting_for_a_cpu_is_starved() {
        assert!(starved(100, 90));
        assert!(
            !starved(100, 50),
            "an even share of a core is not starvation"
        );
        assert!(
            !starved(100, 0),
            "a sleeping or running target is timed out"
        );
    }

    #[test]
    fn a_starved_execution_is_timed_out_once_its_own_time_reaches_the_timeout() {
        // A third of a core: each 30 ms window gives it 10 ms of its own.
        let mut progress = 0;
        for window in 1..=3 {
            progress = progress_after_window(30, 20, progress, 35).unwrap_or_else(|| {
                panic!("window {window}: 10 ms a window is still short of 35 ms")
            });
        }
        assert_eq!(progress, 30);
        assert_eq!(progress_after_window(30, 20, progress, 35), None);
        assert_eq!(
            progress_after_window(30, 10, 0, 35),
            None,
            "a window it mostly ran through is its own doing"
        );
    }

    #[test]
    fn the_path_names_the_thread() {
        let path = schedstat_path(1234567);
        let end = path.iter().position(|&b| b == 0).expect("NUL-terminated");
        assert_eq!(&path[..end], b"/proc/self/task/1234567/schedstat");
        let path = schedstat_path(7);
        assert!(path.starts_with(b"/proc/self/task/7/schedstat\0"));
    }

    #[test]
    fn a_target_that_sleeps_past_its_time_is_watched_once_then_timed_out() {
        // SAFETY: gettid has no preconditions.
        let this_thread = unsafe { libc::gettid() };
        set_up(Duration::from_millis(5));
        execution_starts();
        std::thread::sleep(Duration::from_millis(15));
        if !std::path::Path::new("/proc/self/schedstat").exists() {
            // A kernel without scheduler statistics: nothing is found starved there.
            assert_eq!(verdict(7), Verdict::Deliver);
            return;
        }
        let before = run_delay_ns(this_thread).expect("this thread's run_delay");
        // Over its time: the first look opens a window rather than timing it out.
        assert_eq!(verdict(7), Verdict::WatchFor(MIN_WINDOW_NS));
        std::thread::sleep(Duration::from_nanos(MIN_WINDOW_NS));
        // It slept through the window (it did not wait for a CPU): timed out.
        assert_eq!(verdict(7), Verdict::Deliver);
        assert!(run_delay_ns(this_thread).is_some_and(|after| after >= before));
    }
}
