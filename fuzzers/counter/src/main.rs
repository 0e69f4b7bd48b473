//! Four `C` bytes in a row panic. The count is kept without a branch (`u32::from(b == b'C')`
//! times the run so far, plus one), so coverage is the same for `C`, `CC` and `CCC`: only how
//! often `b == b'C'` comes out equal, and how close `run` comes to 4, tell them apart.

#![no_main]

use std::hint::black_box;

fn longest_run(data: &[u8]) {
    let mut run = 0u32;
    for &byte in data {
        run = (run + 1) * u32::from(black_box(byte) == b'C');
        if black_box(run) == 4 {
            panic!("planted: four in a row");
        }
    }
}

labelfuzz::fuzz_target!(|data: &[u8]| longest_run(data));
