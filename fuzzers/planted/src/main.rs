//! The default fuzzer: `cargo make fuzz-target` builds and runs this.

#![no_main]

labelfuzz::fuzz_target!(|data: &[u8]| {
    planted::run(data);
});
