//! A target that does nothing: its executions per second measure the fuzzer's own overhead.

#![no_main]

labelfuzz::fuzz_target!(|data: &[u8]| {
    std::hint::black_box(data);
});
