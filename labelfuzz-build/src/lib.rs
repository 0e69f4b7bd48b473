//! Building Rust fuzz targets for labelfuzz, as a library that `cargo labelfuzz`, the benchmark
//! driver and the tests share.
//!
//! - [`runtime`]: the engine built once as a static library with a C ABI, apart from the user's
//!   crates (their dependency graph resolves as if labelfuzz were not there).
//! - [`glue`]: `labelfuzz-sys`, the `libfuzzer-sys` stand-in and the rustc wrapper, written into
//!   the cache from sources this crate carries ([`sources`]), so an installed tool needs no
//!   checkout.
//! - [`wrapper`]: which crates get SanitizerCoverage (the wrapper's rule, unit-tested here).
//! - [`fuzz`]: one build of a fuzz crate; [`lockfile`]: the project's lock file kept as it was;
//!   [`dictionary`]: the automatic dictionary stored in each fuzz binary it built.

pub mod cache;
pub mod cargo_messages;
pub mod dictionary;
pub mod error;
pub mod fuzz;
pub mod glue;
pub mod lockfile;
pub mod runtime;
pub mod sources;
#[path = "wrapper.rs"]
pub mod wrapper;

pub use error::BuildError;
pub use fuzz::{build, BuildOptions, Built, Mode, Sanitizer};
pub use glue::Glue;
pub use runtime::Runtime;
