//! What reads a labelfuzz run's output directory, apart from the engine that writes it:
//! `summary.json`'s schema ([`summary`]), the time series ([`series`]), `FUZZER report`
//! ([`html_report`], one HTML page) and `FUZZER coverage` ([`coverage`], llvm-cov's report of a
//! coverage build). None of it runs while fuzzing.

pub mod coverage;
pub mod error;
pub mod html_report;
pub mod series;
pub mod summary;

pub use error::ToolError;
