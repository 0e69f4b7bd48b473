//! The core of labelfuzz, without LibAFL: what an execution shows and what is kept of it.
//!
//! - [`labels`]: every execution yields a set of labels, each SanitizerCoverage edge with its
//!   AFL hit-count bucket, and the crash label when it fails;
//! - [`order`]: the one order that defines "better" (shortlex: shorter, or equally long and
//!   lexicographically smaller);
//! - [`consider`]: run an input and, if it improves a label, shrink it at once, over an
//!   [`consider::Oracle`] that runs inputs (a plain function in [`consider::TableOracle`]);
//! - [`shrink`]: the shrinker, a named list of small passes proposing simpler candidates to a
//!   judge;
//! - [`table`]: the best-per-label table, for every label the single simplest input that shows
//!   it (an input leaves when it holds no label);
//! - [`schedule`]: which label to fuzz next (uniformly, or weighted by rarity and payoff);
//! - [`pick_cost`]: each entry's time per execution, so that slow entries are picked less;
//! - [`seen`]: the filter of inputs already run (a blocked bloom filter in two generations);
//! - [`stable_hash`]: FNV-1a, for what is written to disk and compared later.
//!
//! The engine (the `labelfuzz` crate) runs these over LibAFL's executors, observers and stages.

pub mod consider;
pub mod labels;
pub mod order;
pub mod pick_cost;
pub mod schedule;
pub mod seen;
pub mod shrink;
pub mod stable_hash;
pub mod table;

pub use labels::Label;
pub use order::{is_simpler, shortlex, Simplicity};
