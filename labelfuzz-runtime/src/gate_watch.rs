//! Watching a few comparison sites through one execution: what gate repair reads of a mutant
//! (labelfuzz's `stages::gates`). `src/sancov_cmp.c` records, while watching is on, the first
//! operands each watched site compares, and nothing else: a mutant's checksum is read during
//! the mutant's own run, where a CmpLog-traced run would be one more execution that writes
//! every comparison of the target into LibAFL's 50 MiB map.

/// How many sites one execution can watch (`GATE_SITES` in `src/sancov_cmp.c`).
pub const WATCHED_SITES: usize = 4;

/// One watched site's record in `src/sancov_cmp.c`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Reading {
    a: u64,
    b: u64,
    seen: u8,
}

extern "C" {
    static mut labelfuzz_gate_watching: u8;
    static mut labelfuzz_gate_count: u32;
    static mut labelfuzz_gate_sites: [u32; WATCHED_SITES];
    static mut labelfuzz_gate_readings: [Reading; WATCHED_SITES];
}

/// Runs `execute` with the comparison sites `sites` watched (CmpLog map indices; past
/// [`WATCHED_SITES`] they are ignored) and returns its result with the operands each site
/// compared first, in the order of `sites` (`None`: the site was not reached, compared fewer
/// than 4 bytes, or is past [`WATCHED_SITES`]). An array, not a vector: it is read for every
/// mutant of a gated entry.
///
/// Call it on the thread that runs the target, between executions.
pub fn watching<R>(
    sites: &[usize],
    execute: impl FnOnce() -> R,
) -> (R, [Option<(u64, u64)>; WATCHED_SITES]) {
    let watched = &sites[..sites.len().min(WATCHED_SITES)];
    // SAFETY: the callbacks only read these while the target runs, on this thread; nothing
    // runs now.
    unsafe {
        let slots = &mut *std::ptr::addr_of_mut!(labelfuzz_gate_sites);
        let readings = &mut *std::ptr::addr_of_mut!(labelfuzz_gate_readings);
        for (i, &site) in watched.iter().enumerate() {
            // A site is a CmpLog map index, below 65 536.
            slots[i] = u32::try_from(site).unwrap_or(u32::MAX);
            readings[i].seen = 0;
        }
        *std::ptr::addr_of_mut!(labelfuzz_gate_count) = watched.len() as u32;
        *std::ptr::addr_of_mut!(labelfuzz_gate_watching) = 1;
    }
    let result = execute();
    // SAFETY: as above; the execution is over.
    let readings = unsafe {
        *std::ptr::addr_of_mut!(labelfuzz_gate_watching) = 0;
        *std::ptr::addr_of_mut!(labelfuzz_gate_count) = 0;
        *std::ptr::addr_of!(labelfuzz_gate_readings)
    };
    let mut sides = [None; WATCHED_SITES];
    for (side, reading) in sides.iter_mut().zip(&readings).take(watched.len()) {
        *side = (reading.seen != 0).then_some((reading.a, reading.b));
    }
    (result, sides)
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" {
        fn __sanitizer_cov_trace_cmp8(a: u64, b: u64);
        fn __sanitizer_cov_trace_cmp2(a: u16, b: u16);
    }

    /// One call site of the 8-byte callback, so that its comparisons share a site.
    #[inline(never)]
    fn compare(a: u64) {
        // SAFETY: labelfuzz's own callback, with plain integers.
        unsafe { __sanitizer_cov_trace_cmp8(a, 7) };
        // Work after the call keeps it from becoming a tail call (an optimised build's jump
        // would give the callback the caller's return address, a site per caller's call).
        std::hint::black_box(a);
    }

    #[test]
    fn a_watched_site_reports_its_first_wide_comparison_and_nothing_else() {
        let ((), none) = watching(&[0, 1, 2, 3], || {});
        assert_eq!(none, [None; WATCHED_SITES], "nothing ran");
        // The site is a hash of the call's return address: find it by watching every map
        // index, a batch at a time.
        let mut found = None;
        for start in (0..65_536).step_by(WATCHED_SITES) {
            let sites: Vec<usize> = (start..start + WATCHED_SITES).collect();
            let ((), sides) = watching(&sites, || {
                compare(0x1_0000_0001);
                compare(0x2_0000_0002);
            });
            if let Some(i) = sides.iter().position(Option::is_some) {
                found = Some((sites[i], sides[i]));
                break;
            }
        }
        let (site, sides) = found.expect("the comparison was seen at some site");
        assert_eq!(
            sides,
            Some((0x1_0000_0001, 7)),
            "the first comparison, not the second"
        );
        let ((), narrow) = watching(&[site], || {
            // SAFETY: as above; two bytes wide, narrower than any gate.
            unsafe { __sanitizer_cov_trace_cmp2(1, 2) };
        });
        assert_eq!(narrow, [None; WATCHED_SITES]);
        // Not watching: the callbacks record nothing for the next watch to find.
        compare(5);
        let ((), after) = watching(&[site], || {});
        assert_eq!(after, [None; WATCHED_SITES], "a new watch starts empty");
    }
}
