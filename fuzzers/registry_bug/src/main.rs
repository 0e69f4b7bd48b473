//! The bug is in a registry crate: chrono's deprecated `NaiveDate::from_ymd` panics inside
//! chrono on a day past the end of its month. Reaching it takes a string that chrono's own
//! parser accepts as a date, which the fuzzer can only work towards when chrono is instrumented.
//! The first byte `(` sends the rest to proc-macro2's lexer instead: proc-macro2 is also a
//! dependency of proc-macros, built twice (for the host, plain; for the target, instrumented).

#![no_main]

use std::str::FromStr;

use chrono::Datelike;

labelfuzz::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(tokens) = text.strip_prefix('(') {
        let _ = proc_macro2::TokenStream::from_str(tokens);
        return;
    }
    if let Ok(date) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        // The day after: chrono panics when it does not exist.
        #[allow(deprecated)]
        let _next = chrono::NaiveDate::from_ymd(date.year(), date.month(), date.day() + 1);
    }
});
