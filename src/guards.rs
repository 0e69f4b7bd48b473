//! The process-wide guards of a fuzzing process, installed by one call: the panic hook that
//! records target panics, the chained signal handler that records crash sites, the exit guard
//! that turns a target's `exit()` into a crash, the memory watcher behind `--rss-limit-mb`, the
//! stop flag for Ctrl-C and SIGTERM, and the note of the signal handlers the target must leave
//! alone.

/// Installs every guard of a fuzzing process.
///
/// Call it once, after LibAFL's executor is built: the executor installs its own panic hook and
/// signal handlers, and ours must come after them to run first and chain to them.
pub fn install_in_fuzzing_process(rss_limit_mb: usize, timeout: std::time::Duration) {
    crate::crash::install_panic_hook();
    crate::signals::install();
    crate::signals::install_alarm_guard(timeout);
    crate::crash::install_exit_guard();
    crate::memory::start_watch(rss_limit_mb);
    crate::interrupt::install_in_fuzzer();
    // Last: every handler of the fuzzer is in place now.
    crate::signals::note_handlers();
}
