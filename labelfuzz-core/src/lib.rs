//! The core of labelfuzz, without LibAFL: what an execution shows and what is kept of it.
//!
//! - [`labels`]: every execution yields a set of labels, each SanitizerCoverage edge with its
//!   AFL hit-count bucket, and the crash label when it fails;
//! - [`order`]: the one order that defines "better" (shortlex: shorter, or equally long and
//!   lexicographically smaller);
//! - [`shrink`]: the shrinker, a named list of small passes proposing simpler candidates to a
//!   judge.
//!
//! The engine (the `labelfuzz` crate) runs these over LibAFL's executors, observers and stages.

pub mod labels;
pub mod order;
pub mod shrink;

pub use labels::Label;
pub use order::{is_simpler, shortlex, Simplicity};
