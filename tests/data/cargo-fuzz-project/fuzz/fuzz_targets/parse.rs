#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let ops = tiny_stack::parse(data);
    let _ = tiny_stack::execute(&ops);
});
