//! A target that does to its process what real targets do, chosen with `HOSTILE=`:
//! - `chdir`: changes the working directory to `/` on its first execution;
//! - `close-stdio`: closes descriptors 0, 1 and 2 on its first execution;
//! - `chatty`: writes 1 MiB to stdout on every execution;
//! - `own-handlers`: installs its own SIGSEGV and SIGALRM handlers on its first execution.
//!
//! Its planted bugs: an input starting with `BUG` panics; one starting with `SEG` writes through
//! a null pointer (SIGSEGV, which a replaced handler would hide). The fault tests (`tests/faults.rs`)
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
        _ => {}
    });
}

labelfuzz::fuzz_target!(|data: &[u8]| {
    let how = std::env::var("HOSTILE").unwrap_or_default();
    misbehave_once(&how);
    if how == "chatty" {
        let _ = std::io::stdout().write_all(&[b'.'; 1 << 20]);
    }
    if data.len() >= 3 && data[0] == b'B' && data[1] == b'U' && data[2] == b'G' {
        panic!("the planted bug");
    }
    if data.len() >= 3 && data[0] == b'S' && data[1] == b'E' && data[2] == b'G' {
        let null: *mut u8 = std::hint::black_box(std::ptr::null_mut());
        // SAFETY: none — this is the planted fault.
        unsafe { null.write_volatile(1) };
    }
});
