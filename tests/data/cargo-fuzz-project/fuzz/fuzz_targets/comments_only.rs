#![no_main]

use libfuzzer_sys::{fuzz_target, Corpus};

// Only comment lines are worth keeping: everything else is rejected from the corpus.
fuzz_target!(|data: &[u8]| -> Corpus {
    if !tiny_stack::check_header(data) {
        return Corpus::Reject;
    }
    let _ = tiny_stack::execute(&tiny_stack::parse(&data[1..]));
    Corpus::Keep
});
