//! libFuzzer's `-use_value_profile=1`: comparisons as labels.
//!
//! With the flag, every comparison site the target runs is a label per number of operand bits
//! that matched at best in the execution (`cmp:SITE:BITS`, from LibAFL's value-profile map,
//! which the SanitizerCoverage comparison callbacks fill). An input that gets one bit closer to
//! a magic value at some site is then the best input of a new label, so the search climbs
//! towards the value a bit at a time, where edges alone see nothing until it matches whole.
//! It costs speed (the map is cleared before every execution), as in libFuzzer.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::labels::Label;

/// Whether comparisons are labels in this process.
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Makes comparisons labels from now on.
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Clears the map before an execution (nothing when value profile is off).
pub fn reset_before_run() {
    if ENABLED.load(Ordering::Relaxed) {
        // SAFETY: the map is only written by the comparison callbacks of the target, which
        // runs on this thread, after this returns.
        let map = &raw mut libafl_targets::CMP_MAP;
        unsafe {
            (*map).fill(0);
        }
    }
}

/// Appends the comparison labels of the last execution to `out` (nothing when off).
pub fn collect_labels(out: &mut Vec<Label>) {
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    // SAFETY: read after the execution, on the thread that ran it.
    let map = &raw const libafl_targets::CMP_MAP;
    let map = unsafe { &*map };
    let mut chunks = map.chunks_exact(8);
    let mut base = 0;
    for chunk in &mut chunks {
        if u64::from_ne_bytes(chunk.try_into().expect("chunk of eight")) != 0 {
            for (offset, &bits) in chunk.iter().enumerate() {
                if bits != 0 {
                    out.push(Label::comparison(base + offset, bits));
                }
            }
        }
        base += 8;
    }
}
