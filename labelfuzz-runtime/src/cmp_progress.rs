//! Comparison progress: labels for how far the target's comparisons got (`--cmp-progress`).
//!
//! Edges and hit counts see a branch only once it is taken. A counter compared to a constant
//! (`run = d[i] == 'C' ? run + 1 : 0; if (run == 4) trap()`) compiles to a select and one branch
//! taken only at the bug, so nothing rewards `CC` over `C` on the way. Two things do change, and
//! each is a label here, per comparison site (`src/sancov_cmp.c` records them):
//! - how many times the operands came out equal in the execution, by hit-count bucket
//!   (`cmp:SITE:equal:3`): `CCC` satisfies `d[i] == 'C'` once more than `CC`;
//! - how close the operands came at best, as the bit length of the smallest difference
//!   (`cmp:SITE:distance<2^2`), for operands wider than a byte and only while the site has never
//!   been equal in this process: `run` reaching 3 is one bit from 4.
//!
//! Unlike libFuzzer's value profile (`-use_value_profile=1`, kept as it was), clearing and reading
//! cost what the target used (the sites an execution touched are listed as it runs), and a site
//! stops producing distances once it is solved. The best-per-label table keeps one input per
//! label, so the corpus grows by the steps taken, not by every input that made one. By default
//! it starts only once the run's edges stall (the engine's stall switch): what it costs is
//! clearest on SQLite, whose parser runs thousands of comparisons with constants per input (the
//! callbacks' work slows every execution, and hundreds of labels that never change dilute the
//! schedule), while on libdeflate and xz, whose edges grow in rare steps after the first
//! minutes, it finds more.

use crate::labels::Label;

const MAP_SIZE: usize = 65_536;

/// One site's record in `src/sancov_cmp.c`.
#[repr(C)]
#[derive(Clone, Copy)]
struct ProgressCell {
    equal: u8,
    /// 65 minus the bit length of the smallest difference (0: none recorded).
    closeness: u8,
    solved: u8,
    touched: u8,
}

extern "C" {
    static mut labelfuzz_progress_enabled: u8;
    static mut labelfuzz_progress_map: [ProgressCell; MAP_SIZE];
    static mut labelfuzz_progress_touched: [u16; MAP_SIZE];
    static mut labelfuzz_progress_touched_len: u32;
}

fn enabled() -> bool {
    // SAFETY: a byte set on the fuzzing thread between executions, never while the target runs.
    unsafe { std::ptr::addr_of!(labelfuzz_progress_enabled).read() != 0 }
}

/// Makes comparison progress labels from the next execution on (the engine calls it before
/// the first with `--cmp-progress 1`, and once edges stall with `--cmp-progress 2`).
pub fn enable() {
    // SAFETY: a byte the comparison callbacks only read; set between executions on the thread
    // that runs the target.
    unsafe {
        *std::ptr::addr_of_mut!(labelfuzz_progress_enabled) = 1;
    }
}

/// The sites the last execution touched.
///
/// # Safety
/// Only between executions, on the thread that runs the target (the callbacks write the list
/// while it runs).
unsafe fn touched() -> &'static [u16] {
    let len = (std::ptr::addr_of!(labelfuzz_progress_touched_len).read() as usize).min(MAP_SIZE);
    let list = &*std::ptr::addr_of!(labelfuzz_progress_touched);
    &list[..len]
}

/// Clears the last execution's records before the next one (what it touched only; a site's
/// `solved` mark stays for the process's life).
pub fn reset_before_run() {
    if !enabled() {
        return;
    }
    // SAFETY: between executions, on the target's thread.
    unsafe {
        let map = &mut *std::ptr::addr_of_mut!(labelfuzz_progress_map);
        for &site in touched() {
            let cell = &mut map[usize::from(site)];
            cell.equal = 0;
            cell.closeness = 0;
            cell.touched = 0;
        }
        *std::ptr::addr_of_mut!(labelfuzz_progress_touched_len) = 0;
    }
}

/// Appends the comparison progress labels of the last execution to `out` (nothing when off).
pub fn collect_labels(out: &mut Vec<Label>) {
    if !enabled() {
        return;
    }
    // SAFETY: read after the execution, on the thread that ran it.
    unsafe {
        let map = &*std::ptr::addr_of!(labelfuzz_progress_map);
        for &site in touched() {
            let cell = map[usize::from(site)];
            let site = usize::from(site);
            if cell.equal != 0 {
                out.push(Label::comparison_equal_count(site, cell.equal));
            }
            if cell.closeness != 0 {
                out.push(Label::comparison_distance(site, 65 - cell.closeness));
            }
        }
    }
}
