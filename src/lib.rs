//! # labelfuzz
//!
//! A coverage-guided fuzzer on LibAFL that keeps, for every *label* an execution can show (a
//! SanitizerCoverage edge with its AFL hit-count bucket, or a crash kind and site), the single
//! simplest input that shows it. Simpler means shortlex: shorter, or equally long and
//! lexicographically smaller.
//!
//! The loop starts from the empty input: pick a label at random, take its best input, try its
//! expansions (a random run appended, then each single byte appended) until one improves a
//! label, and shrink every improvement at once. The corpus stays small (one input per label at
//! most) and every crash label ends with a minimal reproducer.
//!
//! Modules, one concept each:
//! - [`order`]: the shortlex order ("simpler").
//! - [`labels`]: edge and crash labels.
//! - [`table`]: the best-per-label table (the corpus).
//! - [`crash`], [`signals`], [`crashes`]: catching panics and signals, and keeping one
//!   reproducer per crash label.
//! - [`feedback`], [`scheduler`], [`stages`]: the LibAFL components of the loop.
//! - [`mutators`], [`shrink`]: expansion candidates and shrink passes.
//! - [`seen`]: the filter of inputs already run.
//! - [`symbols`]: function names of the executable, for crash labels.
//! - [`memory`]: the RSS limit (`oom` crash labels).
//! - [`grammar`]: grammar inputs (choice sequences rendered by a depth-limited generator).
//! - [`output`], [`report`]: the output directory and `summary.json`.
//! - [`cli`], [`engine`]: the command line and the assembled fuzzer; [`cores`]: multi-core
//!   and multi-machine runs; [`interrupt`]: clean stops on Ctrl-C and SIGTERM.
//!
//! A Rust fuzz target is a binary crate whose `main.rs` is:
//!
//! ```ignore
//! labelfuzz::fuzz_target!(|data: &[u8]| {
//!     my_crate::parse(data);
//! });
//! ```

pub mod cli;
pub mod config;
pub mod consider;
pub mod crash;
pub mod crashes;
pub mod engine;
pub mod error;
pub mod feedback;
pub mod grammar;
pub mod interrupt;
pub mod labels;
pub mod launch;
pub mod memory;
pub mod mutators;
pub mod order;
pub mod output;
pub mod report;
pub mod scheduler;
pub mod seen;
pub mod shrink;
pub mod signals;
pub mod stages;
pub mod symbols;
pub mod table;

pub use cli::{main_for_target, Options};
pub use config::Config;
pub use error::LabelfuzzError;
pub use labels::EdgesObserver;
pub use labels::Label;
pub use launch::{fuzz, Outcome};
pub use order::{is_simpler, shortlex, Simplicity};
pub use report::Summary;
pub use table::LabelTable;

/// Version of labelfuzz and of the toolchain that built it (see `build.rs`).
pub const BUILD_INFO: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("LABELFUZZ_RUSTC_VERSION"),
    ")"
);

/// Turns a closure over `&[u8]` into a fuzzer's `main`.
///
/// ```ignore
/// labelfuzz::fuzz_target!(|data: &[u8]| {
///     if data.starts_with(b"boom") { panic!("found it") }
/// });
/// ```
#[macro_export]
macro_rules! fuzz_target {
    (|$data:ident: &[u8]| $body:expr) => {
        fn main() {
            $crate::main_for_target(|$data: &[u8]| {
                $body;
            })
        }
    };
}
