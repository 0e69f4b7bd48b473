//! Inputs the harness rejects: libFuzzer's `-1` return from `LLVMFuzzerTestOneInput` and
//! cargo-fuzz's `Corpus::Reject`. A rejected execution still counts, and a crash in it is still a
//! crash label, but its coverage makes it no label's best: it never enters the corpus.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the harness during an execution, read once after it.
static REJECTED: AtomicBool = AtomicBool::new(false);

/// Marks the input being run as rejected (call from inside the target).
pub fn reject_input() {
    REJECTED.store(true, Ordering::Relaxed);
}

/// Whether the harness rejected the last input; clears the mark.
#[must_use]
pub fn take_rejected() -> bool {
    REJECTED.swap(false, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rejection_is_read_once() {
        let _ = take_rejected();
        assert!(!take_rejected());
        reject_input();
        assert!(take_rejected());
        assert!(!take_rejected());
    }
}
