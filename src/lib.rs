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
//! Modules, one concept each, from the top of the call graph down:
//! - [`cli`]: the command line; [`launch`]: one process, or one per core and across machines;
//!   [`config`]: what a run is asked to do.
//! - [`engine`]: one fuzzing process assembled from LibAFL's parts; [`start`]: the inputs it
//!   starts from; [`guards`]: its process-wide hooks; [`interrupt`]: clean stops on Ctrl-C and SIGTERM.
//! - [`stages`] (one file per stage) and [`consider`]: run an input, shrink every improvement;
//!   [`gates`]: checksums and lengths the program recomputes, repaired in mutants and shrinks.
//! - [`feedback`], [`scheduler`]: the LibAFL components that judge and pick.
//! - [`table`], [`crashes`]: the best-per-label table (the corpus) and one reproducer per crash
//!   label.
//! - [`mutators`], [`shrink`]: expansion candidates and the shrinker (bytes and grammar
//!   choices alike).
//! - [`crash`], [`signals`], [`symbols`], [`memory`]: catching panics, signals and memory
//!   blow-ups, and naming their sites.
//! - [`labels`], [`order`]: edge and crash labels, and the shortlex order ("simpler");
//!   [`cmp_progress`], [`value_profile`]: comparison labels.
//! - [`seen`]: the filter of inputs already run.
//! - [`grammar`]: grammar inputs (choice sequences rendered by a depth-limited generator);
//!   [`mine`]: grammars mined from the target's own parser (`FUZZER mine`).
//! - [`output`], [`report`], [`stats`]: the output directory, `summary.json` and the time
//!   series (`stats.jsonl`, `plot_data`).
//!
//! Fuzz targets do not link this crate: `labelfuzz-harness` wraps it into the runtime, a static
//! library with libFuzzer's C interface, which C harnesses (through `labelfuzz-cc`) and Rust fuzz
//! crates (through `labelfuzz-sys`) link.

pub mod cli;
pub mod config;
pub mod consider;
pub mod crash;
pub mod crashes;
pub mod dictionary;
pub mod engine;
pub mod error;
pub mod feedback;
pub mod gates;
pub mod guards;
pub mod interrupt;
pub mod launch;
/// The labels of an execution (from `labelfuzz-core`).
pub use labelfuzz_core::labels;
/// The shortlex order (from `labelfuzz-core`).
pub use labelfuzz_core::order;
/// The shrinker and its passes (from `labelfuzz-core`).
pub use labelfuzz_core::shrink;
/// Grammars, choice sequences and the reducer (from `labelfuzz-grammar`).
pub use labelfuzz_grammar::grammar;
/// Failure patterns (from `labelfuzz-grammar`).
pub use labelfuzz_grammar::pattern;
/// Grammars specialised by patterns (from `labelfuzz-grammar`).
pub use labelfuzz_grammar::specialise;
pub mod learned_tokens;
pub mod long_run;
pub mod mine;
pub mod mutators;
pub mod output;
pub mod progress;
pub mod report;
pub mod scheduler;
pub mod seen;
pub mod shrink_budget;
pub mod side_labels;
pub mod stages;
pub mod start;
pub mod stats;
pub mod table;
pub mod value_profile;

/// The runtime's parts (from `labelfuzz-runtime`): crash sites, the memory watcher, what the
/// target does to its process, comparison progress, the fuzzer's own messages, the tokens the
/// compiler wrapper embedded.
pub use labelfuzz_runtime::{
    cmp_progress, console, embedded_dictionary, interference, memory, process, reject, say,
    signals, symbols,
};

pub use cli::{main_for_target, main_for_typed_target, Options};
pub use config::Config;
pub use error::LabelfuzzError;
pub use feedback::EdgesObserver;
pub use labels::Label;
pub use launch::{fuzz, Outcome};
pub use order::{is_simpler, shortlex, Simplicity};
pub use reject::reject_input;
pub use report::Summary;
pub use table::CorpusTable;

/// Version of labelfuzz and of the toolchain that built it (see `build.rs`).
pub const BUILD_INFO: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("LABELFUZZ_RUSTC_VERSION"),
    ")"
);

/// Held by the unit tests that start child processes: another test's child would be counted
/// as one's own.
#[cfg(test)]
pub(crate) static TEST_CHILDREN: std::sync::Mutex<()> = std::sync::Mutex::new(());
