#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        tiny_stack::set_strict();
    },
    |data: &[u8]| {
        let _ = tiny_stack::check_header(data);
    }
);
