//! Bugs behind keywords that Rust compares with `==`:
//! - `null`: the whole input equals a keyword → panics in `keyword`;
//! - `labelfuzz-magic-header`: a word of the input equals an entry of a keyword table (a
//!   comparison of two slices whose lengths the compiler does not know, so a call to `bcmp`
//!   that labelfuzz intercepts) → panics in `table`.
//!
//! Coverage sees neither keyword being matched: only the comparisons' operands lead to them.

#![no_main]

use std::hint::black_box;

/// Keywords the tokenizer knows; the last one is the planted bug.
const KEYWORDS: [&[u8]; 4] = [b"true", b"false", b"undefined", b"labelfuzz-magic-header"];

fn keyword(data: &[u8]) {
    if data == b"null" {
        panic!("planted: null keyword");
    }
}

fn table(data: &[u8]) {
    for word in data.split(|&b| b == b' ') {
        let known = black_box(&KEYWORDS).iter().position(|k| *k == word);
        if known == Some(KEYWORDS.len() - 1) {
            panic!("planted: magic header keyword");
        }
    }
}

labelfuzz::fuzz_target!(|data: &[u8]| {
    keyword(data);
    table(data);
});
