//! A target that does to its process what real targets do, chosen with `HOSTILE=`:
//! - `chdir`: changes the working directory to `/` on its first execution;
//! - `close-stdio`: closes descriptors 0, 1 and 2 on its first execution;
//! - `chatty`: writes 1 MiB to stdout on every execution;
//! - `own-handlers`: installs its own SIGSEGV and SIGALRM handlers on its first execution;
//! - `rlimits`: lowers its limits on open files (to 6) and on file size (to 1 byte) on its first
//!   execution;
//! - `fork`: forks a child on every execution that returns through `exit(0)` (or, for an input
//!   starting with `FRK`, writes through a null pointer), and runs `/bin/true` (fork and exec);
//! - `leak`: leaks 64 KiB on every execution;
//! - `busy`: computes for 20 ms of its own CPU time on every execution (a slow target, for runs
//!   on a machine that keeps the fuzzer waiting for a CPU).
//!
//! Its planted bugs: an input starting with `BUG` panics; one starting with `SEG` writes through
//! a null pointer (SIGSEGV, which a replaced handler would hide); `THR` does the same null write
//! in a thread of its own, and `HNG` waits for a thread that never ends. The fault tests (`tests/faults.rs`)
//! check that the run finds it, keeps its reproducer where it belongs, and says what the target
//! broke.

#![no_main]

use std::io::Write as _;
use std::sync::Once;

extern "C" fn ignore(_: libc::c_int) {}

fn misbehave_once(how: &str) {
    static FIRST: Once = Once::new();
    FIRST.call_once(|| match how {
        "chdir" => {
            std::env::set_current_dir("/").expect("chdir /");
        }
        "close-stdio" => {
            // SAFETY: closing the standard descriptors is the behaviour under test.
            unsafe {
                libc::close(0);
                libc::close(1);
                libc::close(2);
            }
        }
        "own-handlers" => {
            // SAFETY: replacing signal handlers is the behaviour under test.
            unsafe {
                libc::signal(libc::SIGSEGV, ignore as *const () as libc::sighandler_t);
                libc::signal(libc::SIGALRM, ignore as *const () as libc::sighandler_t);
            }
        }
        "rlimits" => {
            let lower = |resource, to: libc::rlim_t| {
                // SAFETY: getrlimit/setrlimit on this process, the behaviour under test.
                unsafe {
                    let mut limit: libc::rlimit = std::mem::zeroed();
                    libc::getrlimit(resource, &raw mut limit);
                    limit.rlim_cur = to;
                    libc::setrlimit(resource, &raw const limit);
                }
            };
            lower(libc::RLIMIT_NOFILE, 6);
            lower(libc::RLIMIT_FSIZE, 1);
        }
        _ => {}
    });
}

/// Spins until this thread has used `millis` of CPU time.
fn compute_for(millis: i64) {
    let cpu_now = || {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime with a valid out-parameter.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &raw mut now) };
        now.tv_sec * 1_000 + now.tv_nsec / 1_000_000
    };
    let until = cpu_now() + millis;
    while cpu_now() < until {
        std::hint::spin_loop();
    }
}

/// Writes through a null pointer.
fn null_write() {
    let null: *mut u8 = std::hint::black_box(std::ptr::null_mut());
    // SAFETY: none — this is the planted fault.
    unsafe { null.write_volatile(1) };
}

/// Forks a child that leaves through `exit(0)` (running the process's exit handlers) or, when
/// `crash_in_child`, writes through a null pointer; waits for it, then runs `/bin/true`.
fn fork_and_exec(crash_in_child: bool) {
    // SAFETY: the child only calls exit or faults; the parent waits for it.
    unsafe {
        let child = libc::fork();
        if child == 0 {
            if crash_in_child {
                null_write();
            }
            libc::exit(0);
        }
        if child > 0 {
            let mut status = 0;
            libc::waitpid(child, &raw mut status, 0);
        }
    }
    let _ = std::process::Command::new("/bin/true").status();
}

labelfuzz::fuzz_target!(|data: &[u8]| {
    let how = std::env::var("HOSTILE").unwrap_or_default();
    misbehave_once(&how);
    match how.as_str() {
        "chatty" => {
            let _ = std::io::stdout().write_all(&[b'.'; 1 << 20]);
        }
        "fork" => fork_and_exec(data.starts_with(b"FRK")),
        "leak" => {
            std::hint::black_box(Vec::leak(vec![1u8; 64 << 10]));
        }
        "busy" => compute_for(20),
        _ => {}
    }
    if data.len() >= 3 && data[0] == b'B' && data[1] == b'U' && data[2] == b'G' {
        panic!("the planted bug");
    }
    if data.len() >= 3 && data[0] == b'S' && data[1] == b'E' && data[2] == b'G' {
        null_write();
    }
    if data.len() >= 3 && data[0] == b'T' && data[1] == b'H' && data[2] == b'R' {
        let _ = std::thread::spawn(null_write).join();
    }
    if data.len() >= 3 && data[0] == b'H' && data[1] == b'N' && data[2] == b'G' {
        let _ = std::thread::spawn(|| loop {
            std::thread::sleep(std::time::Duration::from_millis(10));
        })
        .join();
    }
});
