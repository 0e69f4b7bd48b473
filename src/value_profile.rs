//! libFuzzer's `-use_value_profile=1`: comparisons as labels.
//!
//! With the flag, every comparison site the target runs is a label per number of operand bits
//! that matched at best in the execution (`cmp:SITE:BITS`, from LibAFL's value-profile map,
//! which the SanitizerCoverage comparison callbacks fill). An input that gets one bit closer to
//! a magic value at some site is then the best input of a new label, so the search climbs
//! towards the value a bit at a time, where edges alone see nothing until it matches whole.
//! It costs speed (the map is cleared before every execution), as in libFuzzer.

use crate::labels::Label;

// Whether comparisons are labels in this process: the comparison callbacks (labelfuzz-runtime/src/sancov_cmp.c)
// fill the value-profile map only while it is set, and labelfuzz reads the map only then.
extern "C" {
    static mut labelfuzz_value_profile_enabled: u8;
}

fn enabled() -> bool {
    // SAFETY: a byte set once, before the target first runs, on the fuzzing thread.
    unsafe { std::ptr::addr_of!(labelfuzz_value_profile_enabled).read() != 0 }
}

// labelfuzz-runtime/src/sancov_cmp.c writes LibAFL's maps with the sizes it assumes.
const _: () = assert!(libafl_targets::CMP_MAP_SIZE == 65_536);
const _: () = assert!(libafl_targets::CMPLOG_MAP_W == 65_536);
const _: () = assert!(libafl_targets::CMPLOG_MAP_H == 32);
const _: () = assert!(
    std::mem::size_of::<libafl_targets::CmpLogMap>() == 65_536 * 4 + 65_536 * 32 * 24,
    "LibAFL's CmpLog map is not the layout labelfuzz-runtime/src/sancov_cmp.c writes"
);

/// Makes comparisons labels from now on.
pub fn enable() {
    // SAFETY: a byte the comparison callbacks only read; set before the target runs.
    unsafe {
        *std::ptr::addr_of_mut!(labelfuzz_value_profile_enabled) = 1;
    }
}

/// Clears the map before an execution (nothing when value profile is off).
pub fn reset_before_run() {
    if enabled() {
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
    if !enabled() {
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
